"""`kind: autogen`: an AutoGen AgentChat agent (autogen-agentchat 0.7: `AssistantAgent` or any
`BaseChatAgent`) takes the participant's turn (the `autogen` extra; docs/agents.md §2).

`ref: "module:attribute"` names the agent or a factory `(tools, ctx) -> agent` that gets
turnflow's session tools as AutoGen `FunctionTool`s. A prebuilt agent is reset
(`on_reset`) when a session starts.

A turn: `agent.on_messages_stream(new_messages, CancellationToken())`. `ToolCallRequestEvent`s
and `ToolCallExecutionEvent`s become `env_action` and `tool_response` / `error` telemetry,
`ThoughtEvent`s `thought` events; a tool of the agent's own named like a routing tool routes
the round. The final `Response`: a **`HandoffMessage`** is the routing decision — the routing
tool of the flow the handoff's tool call names, else this participant's routing tool whose
target is the handoff's `target`, else a dynamic handoff to that participant; any other chat
message's text is the round's body.
"""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.contract import AgentContext, SessionTools, ToolError
from turnflow.runtime.agents.framework import FrameworkAgent, ToolSlot, emit_tool, keyword_function
from turnflow.runtime.agents.history import raw_history
from turnflow.frameworks.autogen.history import AutoGenHistory, new_messages


class AutoGenAgent(FrameworkAgent):
    framework = "autogen"
    what = "an AutoGen AgentChat agent"

    def __init__(self, agent_id: str, target: Any, ref: str = "") -> None:
        super().__init__(agent_id, target, ref)
        self.delivered: set[str] = set()  # sessions whose first delivery happened
        self.last: dict[str, Any] = {}  # session -> the last message delivered to the agent

    def accepts(self, obj: Any) -> bool:
        from autogen_agentchat.base import ChatAgent

        return isinstance(obj, ChatAgent)

    async def reset(self, obj: Any) -> None:
        from autogen_core import CancellationToken

        await obj.on_reset(CancellationToken())

    def make_tools(self, specs: list[dict[str, Any]], slot: ToolSlot) -> list[Any]:
        from autogen_core.tools import FunctionTool

        out = []
        for d in specs:
            def call(_name: str = d["name"], **kwargs: Any) -> str:
                return slot.call(_name, kwargs)
            out.append(FunctionTool(keyword_function(call, d["parameters"]), description=d["description"] or d["name"], name=d["name"],
                                    strict=False))
        return out

    async def run(self, obj: Any, msg: list[dict[str, Any]], tools: SessionTools, slot: ToolSlot, native: list[Any],
                  ctx: AgentContext, prompt: str) -> str:
        from autogen_agentchat.base import Response
        from autogen_agentchat.messages import HandoffMessage, ThoughtEvent, ToolCallExecutionEvent, ToolCallRequestEvent
        from autogen_core import CancellationToken

        sid = ctx.session_id
        bootstrap = sid not in self.delivered
        new = new_messages(msg, self.last.get(sid), bootstrap)
        items = list(msg)
        if items:
            self.last[sid] = items[-1]
        self.delivered.add(sid)
        converter = self.history_converter or AutoGenHistory(self.agent_id, prompt, bootstrap)
        messages = converter.convert(raw_history(new, self.agent_id))
        arguments: dict[str, Any] = {}  # call id -> its arguments
        final: Any = None
        async for item in obj.on_messages_stream(messages, CancellationToken()):
            if isinstance(item, ToolCallRequestEvent):
                for call in item.content:
                    emit_tool(tools, self.framework, "start", call.name, call.arguments)
                    arguments[call.id] = call.arguments
            elif isinstance(item, ToolCallExecutionEvent):
                for res in item.content:
                    emit_tool(tools, self.framework, "error" if res.is_error else "end", res.name, str(res.content)[:1000])
                    if not res.is_error:  # after it ran: turnflow's own routing tool has routed already
                        slot.observed(res.name, arguments.get(res.call_id))
            elif isinstance(item, ThoughtEvent):
                tools.emit_event({"event": "thought", "payload": {"content": item.content, "framework": self.framework}})
            elif isinstance(item, Response):
                final = item.chat_message
        if isinstance(final, HandoffMessage):
            self._route(final, tools, slot)
        text = getattr(final, "content", None) if final is not None else None
        if isinstance(text, str):
            return text
        return final.to_text() if final is not None and callable(getattr(final, "to_text", None)) else ""

    def _route(self, msg: Any, tools: SessionTools, slot: ToolSlot) -> None:
        ts = slot.toolset
        if ts is None or ts.route is not None:
            return
        routing = ts.routing
        names = [t["name"] for t in routing]
        called = [n for n in _called(msg) if n in names]
        by_target = [t["name"] for t in routing if t.get("target") == msg.target]
        try:
            if called:
                ts.call(called[-1], None)
            elif msg.target in names:
                ts.call(msg.target, None)
            elif by_target:
                ts.call(by_target[0], None)
            else:
                tools.handoff(msg.target)
                ts.route = f"handoff to {msg.target}"
        except ToolError as exc:
            raise ToolError(f"agent {self.agent_id!r}: AutoGen handed off to {msg.target!r}, which this session "
                            f"cannot route to: {exc}") from None


def _called(msg: Any) -> list[str]:
    """The tool names called in a HandoffMessage's `context` (its assistant messages' function calls)."""
    out = []
    for m in getattr(msg, "context", None) or []:
        content = getattr(m, "content", None)
        for c in content if isinstance(content, list) else []:
            name = getattr(c, "name", None)
            if isinstance(name, str) and hasattr(c, "arguments"):
                out.append(name)
    return out
