"""`turnflow compile --target langgraph | autogen | ag2-groupchat` on inputs nobody wrote for
the writers, each session compared with `turnflow simulate`'s own (docs/targets.md).

The inputs: every workflow of examples/ and tests/fixtures/ that checks without errors (for
AutoGen and classic AG2, its routing with the context removed, as those teams share none), and
flows of a wide vocabulary (tests/target_sessions.py: participant and tool names that meet the
generated modules' own names, Python keywords and builtins, LangGraph's state keys; condition
texts of any Unicode; context values of every JSON kind). The script: sessions of
`turnflow.runtime.simulate.Simulator` with its random agent widened (handoffs and finishes where
the target's agents have them, context updates and deletes, texts holding the flow's `text
contains` strings), replayed turn by turn in the compiled module run by the real framework.
Compared: who speaks each turn, the context after it (LangGraph), and why the run ends.

A flow the target refuses must be refused with its TF30x alone. The larger run:

    TURNFLOW_TARGET_EXAMPLES=300 python3 -m pytest -q -p no:cacheprovider tests/test_target_sessions.py
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import turnflow
from target_harness import load_module, without_context
from target_sessions import SCRIPT_END, classic_step, sessions, step_of, wide_workflow_blocks
from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import compile_target
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow

ROOT = Path(__file__).parent.parent
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "15"))
CODES = {"langgraph": "TF302", "autogen": "TF304", "ag2-groupchat": "TF303"}


def _flow_files() -> list[Path]:
    return sorted([*ROOT.glob("examples/*.flow"), *ROOT.glob("tests/fixtures/**/*.flow")])


def _workflows(strip_context: bool) -> list[tuple[str, str, str]]:
    """(label, flow text, block) of every workflow in examples/ and tests/fixtures/ without errors
    (suppressed ones too: `turnflow.compile` refuses those);
    with `strip_context`, each as its own flow with context removed (`without_context`)."""
    out = []
    for path in _flow_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a fixture of bad input
        if any(d.severity == "error" for d in turnflow.check(text)):
            continue
        try:
            turnflow.compile(text)
        except CompileError:
            continue  # an error `check` was told to ignore (tests/fixtures/mutants/suppression_*): no spec to run
        for block in turnflow.parse(text).blocks:
            if block.kind != "workflow":
                continue
            label = f"{path.relative_to(ROOT)}:{block.name.name}"
            if not strip_context:
                out.append((label, text, block.name.name))
                continue
            block = without_context(block)
            alone = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
            if not any(d.severity == "error" for d in turnflow.check(alone)):
                out.append((label, alone, block.name.name))
    return out


def _compiled(text: str, block: str, target: str):
    """The module, or None when the target refuses the flow (with its own TF30x alone)."""
    try:
        return compile_target(text, target, block=block)
    except CompileError as exc:
        codes = {d.code for d in exc.diagnostics if d.severity == "error"}
        assert codes == {CODES[target]}, (codes, text)
        return None


def _spec(text: str, block: str) -> dict:
    return next(s for s in turnflow.compile(text) if s["name"] == block)


# -- LangGraph ------------------------------------------------------------------------------------
def run_langgraph(source: str, rounds: list) -> tuple[list, list, str]:
    """The module run by LangGraph, the i-th turn's agent taking the i-th round."""
    mod = load_module(source)

    def agent(state):
        i = state["turns"]
        return step_of(rounds[i]) if i < len(rounds) else {"finish": SCRIPT_END}

    final = mod.build({p: agent for p in mod.PARTICIPANTS}).invoke(mod.initial_state("task"))
    turns = final["transcript"]
    if final["reason"] == SCRIPT_END and len(turns) > len(rounds):
        turns = turns[:-1]  # the turn past the script (the hub's run was cut there)
    return [t["speaker"] for t in turns], [t["context"] for t in turns], final["reason"]


