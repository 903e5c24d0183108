"""planner of examples/frameworks.flow: LangGraph's prebuilt ReAct agent with a checkpointer, on a
scripted LangChain chat model (see examples/frameworks_agents.yaml). One module per framework: each
agent imports only its own framework, so a missing package is named with the agent that needs it."""

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
