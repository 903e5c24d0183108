"""The three participants of examples/frameworks.flow, each in its own framework, each on a
scripted model (no network, no API key): swap the scripted model for a real one (a LangChain
chat model, an AG2 `OpenAIConfig`, an AutoGen `OpenAIChatCompletionClient`) and nothing else
changes. Each is a factory `(tools, ctx)`: turnflow calls it once per session with its session
tools (routing tools of the flow, set_context, delete_context, finish, send_message,
send_event) as the framework's own tool objects, and the session's `AgentContext`."""

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


# -- fixer: an AG2 1.2.1 agent -----------------------------------------------------------------
from ag2 import Agent  # noqa: E402
from ag2.events import ToolCallEvent  # noqa: E402
from ag2.testing import TestConfig  # noqa: E402


def fixer(tools: list, ctx: Any) -> Agent:
    model = TestConfig(
        ToolCallEvent("set_context", arguments='{"key": "patched", "value": true}'),
        ToolCallEvent("request_review", arguments='{"reason": "patch applied"}'),
        "Freed 40 GB on db-1 and rotated its logs.",
    )
    return Agent("fixer", "You fix production incidents.", config=model, tools=tools)


# -- reviewer: an AutoGen AgentChat AssistantAgent ---------------------------------------------
from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.base import Handoff  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
         "structured_output": False}


def reviewer(tools: list, ctx: Any) -> AssistantAgent:
    client = ReplayChatCompletionClient([
        CreateResult(finish_reason="function_calls", usage=_USAGE, cached=False, thought="The patch looks right.",
                     content=[FunctionCall(id="r1", name="set_context", arguments='{"key": "approved", "value": true}')]),
        CreateResult(finish_reason="function_calls", usage=_USAGE, cached=False,
                     content=[FunctionCall(id="r2", name="report_back", arguments="{}")]),
    ], model_info=_INFO)
    session = [t for t in tools if t.name in ("set_context", "send_event")]  # report_back is a Handoff below
    return AssistantAgent("reviewer", model_client=client, tools=session, max_tool_iterations=4,
                          handoffs=[Handoff(target="planner", name="report_back", message="Approved.")],
                          system_message="You review fixes.")