def same_in_langgraph(label: str, text: str, block: str, runs: int) -> bool:
    source = _compiled(text, block, "langgraph")
    if source is None:
        return False
    for s in sessions(_spec(text, block), runs, handoffs=True, finish_p=0.05):
        got = run_langgraph(source, s["rounds"])
        assert got == (s["speakers"], s["contexts"], s["reason"]), f"{label}\n{text}\nsimulate: {s}\nlanggraph: {got}"
    return True


def test_every_example_and_fixture_decides_alike_in_langgraph_and_in_simulate():
    pytest.importorskip("langgraph")
    cases = _workflows(strip_context=False)
    assert len(cases) > 150
    ran = sum(same_in_langgraph(label, text, block, 2) for label, text, block in cases)
    assert ran > 150


@settings(max_examples=N, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(wide_workflow_blocks())
def test_wide_flows_decide_alike_in_langgraph_and_in_simulate(block):
    pytest.importorskip("langgraph")
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    if not any(d.severity == "error" for d in turnflow.check(text)):
        same_in_langgraph("generated", text, "w", 3)


# -- AutoGen AgentChat ----------------------------------------------------------------------------
class ScriptEnd(Exception):
    pass


def run_autogen(source: str, rounds: list) -> tuple[list, str]:
    """The module's SelectorGroupChat of scripted AgentChat agents, the i-th turn's agent replying
    with the i-th round's text and tool call: (speakers, close reason)."""
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage, ToolCallRequestEvent
    from autogen_core import FunctionCall
    from autogen_ext.models.replay import ReplayChatCompletionClient

    mod = load_module(source)
    taken = itertools.count()
    speakers: list = []

    class Scripted(BaseChatAgent):
        @property
        def produced_message_types(self):
            return (TextMessage,)

        async def on_messages(self, messages, cancellation_token):
            i = next(taken)
            if i >= len(rounds):
                raise ScriptEnd
            speakers.append(self.name)
            s = classic_step(rounds[i])
            inner = [ToolCallRequestEvent(source=self.name, content=[
                FunctionCall(id="c", name=s["tool"], arguments="{}")])] if s["tool"] else []
            return Response(chat_message=TextMessage(source=self.name, content=s["say"] or ""), inner_messages=inner)

        async def on_reset(self, cancellation_token):
            pass

    team = mod.build({p: Scripted(p, "scripted") for p in mod.PARTICIPANTS}, ReplayChatCompletionClient([]))
    try:
        _result, reason = asyncio.run(mod.run(team, "task"))
    except Exception as exc:  # the agent's ScriptEnd, as AgentChat re-raises it
        assert "ScriptEnd" in f"{type(exc).__name__} {exc}", exc
        reason = SCRIPT_END
    return speakers, reason


def same_in_autogen(label: str, text: str, block: str, runs: int) -> bool:
    source = _compiled(text, block, "autogen")
    if source is None:
        return False
    for s in sessions(_spec(text, block), runs, handoffs=False, finish_p=0.0):
        got = run_autogen(source, s["rounds"])
        assert got == (s["speakers"], s["reason"]), f"{label}\n{text}\nsimulate: {s}\nautogen: {got}"
    return True


def test_every_examples_and_fixtures_routing_decides_alike_in_autogen_and_in_simulate():
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.replay")
    cases = _workflows(strip_context=True)
    assert len(cases) > 150
    ran = sum(same_in_autogen(label, text, block, 1) for label, text, block in cases)
    assert ran > 150


@settings(max_examples=N, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(wide_workflow_blocks(context=False, identifiers=True))
def test_wide_flows_decide_alike_in_autogen_and_in_simulate(block):
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.replay")
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    if not any(d.severity == "error" for d in turnflow.check(text)):
        same_in_autogen("generated", text, "w", 2)


# -- classic AG2 GroupChat ------------------------------------------------------------------------
def classic_python():
    exe = os.environ.get("TURNFLOW_AG2_CLASSIC_PYTHON") or str(ROOT / ".venv-ag2-classic" / "bin" / "python")
    return exe if Path(exe).exists() else None


needs_classic = pytest.mark.skipif(classic_python() is None, reason="no classic AG2 0.9 interpreter (.venv-ag2-classic)")


def run_classic(jobs: list) -> list:
    run = subprocess.run([classic_python(), str(ROOT / "tests" / "classic_target_runner.py")], input=json.dumps(jobs),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout)


def classic_cases(cases: list, runs: int) -> tuple[list, list]:
    """Every case's sessions as jobs for the classic runner (replies in a model's place) and what
    simulate decided: (jobs, [(label, text, session)])."""
    jobs, want = [], []
    for label, text, block in cases:
        source = _compiled(text, block, "ag2-groupchat")
        if source is None:
            continue
        for s in sessions(_spec(text, block), runs, handoffs=False, finish_p=0.0):
            jobs.append({"source": source, "steps": [classic_step(r) for r in s["rounds"]], "model": True})
            want.append((label, text, s))
    return jobs, want


def same_in_classic_groupchat(want: list, got: list) -> int:
    """Each session's classic run decided as simulate did; the number of flows the target wrote."""
    for (label, text, s), run in zip(want, got, strict=True):
        if s["reason"] == SCRIPT_END and len(run["speakers"]) == len(s["speakers"]) + 1:
            run["speakers"].pop()  # the turn past the script (the hub's run was cut there)
        assert (run["speakers"], run["reason"]) == (s["speakers"], s["reason"]), \
            f"{label}\n{text}\nsimulate: {s}\nclassic: {run}"
    return len({label for label, _t, _s in want})


@functools.lru_cache(maxsize=1)
def _wide_classic_cases() -> list:
    drawn: list = []

    @settings(max_examples=N * 2, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(wide_workflow_blocks(context=False))
    def gather(block):
        text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
        if not any(d.severity == "error" for d in turnflow.check(text)):
            drawn.append((f"generated flow {len(drawn)}", text, "w"))

    gather()
    return drawn


NO_TEXT = ('workflow w {\n    participant a tools [t1]\n    participant b\n    participant c\n    start a\n'
           '    max_turns 4\n    a -> b when text contains "on"\n    a -> c when text contains ""\n'
           '    a -> terminate "no text"\n    b -> terminate "b"\n    c -> terminate "c"\n}\n')
#: `a` owns the routing tool `t1`; `search` is a work tool of its own (no routing tool of the flow)
PARALLEL = ('workflow w {\n    participant a tools [t1]\n    participant b\n    participant c\n    start a\n'
            '    max_turns 4\n    a -> b when tool t1\n    a -> c\n    b -> terminate "b"\n    c -> terminate "c"\n}\n')
CONSUMED = ('workflow w {\n    participant a tools [t1]\n    participant b\n    start a\n    max_turns 6\n'
            '    a -> b when tool t1\n    a -> terminate "a said"\n    b -> terminate "b said" when text contains "DONE"\n'
            '    b -> a\n}\n')


def only_the_flow(max_turns: int, a_to: str) -> str:
    return (f"workflow w {{\n    participant a\n    participant b\n    start a\n    max_turns {max_turns}\n"
            f"    a -> {a_to}\n    b -> a\n}}\n")


def _job(text: str, steps: list, model: bool = True) -> dict:
    return {"source": compile_target(text, "ag2-groupchat"), "steps": steps, "model": model}


def targeted_jobs() -> dict[str, list]:
    """The targeted classic tests' jobs (below), run with the differentials' in one process."""
    return {
        "no text": [_job(NO_TEXT, [{"say": None, "tool": "t1"}, {"say": "bye", "tool": None}])],
        "parallel": [_job(PARALLEL, [{"say": None, "tools": names}, {"say": "x"}], model=False)
                     for names in (["search", "t1"], ["t1", "search"], ["search"])],
        "only the flow TERMINATE": [_job(only_the_flow(6, "b"), [{"say": "TERMINATE"}] + [{"say": "x"}] * 7)],
        "only the flow x": [_job(only_the_flow(120, "a"), [{"say": "x"}] + [{"say": "x"}] * 121)],
        "consumed": [_job(CONSUMED, [{"say": None, "tool": "t1"}, {"say": "DONE"}, {"say": "x"}, {"say": "y"}]),
                     _job(CONSUMED, [{"say": None, "function": "t1"}, {"say": "DONE"}, {"say": "x"}, {"say": "y"}])],
    }


@functools.lru_cache(maxsize=1)
def classic_runs() -> dict[str, tuple[list, list]]:
    """Every classic test's jobs run in one AG2 process (its start costs about 1 s of CPU): per
    test, (its results, what it compares them with)."""
    batches: dict[str, tuple[list, list]] = {
        "fixtures": classic_cases(_workflows(strip_context=True), 1),
        "wide": classic_cases(_wide_classic_cases(), 2),
        **{name: (jobs, []) for name, jobs in targeted_jobs().items()}}
    got = iter(run_classic([j for jobs, _w in batches.values() for j in jobs]))
    return {name: ([next(got) for _j in jobs], want) for name, (jobs, want) in batches.items()}


@needs_classic
def test_every_examples_and_fixtures_routing_decides_alike_in_classic_groupchat_and_in_simulate():
    got, want = classic_runs()["fixtures"]
    assert same_in_classic_groupchat(want, got) > 150


@needs_classic
def test_wide_flows_decide_alike_in_classic_groupchat_and_in_simulate():
    got, want = classic_runs()["wide"]
    assert same_in_classic_groupchat(want, got) >= len(_wide_classic_cases()) // 2


@needs_classic
def test_a_tool_call_without_text_is_the_empty_text_in_classic_groupchat():
    """An LLM's tool call reply has no text (`content` None), which GroupChat.append casts to the
    text "None": `text contains "on"` must not hold after it, as on turnflow's hub, where the turn's
    text is empty."""
    text = NO_TEXT
    [got] = classic_runs()["no text"][0]
    rounds = [{"body": "", "kind": "handoff", "tool": "t1", "set": {}, "delete": []}]
    assert classic_step(rounds[0]) == {"say": None, "tool": "t1"}  # the differential's scripts send it too
    from target_harness import run_hub

    hub = run_hub(turnflow.compile(text)[0], [("tool", 4, 0, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, "")])
    assert (hub[0], hub[2]) == (["a", "c"], "c")
    assert got == {"speakers": ["a", "c"], "reason": "c"}


@needs_classic
def test_a_routing_tool_called_after_a_work_tool_routes_in_classic_groupchat():
    """A model calling a work tool and a routing tool in one reply (parallel tool calls): the turn
    routes by the routing tool, as on the hub, where only routing tools reach the round (the work
    tool runs inside the agent), not by whichever call comes first."""
    from target_harness import run_hub

    hub = run_hub(turnflow.compile(PARALLEL)[0], [("tool", 4, 0, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, "")])
    assert (hub[0], hub[2]) == (["a", "b"], "b")
    got = classic_runs()["parallel"][0]
    assert got == [{"speakers": ["a", "b"], "reason": "b"}, {"speakers": ["a", "b"], "reason": "b"},
                   {"speakers": ["a", "c"], "reason": "c"}]


def test_a_routing_tool_called_after_a_work_tool_routes_in_autogen():
    """The same in AgentChat: the routing tool among the turn's tool calls (one event holding both,
    or one event per tool iteration) routes the turn."""
    pytest.importorskip("autogen_agentchat")
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage, ToolCallRequestEvent
    from autogen_core import FunctionCall
    from autogen_ext.models.replay import ReplayChatCompletionClient

    mod = load_module(compile_target(PARALLEL, "autogen"))

    def request(names):
        return ToolCallRequestEvent(source="a", content=[FunctionCall(id=f"c{i}", name=n, arguments="{}")
                                                         for i, n in enumerate(names)])

    class Says(BaseChatAgent):
        def __init__(self, name, events):
            super().__init__(name, "scripted")
            self.events = events

        @property
        def produced_message_types(self):
            return (TextMessage,)

        async def on_messages(self, messages, cancellation_token):
            return Response(chat_message=TextMessage(source=self.name, content="done"), inner_messages=self.events)

        async def on_reset(self, cancellation_token):
            pass

    def speakers(events):
        team = mod.build({"a": Says("a", events), "b": Says("b", []), "c": Says("c", [])},
                         ReplayChatCompletionClient([]))
        result, reason = asyncio.run(mod.run(team, "task"))
        return [m.source for m in result.messages if isinstance(m, TextMessage)][1:], reason

    assert speakers([request(["search", "t1"])]) == (["a", "b"], "b")
    assert speakers([request(["search"]), request(["t1"])]) == (["a", "b"], "b")
    assert speakers([request(["t1", "search"])]) == (["a", "b"], "b")
    assert speakers([request(["search"])]) == (["a", "c"], "c")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1, 2}, b"x", object()])
