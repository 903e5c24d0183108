"""The tools a model agent is offered in one turn, as model tool definitions (OpenAI or
Anthropic format), and their execution against the turn's `SessionTools` (docs/agents.md §2).

The set, in this order:
- the flow's **routing tools** this participant owns (spec order; optional string `reason`);
- `set_context(key, value)` and `delete_context(key)` — only in a `workflow` session (the
  only kind with context variables);
- `finish(reason)` — ends the session with that close reason (every kind);
- `handoff(to, reason)` — only where the session allows dynamic handoffs
  (`session_context.allows_dynamic_handoffs`); `to` is an enum of the other participants.

A session tool whose name is also a routing tool of the flow is left out (the flow's tool
wins). `session_tools=False` offers the routing tools alone.

Every problem with a call — an unknown tool, arguments that are not a JSON object, a missing,
unknown or mistyped argument, a participant that is not a choice, a second, different routing
decision in the same round — raises `ToolError`, which the model agents feed back to the model
as that call's result. Routing decisions are the routing tools, `handoff` and `finish`: one per
round (repeating the same one is harmless). `set_context` / `delete_context` never end a turn.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

from turnflow.runtime.agents.contract import AgentContext, SessionTools, ToolError, tool_arguments, tool_schema
from turnflow.runtime.agents.platform_tools import MODEL_EVENT_TYPES
from turnflow.runtime.errors import AdapterError

SESSION_TOOL_NAMES = ("set_context", "delete_context", "finish", "handoff")
#: the platform tools framework agents are offered besides (`platform=True`)
PLATFORM_TOOL_NAMES = ("send_message", "send_event")
ANY_JSON = {"description": "any JSON value (string, number, boolean, null, array or object)"}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _definition(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": description, "parameters": parameters}


def to_format(d: dict[str, Any], fmt: str) -> dict[str, Any]:
    if fmt == "openai":
        return {"type": "function", "function": {"name": d["name"], "description": d["description"],
                                                 "parameters": d["parameters"]}}
    if fmt == "anthropic":
        return {"name": d["name"], "description": d["description"], "input_schema": d["parameters"]}
    raise AdapterError(f"unknown tool schema format {fmt!r} (known: openai, anthropic)")


class ModelTools:
    """One turn's model tool set over `tools` (a fresh `SessionTools`). `ctx` is the agent's
    handshake context (None when unknown: then only `finish` is offered besides routing)."""

    def __init__(self, tools: SessionTools, ctx: Optional[AgentContext], session_tools: bool = True,
                 platform: bool = False) -> None:
        self.tools = tools
        self.ctx = ctx
        self.routing = [dict(t) for t in tools.routing_tools]
        routing_names = {t["name"] for t in self.routing}
        self.handoff_choices: list[str] = []
        defs: list[dict[str, Any]] = []
        if session_tools:
            if ctx is not None and ctx.kind == "workflow":
                keys = [k for k, _ in ctx.context_vars]
                known = f" Variables the flow uses: {', '.join(keys)}." if keys else ""
                defs.append(_definition(
                    "set_context", "Set a shared context variable of the session; the flow's rules read "
                    "context variables to decide who speaks next and when the session ends." + known
                    + " Takes effect when your turn ends; does not end your turn.",
                    _obj({"key": {"type": "string", "description": "the variable's name"}, "value": ANY_JSON},
                         ["key", "value"])))
                defs.append(_definition(
                    "delete_context", "Remove a shared context variable of the session. Does not end your turn.",
                    _obj({"key": {"type": "string", "description": "the variable's name"}}, ["key"])))
            defs.append(_definition(
                "finish", "End the whole session now, with a short close reason (for example `resolved`). "
                "Your reply text, if any, is your last message. Ends your turn.",
                _obj({"reason": {"type": "string", "description": "the close reason"}}, ["reason"])))
            if ctx is not None and ctx.dynamic_handoffs:
                self.handoff_choices = [p for p in ctx.participants if p != tools.agent_id]
            if self.handoff_choices:
                defs.append(_definition(
                    "handoff", "Give the next turn to another participant, instead of the flow's own routing. "
                    "Ends your turn.",
                    _obj({"to": {"type": "string", "enum": list(self.handoff_choices),
                                 "description": "the participant who speaks next"},
                          "reason": {"type": "string", "description": "why (shown to the others)"}}, ["to"])))
        if platform:
            defs += platform_definitions(tools)
        self.session_defs = [d for d in defs if d["name"] not in routing_names]
        self.names = [t["name"] for t in self.routing] + [d["name"] for d in self.session_defs]
        self._session = {d["name"]: d for d in self.session_defs}
        self.route: Optional[str] = None  # the routing decision made this round, as shown in errors

    # -- definitions ----------------------------------------------------------------------------
    def schemas(self, fmt: str = "openai") -> list[dict[str, Any]]:
        return [tool_schema(t, fmt) for t in self.routing] + [to_format(d, fmt) for d in self.session_defs]

    @property
    def routing_names(self) -> list[str]:
        """The tools that end a turn by routing it: the flow's, then handoff and finish when offered."""
        return [t["name"] for t in self.routing] + [n for n in ("handoff", "finish") if n in self._session]

    @property
    def context_names(self) -> list[str]:
        return [n for n in ("set_context", "delete_context") if n in self._session]

    # -- execution ------------------------------------------------------------------------------
    def call(self, name: Any, args: Union[dict[str, Any], str, None] = None) -> str:
        """Execute one tool call; returns the text the model gets back, raises `ToolError`."""
        if not isinstance(name, str) or name not in self.names:
            offered = ", ".join(self.names) or "none"
            raise ToolError(f"{self.tools.agent_id} has no tool {name!r} (its tools: {offered})")
        if name not in self._session:
            self._check_route(name, name)
            result = self.tools.execute_tool_call(name, args)
            self.route = name
            return result
        a = self._arguments(name, args)
        try:
            if name == "set_context":
                self.tools.set_context(a["key"], a["value"])
                return f"context {a['key']} = {json.dumps(a['value'])} (applied when your turn ends)"
            if name == "delete_context":
                self.tools.delete_context(a["key"])
                return f"context {a['key']} deleted (applied when your turn ends)"
            if name == "send_message":
                self.tools.send_message(a["content"], a.get("mentions"))
                return "message added to your turn's reply"
            if name == "send_event":
                self.tools.send_event(a["content"], a.get("message_type") or "thought", a.get("metadata"))
                return f"{a.get('message_type') or 'thought'} event recorded"
            if name == "finish":
                self._check_route(name, "finish")
                self.tools.finish(a["reason"])
                self.route = "finish"
                return f"the session finishes with reason {a['reason']!r} when your turn ends"
            to = a["to"]
            if to not in self.handoff_choices:
                raise ToolError(f"handoff: {to!r} is not a participant you can hand off to "
                                f"(choose one of: {', '.join(self.handoff_choices)})")
            self._check_route(name, f"handoff to {to}")
            self.tools.handoff(to, a.get("reason") or "")
            self.route = f"handoff to {to}"
            return f"handed off to {to}"
        except ToolError:
            raise
        except AdapterError as exc:  # a value SessionTools refuses: the model may correct it
            raise ToolError(f"{name}: {exc}") from None

    def _check_route(self, name: str, label: str) -> None:
        if self.route is not None and self.route != label:
            raise ToolError(f"{name}: this round is already routed ({self.route}); one routing decision per round")

    def _arguments(self, name: str, args: Union[dict[str, Any], str, None]) -> dict[str, Any]:
        args = tool_arguments(name, args)
        params = self._session[name]["parameters"]
        props, required = params["properties"], params["required"]
        extra = sorted(str(k) for k in args if k not in props)
        if extra:
            raise ToolError(f"{name}: unknown argument {extra[0]!r} (it takes {', '.join(props)})")
        for k in required:
            if k not in args:
                raise ToolError(f"{name}: missing argument {k!r} (it takes {', '.join(props)}; "
                                f"required: {', '.join(required)})")
        for k, v in args.items():
            if props[k].get("type") == "string" and not isinstance(v, str):
                raise ToolError(f"{name}: `{k}` must be a string, got {json.dumps(v)}"[:300])
        for k in ("key", "reason", "to"):
            if k in required and not args[k]:
                raise ToolError(f"{name}: `{k}` must not be empty")
        return args


