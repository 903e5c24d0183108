"""`kind: langgraph`: a compiled LangGraph graph takes the participant's turn (`pip install
'turnflow[langgraph]'`; docs/agents.md §2).

`ref: "module:attribute"` names a compiled graph (anything with `astream_events`, whose state
has `messages`) or a factory `(tools, ctx) -> graph` that gets turnflow's session tools as
LangChain `StructuredTool`s (routing tools are `return_direct`: calling one ends the graph's
loop). A prebuilt graph gets the same tools in `config["configurable"]["turnflow_tools"]`.

A turn: `graph.astream_events({"messages": history}, config, version="v2")`, where `config` has a
`thread_id` per session and participant (`thread_id`): a graph compiled with a checkpointer
(`create_react_agent(llm, tools, checkpointer=MemorySaver())`) keeps its own memory across the
participant's turns and a continued session, and is then given only what is new since its own
last message. Tool starts, ends and
errors become `env_action`, `tool_response` and `error` telemetry; a tool of the graph's own
named like a routing tool routes the round; the AI messages the graph added this turn are the
round's body.
"""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.contract import AgentContext, SessionTools
from turnflow.runtime.agents.framework import FrameworkAgent, ToolSlot, emit_tool
from turnflow.runtime.agents.history import raw_history
from turnflow.frameworks.langgraph.history import LangChainHistory, text_of


TAG = "turnflow"  # on turnflow's own tools: their events are told from the graph's own tools by it


def thread_id(session_id: str, agent_id: str) -> str:
    """The graph's `thread_id`: one per session and participant, the same when the session is
    continued (a `turnflow run --tasks` rerun or another worker continuing it from its log), so a
    checkpointer keeps the graph's memory across its turns."""
    return f"turnflow:{session_id}:{agent_id}"


async def remembered(graph: Any, config: dict[str, Any]) -> int:
    """How many messages the graph's checkpointer holds for this thread (0 without a checkpointer)."""
    if getattr(graph, "checkpointer", None) in (None, False) or not callable(getattr(graph, "aget_state", None)):
        return 0
    try:
        state = await graph.aget_state(config)
    except Exception:  # a checkpointer that cannot answer: the turn gives the whole history
        return 0
    values = getattr(state, "values", None)
    messages = values.get("messages") if isinstance(values, dict) else None
    return len(messages) if isinstance(messages, list) else 0


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
        config = {"configurable": {"turnflow_tools": native, "turnflow_context": ctx,
                                   "thread_id": thread_id(ctx.session_id, self.agent_id)},
                  "run_name": f"turnflow:{self.agent_id}"}
        prior = await remembered(obj, config)
        converter = self.history_converter or LangChainHistory(self.agent_id, prompt, continuing=prior > 0)
        history = converter.convert(raw_history(msg, self.agent_id))
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

        seen = prior + len(history)
        new = messages[seen:] if len(messages) >= seen else messages
        return "\n".join(t for t in (text_of(m) for m in new if isinstance(m, AIMessage)) if t)

