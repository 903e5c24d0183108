"""Pluggable history and checkpointed graphs (docs/contracts.md §4), against the real runner and
hub: raw history items with the contract's fields (`tools.history`), the `HistoryConverter`
protocol with the three built-in converters, the agents file's `history_converter:` key, a
LangGraph ReAct agent compiled with `MemorySaver` (the contract's Pattern 1 verbatim) keeping its
memory across its turns and a continued session, and an AutoGen agent whose own last message
scrolled out of a windowed view."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

import pytest

from runtime_helpers import fixture_spec, new_hub, run
from turnflow.cli import main
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent
from turnflow.runtime.agents.history import HistoryConverter, raw_history
from turnflow.runtime.runner import run_session

SPEC = fixture_spec("support.json")  # workflow: user, triage, billing, tech
PANEL = {"kind": "discussion", "name": "panel",
         "participants": [{"agent_id": "planner", "role": "initiator"}, {"agent_id": "b", "role": "participant"}]}


def support(**kw):
    base = {"triage": ScriptedAgent("triage", [{"say": "to billing", "tool": "transfer_to_billing"}]),
            "billing": ScriptedAgent("billing", [{"say": "done", "set": {"resolved": True}}]),
            "user": ScriptedAgent("user", [{"say": "thanks"}, {"say": "bye", "finish": "done"}]),
            "tech": ScriptedAgent("tech", [{"say": "x"}])}
    base.update(kw)
    return base


# -- 7. raw history and HistoryConverter ---------------------------------------------------------

def test_a_custom_agent_gets_raw_history_with_the_contracts_fields():
    seen = {}

    def billing(msg, tools):
        seen["history"] = tools.history
        seen["msg"] = list(msg)
        tools.send_message("Refunded.")
        tools.set_context("resolved", True)

    async def go():
        hub = await new_hub()
        return await run_session(hub, SPEC, support(billing=FunctionAgent(billing, "billing")), "refund please")
    assert run(go()).close_reason == "resolved"
    h = seen["history"]
    assert [(m["role"], m["sender_name"], m["sender_type"], m["message_type"]) for m in h] == [
        ("user", "<task>", "User", "text"), ("user", "triage", "Agent", "text")]
    assert h[0]["content"] == "refund please"
    assert [{"sender": m["sender"], "text": m["text"]} for m in h] == seen["msg"]  # turnflow's own keys stay


def test_the_built_in_converters_are_history_converters():
    pytest.importorskip("langgraph")
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("ag2")
    from turnflow.frameworks.ag2.history import AG2History
    from turnflow.frameworks.autogen.history import AutoGenHistory
    from turnflow.frameworks.langgraph.history import LangChainHistory

    raw = raw_history([{"sender": "<task>", "text": "go"}, {"sender": "me", "text": "on it"},
                       {"sender": "you", "text": "done?"}], "me")
    for conv in (LangChainHistory("me", "PROMPT"), AutoGenHistory("me", "PROMPT"), AG2History("me")):
        assert isinstance(conv, HistoryConverter)
    lc = LangChainHistory("me", "PROMPT").convert(raw)
    assert [type(m).__name__ for m in lc] == ["SystemMessage", "HumanMessage", "AIMessage", "HumanMessage"]
    ag = AutoGenHistory("me", "PROMPT").convert(raw)
    assert [(m.source, m.content) for m in ag] == [("turnflow", "PROMPT"), ("user", "<task>: go"), ("you", "done?")]
    events, inputs = AG2History("me").convert(raw)
    assert len(events) == 2 and inputs == ["you: done?"]


CONVERTERS = '''
from typing import Any


class Shouting:
    """A HistoryConverter of the user's own."""

    def convert(self, raw: list) -> list:
        return [f"{m['role']}/{m['sender_type']}/{m['sender_name']}: {m['content'].upper()}" for m in raw]


def billing(msg, tools):
    tools.send_message(" | ".join(tools.history))
    tools.set_context("resolved", True)


class OneLine:
    def convert(self, raw: list) -> list:
        from langchain_core.messages import HumanMessage
        return [HumanMessage(content=" + ".join(m["content"] for m in raw))]