def platform_definitions(tools: SessionTools) -> list[dict[str, Any]]:
    """`send_message(content, mentions)` and `send_event(content, message_type, metadata)`."""
    others = [p for p in tools.participants if p != tools.agent_id]
    return [
        _definition("send_message", "Add a message to your turn's reply (several calls are joined by new lines); "
                    "`mentions` names the participants it addresses. Does not end your turn.",
                    _obj({"content": {"type": "string", "description": "the message text"},
                          "mentions": {"type": "array", "items": {"type": "string", "enum": others or [tools.agent_id]},
                                       "description": "participants addressed"}}, ["content"])),
        _definition("send_event", "Record an event beside the conversation (not a message to the others): "
                    "`thought` (your reasoning), `task` (a task you start), `error`, `progress`. Does not end your turn.",
                    _obj({"content": {"type": "string", "description": "what happened"},
                          "message_type": {"type": "string", "enum": list(MODEL_EVENT_TYPES),
                                           "description": "the kind of event (default thought)"},
                          "metadata": {"type": "object", "description": "extra facts about the event"}}, ["content"])),
    ]


def is_empty(tools: SessionTools) -> bool:
    """The round so far would post nothing: no text, no routing, no context change."""
    r = tools.round()
    return not r["body"] and r["kind"] == "text" and not r["tool"] and not r["set"] and not r["delete"]
