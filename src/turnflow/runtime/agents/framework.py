"""What the framework participants (`kind: langgraph | ag2 | autogen`, docs/agents.md §2) share.

A framework agent wraps an object of another framework — a compiled LangGraph graph, an
`ag2.Agent`, an AutoGen AgentChat agent — or a *factory* that builds one per session:
`factory(tools, ctx)` gets turnflow's session tools as that framework's tool objects and the
handshake `AgentContext`, and returns the framework object.

The framework runs its own loop (pattern 1: it executes the tools itself), so the handshake is
`control_loop: self, supports_stepwise: true, telemetry_stream: true`. One turn:
1. the transcript becomes the framework's message types (one `history_*` module per framework);
2. the framework runs; every tool call goes to the turn's `ModelTools` (routing tools,
   `set_context`, `delete_context`, `finish`, `handoff` where allowed, `send_message`,
   `send_event`); a bad call is answered to the model as `error: ...` and changes nothing;
3. a tool call the framework made to a tool of its own whose name is a routing tool of the
   flow routes the round too (as AG2 routes on `tool_called`);
4. the framework's final text is the round's body. Tool starts, ends and errors are stored as
   `env_action`, `tool_response` and `error` telemetry events.
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools, ToolError
from turnflow.runtime.agents.model_prompt import system_prompt
from turnflow.runtime.agents.model_tools import ModelTools, is_empty
from turnflow.runtime.errors import AdapterError, brief


class ToolSlot:
    """The session tools of one session, as the framework's tool objects call them: each call
    is executed against the turn in progress (`begin` / `end` bracket a turn)."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.toolset: Optional[ModelTools] = None

    def call(self, name: str, args: Any) -> str:
        """Execute one tool call; problems come back as `error: ...` (the model may correct them)."""
        if self.toolset is None:
            return f"error: {name} was called outside {self.agent_id}'s turn"
        try:
            return self.toolset.call(name, args)
        except ToolError as exc:
            return f"error: {exc}"

    def observed(self, name: Any, args: Any) -> None:
        """The framework called a tool of its own: one named like a routing tool routes the round
        (unless the round is routed already)."""
        ts = self.toolset
        if ts is None or not isinstance(name, str) or ts.route is not None:
            return
        if name in [t["name"] for t in ts.routing]:
            try:
                ts.call(name, args if isinstance(args, (dict, str)) else None)
            except ToolError as exc:
                ts.tools.emit_event({"event": "error", "reason": f"routing tool {name}: {exc}",
                                     "payload": {"tool": name}})


def tool_specs(agent_id: str, ctx: AgentContext) -> list[dict[str, Any]]:
    """The session tool definitions `{name, description, parameters, routes}` a framework agent
    is offered in a session (the same for every turn: they depend on the session, not the turn).
    `routes`: calling it decides the round's routing (the flow's routing tools, handoff, finish)."""
    probe = SessionTools(agent_id, ctx.participants, tuple(ctx.tools), session_id=ctx.session_id)
    ts = ModelTools(probe, ctx, True, platform=True)
    routing = [{"name": t["name"], "description": t.get("description") or "",
                "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}, "required": []},
                "routes": True} for t in ts.routing]
    return routing + [{**d, "routes": d["name"] in ("handoff", "finish")} for d in ts.session_defs]