def echo_graph(tools: list, ctx: Any) -> Any:
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def node(state: MessagesState) -> dict:
        return {"messages": [AIMessage(content=f"{len(state['messages'])}: {state['messages'][-1].content}")]}
    g = StateGraph(MessagesState)
    g.add_node("n", node)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    return g.compile()
'''


def test_history_converter_in_the_agents_file_for_python_and_framework_agents(tmp_path, capsys, monkeypatch):
    pytest.importorskip("langgraph")
    from runtime_helpers import FIXTURES

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_history.py").write_text(CONVERTERS)
    agents = tmp_path / "agents.yaml"
    agents.write_text(textwrap.dedent("""\
        agents:
          triage:  {kind: langgraph, ref: "my_history:echo_graph", history_converter: "my_history:OneLine",
                    behavior: self}
          billing: {kind: python, ref: "my_history:billing", history_converter: "my_history:Shouting"}
          user:    {kind: scripted, steps: [{say: thanks}, {finish: done}]}
          tech:    {kind: scripted, steps: [{say: x}]}
        """))
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents), "--task", "refund",
                 "--format", "json"]) == 0  # triage's echo graph calls no routing tool: the workflow ends after it
    out = capsys.readouterr().out
    assert '"body": "1: refund"' in out  # the graph got the one message the converter made, not the session prompt


def test_history_converter_reaches_a_python_agent_through_turnflow_run(tmp_path, capsys, monkeypatch):
    from runtime_helpers import FIXTURES

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_history.py").write_text(CONVERTERS)
    agents = tmp_path / "agents.yaml"
    agents.write_text(textwrap.dedent("""\
        agents:
          triage:  {kind: scripted, steps: [{say: "to billing", tool: transfer_to_billing}]}
          billing: {kind: python, ref: "my_history:billing", history_converter: "my_history:Shouting"}
          user:    {kind: scripted, steps: [{say: thanks}, {finish: done}]}
          tech:    {kind: scripted, steps: [{say: x}]}
        """))
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents), "--task", "refund",
                 "--format", "json"]) == 0
    out = capsys.readouterr().out
    # a workflow's view names each sender and shows the handoff: the content is what the view shows
    assert "user/User/<task>: REFUND | user/Agent/triage: [TRIAGE] [HANDED OFF VIA TRANSFER_TO_BILLING]" in out


def test_a_history_converter_without_convert_is_a_clear_error(tmp_path, capsys, monkeypatch):
    from runtime_helpers import FIXTURES

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_history_bad.py").write_text(CONVERTERS + "\nNOT_ONE = 3\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  billing: {kind: python, ref: 'my_history_bad:billing', "
                      "history_converter: 'my_history_bad:NOT_ONE'}\n")
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents)]) == 1
    err = capsys.readouterr().err
    assert "agent 'billing': history_converter 'my_history_bad:NOT_ONE': a history converter needs a `convert(raw)` method, got int" in err


# -- 8. LangGraph checkpointers, AutoGen windows ---------------------------------------------------

def _react(memory: Any, seen: list) -> Any:
    """The contract's Pattern 1 verbatim, over a scripted model that records what it is shown."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langgraph.prebuilt import create_react_agent

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> "Model":
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            seen.append([(type(m).__name__, m.content if isinstance(m.content, str) else "") for m in messages])
            return super()._generate(messages, stop, run_manager, **kwargs)

    llm = Model(responses=[
        AIMessage(content="", tool_calls=[{"name": "send_event", "id": "t1",
                                           "args": {"content": "the secret is 7", "message_type": "thought"}}]),
        AIMessage(content="first answer"),
        AIMessage(content="second answer"),
    ])

    def factory(tools: list, ctx: Any) -> Any:
        return create_react_agent(llm, tools, checkpointer=memory)
    return factory


def test_a_react_agent_with_memory_saver_remembers_across_its_turns_with_a_thread_per_session_and_participant():
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import MemorySaver

    from turnflow.frameworks.langgraph.participant import LangGraphAgent

    memory, seen = MemorySaver(), []

    async def go():
        hub = await new_hub()
        agents = {"planner": LangGraphAgent("planner", _react(memory, seen)),
                  "b": ScriptedAgent("b", [{"say": "b one"}, {"say": "b two", "finish": "done"}])}
        return await run_session(hub, PANEL, agents, "think")
    res = run(go())
    assert res.error is None and [t["speaker"] for t in res.turns] == ["planner", "b", "planner", "b"]
    assert [t["body"] for t in res.turns if t["speaker"] == "planner"] == ["first answer", "second answer"]
    second_turn = seen[-1]
    # the thought it sent in its first turn (a tool call: never in the transcript) is remembered ...
    assert ("ToolMessage", "thought event recorded") in second_turn
    # ... and nothing is given twice: the system prompt once, the task once, b's message once
    assert [n for n, _ in second_turn].count("SystemMessage") == 1
    # (b's message as a discussion view shows it: named, as AG2's)
    assert [c for _, c in second_turn].count("<task>: think") == 1 and [c for _, c in second_turn].count("b: [b] b one") == 1
    thread = memory.get_tuple({"configurable": {"thread_id": f"turnflow:{res.session_id}:planner"}})
    assert thread is not None and len(thread.checkpoint["channel_values"]["messages"]) == len(second_turn) + 1


def test_a_react_agent_keeps_its_memory_when_the_session_is_continued():
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import MemorySaver

    from turnflow.frameworks.langgraph.participant import LangGraphAgent

    memory, seen = MemorySaver(), []

    class Stalls:  # b's first turn never ends: the run is cancelled there, the session left open
        def __init__(self, started: asyncio.Event) -> None:
            self.started = started

        async def open_session(self, ctx, emit):
            return {"control_loop": "hub"}

        async def on_message(self, msg, tools):
            self.started.set()
            await asyncio.Event().wait()

        async def close_session(self, session_id):
            pass

    async def go():
        hub = await new_hub()
        started = asyncio.Event()
        task = asyncio.create_task(run_session(hub, PANEL, {"planner": LangGraphAgent("planner", _react(memory, seen)),
                                                            "b": Stalls(started)}, "think", keep_open=True))
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait([task, waiting], timeout=60, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        assert started.is_set(), task.result() if task.done() else "b's turn never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (sid,) = list(hub.sessions)
        assert hub.metadata(sid).state.value == "active"
        again = {"planner": LangGraphAgent("planner", _react(memory, seen)),  # a new agent object, same checkpointer
                 "b": ScriptedAgent("b", [{"say": "b two"}, {"say": "bye", "finish": "done"}])}
        return sid, await run_session(hub, PANEL, again, "think", session_id=sid)
    sid, res = run(go())
    assert res.close_reason == "done" and [t["speaker"] for t in res.turns] == ["planner", "b", "planner", "b"]
    assert ("ToolMessage", "thought event recorded") in seen[-1]  # remembered from before the pause


def test_an_autogen_agent_whose_last_message_scrolled_out_gets_only_what_is_new():
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage

    from turnflow.frameworks.autogen.participant import AutoGenAgent
    from turnflow.runtime.agents.contract import AgentContext, SessionTools
    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.views import WindowedSummary

    got: list = []

    class Recorder(BaseChatAgent):
        @property
        def produced_message_types(self) -> Any:
            return (TextMessage,)

        async def on_messages(self, messages: Any, cancellation_token: Any) -> Any:
            got.append([(m.source, m.content) for m in messages])
            return Response(chat_message=TextMessage(content="noted", source="rev"))

        async def on_reset(self, cancellation_token: Any) -> None:
            pass

    envs = [Envelope("s", "rev" if i == 0 else "w", None, EV_TEXT, {"text": f"m{i}"}, seq=i + 1) for i in range(6)]
    window = WindowedSummary(recent_n=3)
    task = [{"sender": "<task>", "text": "the task"}]

    async def go():
        agent = AutoGenAgent("rev", Recorder("rev", "records"))
        ctx = AgentContext("s", "rev", "discussion", ("rev", "w"), ())
        await agent.open_session(ctx, None)
        await agent.on_message(task + window.project(envs[:0], "rev"), SessionTools("rev", ("rev", "w"), session_id="s"))
        await agent.on_message(task + window.project(envs, "rev"), SessionTools("rev", ("rev", "w"), session_id="s"))
    asyncio.run(go())
    assert got[0][1:] == [("user", "<task>: the task")]
    assert got[1] == [("w", "m3"), ("w", "m4"), ("w", "m5")]  # not the task again, no <summary> pseudo-user
