"""`kind: langgraph`: a compiled LangGraph graph takes the participant's turn (`pip install
'turnflow[langgraph]'`; docs/agents.md §2).

`ref: "module:attribute"` names a compiled graph (anything with `astream_events`, whose state
has `messages`) or a factory `(tools, ctx) -> graph` that gets turnflow's session tools as
LangChain `StructuredTool`s (routing tools are `return_direct`: calling one ends the graph's
loop). A prebuilt graph gets the same tools in `config["configurable"]["turnflow_tools"]`.

A turn: `graph.astream_events({"messages": history}, version="v2")`. Tool starts, ends and
errors become `env_action`, `tool_response` and `error` telemetry; a tool of the graph's own
named like a routing tool routes the round; the AI messages the graph added this turn are the
round's body.
"""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.base import AgentContext, SessionTools
from turnflow.runtime.agents.framework import FrameworkAgent, ToolSlot, emit_tool
from turnflow.runtime.agents.history_langchain import text_of, to_langchain


TAG = "turnflow"  # on turnflow's own tools: their events are told from the graph's own tools by it


class LangGraphAgent(FrameworkAgent):
    framework = "langgraph"
    what = "a compiled LangGraph graph"

    def accepts(self, obj: Any) -> bool:
        return callable(getattr(obj, "astream_events", None)) and not isinstance(obj, type)

    def make_tools(self, specs: list[dict[str, Any]], slot: ToolSlot) -> list[Any]:
        from langchain_core.tools import StructuredTool

        out = []
        for d in specs:
            def call(_name: str = d["name"], **kwargs: Any) -> str:
                return slot.call(_name, kwargs)
            out.append(StructuredTool.from_function(call, name=d["name"], description=d["description"] or d["name"],
                                                    args_schema=d["parameters"], return_direct=d["routes"],
                                                    tags=[TAG]))
        return out

    async def run(self, obj: Any, msg: list[dict[str, Any]], tools: SessionTools, slot: ToolSlot, native: list[Any],
                  ctx: AgentContext, prompt: str) -> str:
        history = to_langchain(msg, self.agent_id, prompt)
        config = {"configurable": {"turnflow_tools": native, "turnflow_context": ctx},
                  "run_name": f"turnflow:{self.agent_id}"}
        output: Any = None
        async for ev in obj.astream_events({"messages": history}, config=config, version="v2"):
            kind = ev.get("event")
            data = ev.get("data") or {}
            if kind == "on_tool_start":
                emit_tool(tools, self.framework, "start", ev.get("name"), data.get("input"))
                if TAG not in (ev.get("tags") or ()):  # the graph's own tool named like a routing tool routes too
                    slot.observed(ev.get("name"), data.get("input"))
            elif kind == "on_tool_end":
                emit_tool(tools, self.framework, "end", ev.get("name"), text_of(data.get("output")) or
                          str(data.get("output"))[:1000])
            elif kind == "on_tool_error":
                emit_tool(tools, self.framework, "error", ev.get("name"), str(data.get("error"))[:1000])
            elif kind == "on_chain_end" and not ev.get("parent_ids"):
                output = data.get("output")
        messages = output.get("messages") if isinstance(output, dict) else None
        if not isinstance(messages, list):
            return ""
        from langchain_core.messages import AIMessage

        new = messages[len(history):] if len(messages) >= len(history) else messages
        return "\n".join(t for t in (text_of(m) for m in new if isinstance(m, AIMessage)) if t)

