"""planner of examples/frameworks.flow: a LangGraph graph on a scripted LangChain chat model
(see examples/frameworks_agents.yaml). One module per framework: each agent imports only its own
framework, so a missing package is named with the agent that needs it."""

from __future__ import annotations

from typing import Any

# -- planner: a LangGraph graph (model node + tool node) ---------------------------------------
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


class ScriptedChatModel(FakeMessagesListChatModel):
    """A LangChain chat model that answers its `responses` in order (tool calls included)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self


def planner(tools: list, ctx: Any) -> Any:
    model = ScriptedChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "send_event", "id": "c1",
                                           "args": {"content": "disk full on db-1", "message_type": "thought"}}]),
        AIMessage(content="db-1 ran out of disk; assigning the fix.",
                  tool_calls=[{"name": "assign_fix", "id": "c2", "args": {"reason": "disk full"}}]),
        AIMessage(content="The review approved the fix; closing the incident."),
    ])
    direct = {t.name for t in tools if t.return_direct}  # routing tools end the graph's loop

    async def call_model(state: MessagesState) -> dict:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def after_model(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    def after_tools(state: MessagesState) -> str:
        return END if state["messages"][-1].name in direct else "model"

    g = StateGraph(MessagesState)
    g.add_node("model", call_model)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", after_model, ["tools", END])
    g.add_conditional_edges("tools", after_tools, ["model", END])
    return g.compile()
