"""The three participants of examples/frameworks.flow, each in its own framework, each on a
scripted model (no network, no API key): swap the scripted model for a real one (a LangChain
chat model, an AG2 `OpenAIConfig`, an AutoGen `OpenAIChatCompletionClient`) and nothing else
changes. Each is a factory `(tools, ctx)`: turnflow calls it once per session with its session
tools (routing tools of the flow, set_context, delete_context, finish, send_message,
send_event) as the framework's own tool objects, and the session's `AgentContext`."""

from __future__ import annotations

from typing import Any

# -- planner: LangGraph's prebuilt ReAct agent with a checkpointer ------------------------------
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import MemorySaver
from langgraph.prebuilt import create_react_agent


class ScriptedChatModel(FakeMessagesListChatModel):
    """A LangChain chat model that answers its `responses` in order (tool calls included). An
    answer containing `{thought}` gets the thought this model sent with `send_event` earlier in
    the thread: it finds it only if the graph remembers its own earlier turns (the session's
    transcript holds messages, not tool calls)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        answer = result.generations[0].message
        if isinstance(answer.content, str) and "{thought}" in answer.content:
            thoughts = [c["args"].get("content") for m in messages for c in getattr(m, "tool_calls", None) or []
                        if c["name"] == "send_event"]
            answer.content = answer.content.replace("{thought}", thoughts[0] if thoughts else "nothing remembered")
        return result


MEMORY = MemorySaver()  # one checkpointer for every session: a thread per session and participant


def planner(tools: list, ctx: Any) -> Any:
    model = ScriptedChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "send_event", "id": "c1",
                                           "args": {"content": "disk full on db-1", "message_type": "thought"}}]),
        AIMessage(content="db-1 ran out of disk; assigning the fix.",
                  tool_calls=[{"name": "assign_fix", "id": "c2", "args": {"reason": "disk full"}}]),
        AIMessage(content="The review approved the fix ({thought}); closing the incident."),
    ])
    # the integration contract's Pattern 1, as written: routing tools are `return_direct`, so
    # calling one ends the agent's loop; turnflow gives the graph a `thread_id` per session and
    # participant, so the checkpointer keeps its memory from one of its turns to the next
    return create_react_agent(model, tools, checkpointer=MEMORY)


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
