"""Participants from other frameworks (`kind: langgraph | ag2 | autogen`, docs/agents.md §2),
each with the framework's real package and a scripted model: the three together in one
workflow session through `turnflow run`, and a failure in each framework's code reported with
the file:line of the user's code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
import textwrap

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext")
pytest.importorskip("ag2")

from turnflow.cli.app import main  # noqa: E402
from turnflow.runtime.store import SQLiteStore  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FLOW = str(ROOT / "examples" / "frameworks.flow")
AGENTS = str(ROOT / "examples" / "frameworks_agents.yaml")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def telemetry(db, sid):
    store = SQLiteStore(db)
    try:
        return store.telemetry(sid)
    finally:
        store.close()


def test_three_frameworks_take_turns_in_one_workflow(tmp_path, capsys):
    db = str(tmp_path / "hub.db")
    assert main(["run", FLOW, "--agents", AGENTS, "--task", "db-1 is down", "--store", db, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["state"], out["close_reason"]) == ("closed", "approved")  # the flow's rule on context.approved
    assert out["turns"] == [
        {"speaker": "planner", "kind": "handoff", "tool": "assign_fix", "target": None,
         "body": "db-1 ran out of disk; assigning the fix.", "set": {}, "delete": []},
        {"speaker": "fixer", "kind": "handoff", "tool": "request_review", "target": None,
         "body": "Freed 40 GB on db-1 and rotated its logs.", "set": {"patched": True}, "delete": []},
        {"speaker": "reviewer", "kind": "handoff", "tool": "report_back", "target": None,
         "body": "Approved.", "set": {"approved": True}, "delete": []},
        {"speaker": "planner", "kind": "text", "tool": None, "target": None,
         "body": "The review approved the fix (disk full on db-1); closing the incident.", "set": {}, "delete": []},
    ]  # the planner's last answer quotes the thought it sent on its first turn: its checkpointer remembers
    tel = telemetry(db, out["session_id"])
    shakes = {t["agent_id"]: t["effective"] for t in tel if t["event"] == "handshake"}
    assert shakes == {a: {"control_loop": "self", "supports_stepwise": True, "telemetry_stream": True}
                      for a in ("planner", "fixer", "reviewer")}
    tools = [(t["agent_id"], t["event"], t["payload"]["framework"], t["payload"]["tool"]) for t in tel
             if t["event"] in ("env_action", "tool_response")]
    assert tools == [
        ("planner", "env_action", "langgraph", "send_event"), ("planner", "tool_response", "langgraph", "send_event"),
        ("planner", "env_action", "langgraph", "assign_fix"), ("planner", "tool_response", "langgraph", "assign_fix"),
        ("fixer", "env_action", "ag2", "set_context"), ("fixer", "tool_response", "ag2", "set_context"),
        ("fixer", "env_action", "ag2", "request_review"), ("fixer", "tool_response", "ag2", "request_review"),
        ("reviewer", "env_action", "autogen", "set_context"), ("reviewer", "tool_response", "autogen", "set_context"),
        ("reviewer", "env_action", "autogen", "report_back"), ("reviewer", "tool_response", "autogen", "report_back"),
    ]
    assert [(t["agent_id"], t["step"], t["payload"]["content"]) for t in tel if t["event"] == "thought"] == [
        ("planner", 1, "disk full on db-1"), ("reviewer", 3, "The patch looks right.")]
    fixer_end = next(t for t in tel if t["agent_id"] == "fixer" and t["event"] == "tool_response")
    assert fixer_end["payload"]["output"] == "context patched = true (applied when your turn ends)"
    # inspect shows the thought events too
    assert main(["inspect", db, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)[0]["telemetry"]
    assert [t["payload"]["content"] for t in shown if t["event"] == "thought"] == [
        "disk full on db-1", "The patch looks right."]


FAILING = '''\
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def lookup(state: MessagesState) -> dict:
    table: dict = {}
    return {"messages": [AIMessage(content=table["missing"])]}


def graph(tools: list, ctx: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("lookup", lookup)
    g.add_edge(START, "lookup")
    g.add_edge("lookup", END)
    return g.compile()


from ag2 import Agent  # noqa: E402
from ag2.events import ToolCallEvent  # noqa: E402
from ag2.testing import TestConfig  # noqa: E402


def check_disk(host: str) -> str:
    raise RuntimeError(f"no such host {host}")


def ag2_agent(tools: list, ctx: Any) -> Agent:
    return Agent("fixer", config=TestConfig(ToolCallEvent("check_disk", arguments='{"host": "db-9"}'), "unreached"),
                 tools=[check_disk, *tools])


from autogen_agentchat.agents import BaseChatAgent  # noqa: E402


class Broken(BaseChatAgent):
    @property
    def produced_message_types(self) -> Any:
        return ()

    async def on_messages(self, messages: Any, cancellation_token: Any) -> Any:
        return int("not a number")

    async def on_reset(self, cancellation_token: Any) -> None:
        pass


def autogen_agent(tools: list, ctx: Any) -> Broken:
    return Broken("reviewer", "breaks")
'''


def _line(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("who, kind, ref, needle, error", [
    ("planner", "langgraph", "failing_mod:graph", 'content=table["missing"]', "KeyError: 'missing'"),
    ("fixer", "ag2", "failing_mod:ag2_agent", 'raise RuntimeError(f"no such host', "RuntimeError: no such host db-9"),
    ("reviewer", "autogen", "failing_mod:autogen_agent", 'return int("not a number")',
     "ValueError: invalid literal for int()"),
])
def test_an_exception_in_framework_code_names_its_file_and_line(tmp_path, capsys, monkeypatch, who, kind, ref,
                                                                 needle, error):
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = write(tmp_path, "failing_mod.py", FAILING)
    # the others are scripted: each hands on to the next, so `who` gets its turn
    steps = {"planner": '{kind: scripted, steps: [{say: "go", tool: assign_fix}]}',
             "fixer": '{kind: scripted, steps: [{say: "fixed", tool: request_review}]}',
             "reviewer": '{kind: scripted, steps: [{say: "ok", tool: report_back}]}'}
    steps[who] = f'{{kind: {kind}, ref: "{ref}"}}'
    agents = write(tmp_path, "agents.yaml", "agents:\n" + "".join(f"  {k}: {v}\n" for k, v in steps.items()))
    assert main(["run", FLOW, "--agents", agents, "--format", "json"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)["close_reason"] == "agent_error"
    line = _line(FAILING, needle)
    assert f"agent {who!r} failed turn" in cap.err and error in cap.err, cap.err
    assert f"failing_mod.py:{line} in " in cap.err, cap.err
    assert mod.endswith("failing_mod.py") and "Traceback" not in cap.err


PREBUILT = '''\
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph


@tool
def assign_fix(reason: str = "") -> str:
    """The graph's own tool, named like the flow's routing tool."""
    return "assigned"


def decide(state: MessagesState, config: RunnableConfig) -> dict:
    # a prebuilt graph finds turnflow's session tools in its config
    tools = {t.name: t for t in config["configurable"]["turnflow_tools"]}
    seen = [m.content for m in state["messages"]]
    if any("fixed" in str(c) for c in seen):
        tools["finish"].invoke({"reason": "all_done"})
        return {"messages": [AIMessage(content="closing")]}
    assign_fix.invoke({"reason": "mine"})
    return {"messages": [AIMessage(content="over to the fixer")]}


g = StateGraph(MessagesState)
g.add_node("decide", decide)
g.add_edge(START, "decide")
g.add_edge("decide", END)
graph = g.compile()

not_a_graph = 3


def bad_factory(tools: list, ctx: Any) -> int:
    return 42


def one_argument_factory(model: Any) -> Any:
    return graph


from ag2 import Agent  # noqa: E402
from ag2.events import ToolCallEvent  # noqa: E402
from ag2.testing import TestConfig  # noqa: E402

fixer = Agent("fixer", config=TestConfig(
    ToolCallEvent("send_message", arguments='{"content": "x", "mentions": ["nobody"]}'),  # refused: back to the model
    ToolCallEvent("set_context", arguments='{"key": "patched", "value": 1}'),
    ToolCallEvent("send_message", arguments='{"content": "cc", "mentions": ["planner"]}'),
    ToolCallEvent("request_review", arguments='{}'),
    "fixed"), )


from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.base import Handoff  # noqa: E402
from autogen_core import FunctionCall  # noqa: E402
from autogen_core.models import CreateResult, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402


def reviewer(tools: list, ctx: Any) -> AssistantAgent:
    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    client = ReplayChatCompletionClient([CreateResult(
        finish_reason="function_calls", usage=usage, cached=False,
        content=[FunctionCall(id="1", name="transfer_to_planner", arguments="{}")])],
        model_info={"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
                    "structured_output": False})
    # an AutoGen handoff by target: the flow's routing tool to that participant is report_back
    return AssistantAgent("reviewer", model_client=client, handoffs=[Handoff(target="planner")])


async def report_back(reason: str = "") -> str:
    """The agent's own tool, named like the flow's routing tool."""
    return "reported"


def _own_tool_reviewer() -> AssistantAgent:
    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    client = ReplayChatCompletionClient([CreateResult(
        finish_reason="function_calls", usage=usage, cached=False,
        content=[FunctionCall(id="1", name="report_back", arguments='{"reason": "looks good"}')])],
        model_info={"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
                    "structured_output": False})
    return AssistantAgent("reviewer", model_client=client, tools=[report_back])


reviewer_own_tool = _own_tool_reviewer()
'''


def _run(tmp_path, capsys, monkeypatch, agents_text, code=0):
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path, "prebuilt_mod.py", PREBUILT)
    agents = write(tmp_path, "agents.yaml", agents_text)
    db = str(tmp_path / "hub.db")
    rc = main(["run", FLOW, "--agents", agents, "--format", "json", "--store", db])
    cap = capsys.readouterr()
    assert rc == code, cap.err
    return json.loads(cap.out) if cap.out.strip() else None, cap.err, db


def test_prebuilt_objects_route_by_own_tool_handoff_target_and_finish(tmp_path, capsys, monkeypatch):
    out, err, db = _run(tmp_path, capsys, monkeypatch, """\
        agents:
          planner:  {kind: langgraph, ref: "prebuilt_mod:graph"}
          fixer:    {kind: ag2, ref: "prebuilt_mod:fixer"}
          reviewer: {kind: autogen, ref: "prebuilt_mod:reviewer"}
        """)
    got = [(t["speaker"], t["kind"], t["tool"], t["body"], t["set"]) for t in out["turns"]]
    assert got == [
        ("planner", "handoff", "assign_fix", "over to the fixer", {}),      # the graph's own assign_fix routed
        ("fixer", "handoff", "request_review", "cc\nfixed", {"patched": 1}),  # tools injected into a prebuilt ag2.Agent
        ("reviewer", "handoff", "report_back", "Transferred to planner, adopting the role of planner immediately.", {}),
        ("planner", "finish", None, "closing", {}),                          # finish from config's turnflow_tools
    ]
    assert out["close_reason"] == "all_done"
    tel = telemetry(db, out["session_id"])
    fed_back = [t["payload"]["output"] for t in tel if t["agent_id"] == "fixer" and t["event"] == "tool_response"]
    assert fed_back[0].startswith("error: fixer: send_message mentions 'nobody', not a participant")
    store = SQLiteStore(db)
    packets = [e for e in store.read_range(out["session_id"]) if e.event_type == "packet" and e.sender_id == "fixer"]
    store.close()
    assert packets[0].event_data["mentions"] == ["planner"]


@pytest.mark.parametrize("ref, message, code", [
    # a ref that names no usable object: an error of the agents file (exit 1, before any session)
    ("prebuilt_mod:not_a_graph", "prebuilt_mod:not_a_graph is neither a compiled LangGraph graph nor a factory", 1),
    ("prebuilt_mod:bad_factory", "the factory prebuilt_mod:bad_factory returned 'int', not a compiled LangGraph graph",
     1),
    ("prebuilt_mod:nothing", "module 'prebuilt_mod' has no attribute 'nothing'", 1),
    # a factory that cannot take (tools, ctx): refused at the ref's line before the session opens
    ("prebuilt_mod:one_argument_factory", "agents.yaml:2:", 1),
    ("prebuilt_mod:one_argument_factory",
     "the factory prebuilt_mod:one_argument_factory(model: Any) -> Any cannot be called with (tools, ctx)", 1),
])
def test_bad_framework_refs_are_clear_errors(tmp_path, capsys, monkeypatch, ref, message, code):
    out, err, _ = _run(tmp_path, capsys, monkeypatch, f"""\
        agents:
          planner:  {{kind: langgraph, ref: "{ref}"}}
          fixer:    {{kind: scripted, steps: [{{say: x}}]}}
          reviewer: {{kind: scripted, steps: [{{say: x}}]}}
        """, code=code)
    assert message in err and "Traceback" not in err
    if "factory" in ref and "bad_factory" not in ref:
        assert not out, "no session opened"


TOOL_ERROR = '''\
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph


@tool
def lookup(host: str) -> str:
    """Look a host up."""
    raise LookupError(f"unknown host {host}")


def node(state: MessagesState) -> dict:
    try:
        lookup.invoke({"host": "db-9"})
    except LookupError:
        pass
    return {"messages": [AIMessage(content="db-9 is not ours")]}


def graph(tools: list, ctx: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.add_edge("node", END)
    return g.compile()
'''


def test_a_langgraph_tool_error_is_an_error_telemetry_event(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    write(tmp_path, "tool_error_mod.py", TOOL_ERROR)
    agents = write(tmp_path, "agents.yaml", """\
        agents:
          planner:  {kind: langgraph, ref: "tool_error_mod:graph"}
          fixer:    {kind: scripted, steps: [{say: x}]}
          reviewer: {kind: scripted, steps: [{say: x}]}
        """)
    db = str(tmp_path / "hub.db")
    assert main(["run", FLOW, "--agents", agents, "--format", "json", "--store", db]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["body"]) for t in out["turns"]] == [("planner", "db-9 is not ours")]
    errors = [t for t in telemetry(db, out["session_id"]) if t["event"] == "error"]
    assert [(t["agent_id"], t["payload"]["tool"], t["payload"]["framework"]) for t in errors] == [
        ("planner", "lookup", "langgraph")]
    assert errors[0]["reason"] == "tool lookup failed: unknown host db-9"


MSG = [{"sender": "<task>", "text": "db-1 is down"}, {"sender": "planner", "text": "on it"},
       {"sender": "fixer", "text": "patched"}, {"sender": "reviewer", "text": ""}, {"sender": "reviewer", "text": "ok"}]


def test_history_as_langchain_messages():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from turnflow.frameworks.langgraph.history import to_langchain

    out = to_langchain(MSG, "planner", "PROMPT")
    assert [(type(m), m.content, m.name) for m in out] == [
        (SystemMessage, "PROMPT", None), (HumanMessage, "<task>: db-1 is down", None),
        (AIMessage, "on it", "planner"), (HumanMessage, "fixer: patched", "fixer"),
        (HumanMessage, "reviewer: ok", "reviewer")]
    assert [m.content for m in to_langchain([], "planner", "P")][1:] == ["(the session has just started: begin)"]
    assert to_langchain(MSG[:2], "planner", "P")[-1].content == "(it is your turn)"


def test_history_as_ag2_stream_and_inputs():
    from ag2.events import ModelRequest, ModelResponse

    from turnflow.frameworks.ag2.history import to_ag2

    async def go():
        stream, inputs = await to_ag2(MSG, "planner")
        return list(await stream.history.get_events()), inputs
    events, inputs = asyncio.run(go())
    assert [type(e) for e in events] == [ModelRequest, ModelResponse]
    assert events[1].content == "on it"
    assert inputs == ["fixer: patched", "reviewer: ok"]


def test_history_as_autogen_messages_new_since_its_last_turn():
    from turnflow.frameworks.autogen.history import to_autogen

    first = to_autogen(MSG, "planner", "PROMPT", bootstrap=True)
    assert [(m.source, m.content) for m in first] == [
        ("turnflow", "PROMPT"), ("user", "<task>: db-1 is down"), ("fixer", "patched"), ("reviewer", "ok")]
    later = to_autogen(MSG, "planner", "PROMPT", bootstrap=False)
    assert [(m.source, m.content) for m in later] == [("fixer", "patched"), ("reviewer", "ok")]
    assert [m.content for m in to_autogen(MSG[:2], "planner", "P", bootstrap=False)] == ["(it is your turn)"]


def test_a_prebuilt_autogen_agents_own_routing_named_tool_routes(tmp_path, capsys, monkeypatch):
    out, err, db = _run(tmp_path, capsys, monkeypatch, """\
        agents:
          planner:  {kind: scripted, steps: [{say: go, tool: assign_fix}, {say: closing, finish: closed}]}
          fixer:    {kind: scripted, steps: [{say: fixed, tool: request_review}]}
          reviewer: {kind: autogen, ref: "prebuilt_mod:reviewer_own_tool"}
        """)
    assert [(t["speaker"], t["kind"], t["tool"]) for t in out["turns"]] == [
        ("planner", "handoff", "assign_fix"), ("fixer", "handoff", "request_review"),
        ("reviewer", "handoff", "report_back"), ("planner", "finish", None)]
    assert out["close_reason"] == "closed"