class FrameworkAgent:
    """The contract over a framework object; subclasses implement `make_tools` (definitions →
    framework tool objects), `accepts` (is this object the framework's agent/graph) and `run`."""

    framework = "framework"
    what = "an agent"

    def __init__(self, agent_id: str, target: Any, ref: str = "") -> None:
        self.agent_id = agent_id
        self.target = target
        self.ref = ref or repr(target)[:80]
        self.sessions: dict[str, tuple[AgentContext, ToolSlot, Any, list[Any]]] = {}  # ctx, slot, object, its tools
        self.history_converter: Any = None  # the agents file's `history_converter` (None: the framework's own)

    # -- to implement ---------------------------------------------------------------------------
    def accepts(self, obj: Any) -> bool:
        raise NotImplementedError

    def make_tools(self, specs: list[dict[str, Any]], slot: ToolSlot) -> list[Any]:
        raise NotImplementedError

    async def run(self, obj: Any, msg: list[dict[str, Any]], tools: SessionTools, slot: ToolSlot, native: list[Any],
                  ctx: AgentContext, prompt: str) -> str:
        """Run the framework for one turn; returns its final text."""
        raise NotImplementedError

    async def reset(self, obj: Any) -> None:
        """Called when a prebuilt object (not a factory's) starts a new session."""

    # -- the contract ---------------------------------------------------------------------------
    async def open_session(self, ctx: AgentContext, emit: Callable[[dict[str, Any]], Awaitable[bool]]) -> Capabilities:
        slot = ToolSlot(self.agent_id)
        native = self.make_tools(tool_specs(self.agent_id, ctx), slot)
        obj = self.target
        if not self.accepts(obj):
            if not callable(obj):
                raise AdapterError(f"agent {self.agent_id!r}: {self.ref} is neither {self.what} nor a factory "
                                   "function (tools, ctx) returning one")
            obj = obj(native, ctx)
            if inspect.isawaitable(obj):
                obj = await obj
            if not self.accepts(obj):
                raise AdapterError(f"agent {self.agent_id!r}: the factory {self.ref} returned {brief(type(obj).__name__)}, "
                                   f"not {self.what}")
        else:
            await self.reset(obj)
        self.sessions[ctx.session_id] = (ctx, slot, obj, native)
        return Capabilities(control_loop="self", supports_stepwise=True, telemetry_stream=True)

    async def on_message(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        entry = self.sessions.get(tools.session_id or "")
        if entry is None and len(self.sessions) == 1:
            entry = next(iter(self.sessions.values()))
        if entry is None:
            raise AdapterError(f"agent {self.agent_id!r}: on_message before open_session")
        ctx, slot, obj, native = entry
        toolset = ModelTools(tools, ctx, True, platform=True)
        slot.toolset = toolset
        try:
            prompt = system_prompt(self.agent_id, None, ctx, toolset, tools.get_participants())
            text = await self.run(obj, list(msg), tools, slot, native, ctx, prompt)
        finally:
            slot.toolset = None
        if text:
            tools.send_message(text)
        if is_empty(tools):
            raise AdapterError(f"agent {self.agent_id!r}: the {self.framework} {self.what.split(' ', 1)[-1]} "
                               "answered neither text nor a tool call")

    async def close_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)


def emit_tool(tools: SessionTools, framework: str, phase: str, name: Any, data: Any) -> None:
    """A tool start (`env_action`), end (`tool_response`) or error (`error`) as telemetry."""
    event = {"start": "env_action", "end": "tool_response", "error": "error"}[phase]
    payload: dict[str, Any] = {"framework": framework, "tool": str(name), "phase": phase}
    key = {"start": "input", "end": "output", "error": "error"}[phase]
    payload[key] = data if isinstance(data, (str, int, float, bool, type(None))) else _jsonable(data)
    ev: dict[str, Any] = {"event": event, "payload": payload}
    if phase == "error":
        ev["reason"] = f"tool {name} failed: {data}"[:500]
    tools.emit_event(ev)


def _jsonable(v: Any) -> Any:
    import json

    try:
        return json.loads(json.dumps(v, default=str))
    except (TypeError, ValueError):
        return str(v)[:1000]


_TYPES: dict[str, type] = {"string": str, "boolean": bool, "integer": int, "number": float, "array": list,
                           "object": dict}


def keyword_function(fn: Callable[..., Any], parameters: dict[str, Any]) -> Callable[..., str]:
    """`fn(**kwargs)` with a signature and annotations the frameworks read (AG2 and AutoGen build
    their tool schemas and argument parsing from them): one keyword parameter per property of the
    JSON schema `parameters`, typed from its `type` (anything else: `Any`), required ones without
    a default (the others default to None: left out, or None, they are not passed on)."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    params, notes = [], {}
    for name in sorted(props, key=lambda n: n not in required):
        typ = props[name].get("type") if isinstance(props[name], dict) else None
        hint: Any = _TYPES.get(typ, Any) if isinstance(typ, str) else Any
        if name not in required and hint is not Any:
            hint = Optional[hint]
        notes[name] = hint
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                        default=inspect.Parameter.empty if name in required else None))

    def call(**kwargs: Any) -> str:
        return str(fn(**{k: v for k, v in kwargs.items() if v is not None or k in required}))
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = {**notes, "return": str}
    return call