def test_a_context_value_the_hub_refuses_is_a_step_error_in_langgraph(bad):
    """A step setting a context value that is no JSON value (NaN, infinity, a set, bytes): the hub
    fails the turn (`agent 'a' failed turn 1 twice: ... must be a JSON value`, then `agent_error`);
    the LangGraph module raises `StepError`, as for any step the flow cannot take, rather than run
    on with a context no hub session can hold."""
    pytest.importorskip("langgraph")
    text = "workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 4\n    a -> b\n    b -> a\n}\n"
    mod = load_module(compile_target(text, "langgraph"))
    graph = mod.build({p: (lambda state: {"say": "x", "set": {"k": bad}}) for p in mod.PARTICIPANTS})
    with pytest.raises(mod.StepError, match="context value for 'k' must be a JSON value"):
        graph.invoke(mod.initial_state())
    fine = mod.build({p: (lambda state: {"say": "x", "set": {"k": [1, {"n": None}]}}) for p in mod.PARTICIPANTS})
    assert fine.invoke(mod.initial_state())["context"] == {"k": [1, {"n": None}]}


@needs_classic
@pytest.mark.parametrize("say,max_turns,turns,a_to", [("TERMINATE", 6, 6, "b"), ("x", 120, 120, "a")])
def test_only_the_flow_ends_a_classic_groupchat(say, max_turns, turns, a_to):
    """An AG2 agent ends the chat by itself when it is picked to reply to a message that is exactly
    `TERMINATE` (ConversableAgent's default `is_termination_msg`) or after 100 automatic replies
    (`max_consecutive_auto_reply`): its reply is None, "No reply generated". The hub knows neither;
    the module's agents leave ending to the flow (here `max_turns`)."""
    from target_harness import run_hub

    text = only_the_flow(max_turns, a_to)
    [got] = classic_runs()[f"only the flow {say}"][0]
    plan = [("text", 0, 0, {}, [], 0, "")] + [("text", 1, 0, {}, [], 0, "")] * (turns + 1)
    hub = run_hub(turnflow.compile(text)[0], plan)
    assert (len(hub[0]), hub[2]) == (turns, "max_turns")
    assert got == {"speakers": hub[0], "reason": "max_turns"}


@needs_classic
def test_a_routing_tool_call_is_the_flows_not_a_tool_for_the_next_speaker_to_run():
    """A routing tool's call routes the turn and is the flow's, as on the hub: the next speaker (here
    with its reply in a model's place, after AG2's tool-call reply) replies, rather than answering the
    call with "Error: Function t1 not found." (a tool it does not have) as its turn."""
    from target_harness import run_hub

    hub = run_hub(turnflow.compile(CONSUMED)[0], [("tool", 4, 0, {}, [], 0, ""), ("text", 0, 0, {}, [], 0, "")])
    assert (hub[0], hub[2]) == (["a", "b"], "b said")  # a calls t1 without text; b says "DONE"
    tool_call, function_call = classic_runs()["consumed"][0]  # a legacy `function_call` alike
    assert tool_call == function_call == {"speakers": hub[0], "reason": hub[2]}
