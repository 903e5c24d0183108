"""`turnflow compile --target autogen-json`: the emitted team component, bound to scripted agents,
loaded with AutoGen AgentChat 0.7's `Team.load_component` and run, makes the decisions turnflow's
hub makes (docs/targets.md): the speaker sequence and the close reason, turn by turn.

Flows come from two generators: shaped flows (each of RoundRobinGroupChat, Swarm and GraphFlow
built from the project's AST pieces, most of which qualify) and the project's generic workflow
strategy (tests/flow_strategies.py), which qualify rarely; a flow that does not qualify must be
refused by TF305 and nothing else. The suite runs 40 shaped flows on both sides (refused ones
are not counted) and 40 generic ones; the larger run (N shaped flows compared):

    TURNFLOW_TARGET_EXAMPLES=500 python3 -m pytest -q -p no:cacheprovider tests/test_target_autogen_json.py -k generated
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, assume, event, given, settings

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.replay")

import turnflow  # noqa: E402
import autogen_json_agents  # noqa: E402
from component_flows import component_blocks  # noqa: E402
from flow_strategies import workflow_blocks  # noqa: E402
from target_harness import DIFF_TOOLS, SCRIPT_END, plans, run_hub, step  # noqa: E402
from turnflow.compiler.emit.spec import CompileError  # noqa: E402
from turnflow.compiler.emit.targets import compile_target  # noqa: E402
from turnflow.dsl import ast  # noqa: E402
from turnflow.dsl.printer import print_flow  # noqa: E402

ROOT = Path(__file__).parent.parent
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "40"))
GRAPH_DONE = "Digraph execution is complete"


def bind(team: dict[str, Any], make) -> dict[str, Any]:
    """`team` (the emitted JSON) with each participant replaced by `make(placeholder)`'s component:
    what docs/targets.md tells a user to do with their own agents."""
    team = json.loads(json.dumps(team))
    team["config"]["participants"] = [make(p) for p in team["config"]["participants"]]
    return team


def close_reason(team: dict[str, Any], result) -> Optional[str]:
    """The flow's close reason from a TaskResult, as docs/targets.md says to read it: `max_turns` when
    the team stopped at its `max_turns`; else the label of the first termination condition (in the
    order listed) that fires on the last turn; else (a GraphFlow that completed) the last speaker's
    `turnflow.close_reasons.graph_complete`."""
    from autogen_agentchat.base import TerminationCondition
    from autogen_agentchat.messages import BaseChatMessage

    stop = result.stop_reason or ""
    if stop.startswith("Maximum number of turns"):
        return "max_turns"
    msgs = list(result.messages)
    chat = [i for i, m in enumerate(msgs) if isinstance(m, BaseChatMessage)]
    last = msgs[chat[-1]].source
    turn = msgs[chat[-2] + 1:] if len(chat) > 1 else msgs
    cond = team["config"].get("termination_condition")
    conds = [] if cond is None else cond["config"]["conditions"] if cond["provider"].endswith("OrTerminationCondition") \
        else [cond]

    async def first() -> Optional[str]:
        for c in conds:
            if await TerminationCondition.load_component(c)(turn) is not None:
                return c["label"]
        return None

    fired = asyncio.run(first())
    if fired is not None:
        return fired
    assert stop == GRAPH_DONE, stop
    return team["turnflow"]["close_reasons"]["graph_complete"][last]


def run_autogen(doc: str, plan: list, owned: dict[str, list[str]], order: list[str]):
    """The JSON bound to scripted agents (tests/autogen_json_agents.py), loaded and run: (speakers, reason)."""
    from autogen_agentchat.base import Team

    team = json.loads(doc)
    speakers: list[str] = []
    taken = itertools.count()

    def take(name: str) -> dict[str, Any]:
        speakers.append(name)
        return step(plan, next(taken), name, order, owned, classic=True)

    run_id = autogen_json_agents.register(take)
    try:
        loaded = Team.load_component(bind(team, lambda p: autogen_json_agents.component(p, run_id)))
        try:
            result = asyncio.run(loaded.run(task="task"))
        except Exception as exc:  # the agent's ScriptEnd, as AgentChat re-raises it
            assert "ScriptEnd" in f"{type(exc).__name__} {exc}", exc
            return speakers, SCRIPT_END
        return speakers, close_reason(team, result)
    finally:
        autogen_json_agents.forget(run_id)


def same_decisions(text: str, plan: list) -> str:
    """Runs `text` on the hub and as the emitted team; returns the team's kind."""
    spec = turnflow.compile(text)[0]
    order = [p["agent_id"] for p in spec["participants"]]
    owned = {p["agent_id"]: list(p["tools"]) for p in spec["participants"]}
    speakers, _ctx, reason = run_hub(spec, plan, classic=True)
    doc = compile_target(text, "autogen-json")
    got = run_autogen(doc, plan, owned, order)
    if got != (speakers, reason):
        Path("/tmp/mismatch.txt").write_text(f"{text}\n{plan}\n{got}\n{(speakers, reason)}\n")
    assert got == (speakers, reason), (text, plan, json.loads(doc)["provider"])
    kind = json.loads(doc)["turnflow"]["team"]
    event(f"{kind}, closed by {reason}")
    return kind


def _text(block: ast.Block) -> str:
    return print_flow(ast.FlowFile(span=block.span, blocks=[block]))


def _compiles(text: str) -> bool:
    """True when `--target autogen-json` writes the flow; False when only TF305 (or its table's
    constructs) refuses it."""
    try:
        compile_target(text, "autogen-json")
    except CompileError as exc:
        errors = {d.code for d in exc.diagnostics if d.severity == "error"}
        assert errors == {"TF305"}, exc.diagnostics
        return False
    return True


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(component_blocks(), plans)
def test_generated_team_shaped_flows_decide_alike_in_autogen_and_on_the_hub(block, plan):
    text = _text(block)
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    if not _compiles(text):
        event("refused by TF305")
        assume(False)  # counted apart: N is the number of flows run on both sides
    same_decisions(text, plan)


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflow_blocks(tools=DIFF_TOOLS), plans)
def test_generated_flows_are_written_alike_or_refused_by_tf305(block, plan):
    text = _text(block)
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    if _compiles(text):
        same_decisions(text, plan)
    else:
        event("refused by TF305")


# ---------------------------------------------------------------------------------------------
#  The worked example, with AgentChat's own AssistantAgent
# ---------------------------------------------------------------------------------------------
EXAMPLE = ROOT / "examples" / "helpdesk.flow"


def test_the_worked_example_runs_with_assistant_agents_bound_to_model_clients():
    """docs/targets.md's binding, as written there: each participant's `model_client` replaced by a
    model client's component; the real AssistantAgent hands over by its `Handoff`s."""
    from autogen_agentchat.base import Team
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    team = json.loads(compile_target(EXAMPLE.read_text(encoding="utf-8"), "autogen-json", path=str(EXAMPLE)))
    assert team["provider"] == "autogen_agentchat.teams.Swarm"
    with pytest.raises(ModuleNotFoundError, match="turnflow.unbound"):
        Team.load_component(team)  # unbound: nothing runs by accident

    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def call(tool: str) -> CreateResult:
        return CreateResult(finish_reason="function_calls", content=[FunctionCall(id=tool, name=tool, arguments="{}")],
                            usage=usage, cached=False)

    replies = {"triage": [call("transfer_to_billing")], "billing": ["A refund is on its way.", call("answered")],
               "tech": [], "closer": ["Summary: a refund of 12 EUR is on its way."]}
    info = {"function_calling": True, "vision": False, "json_output": False, "family": "unknown",
            "structured_output": False}
    for p in team["config"]["participants"]:
        client = ReplayChatCompletionClient(replies[p["config"]["name"]], model_info=info)
        p["config"]["model_client"] = client.dump_component().model_dump()
    result = asyncio.run(Team.load_component(team).run(task="my invoice is wrong"))
    from autogen_agentchat.messages import BaseChatMessage

    speakers = [m.source for m in result.messages if isinstance(m, BaseChatMessage)][1:]
    assert speakers == ["triage", "billing", "billing", "closer"]
    assert close_reason(team, result) == "resolved"
    # the hub, with the same turns
    plan = [("tool", 4, 0, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, ""), ("tool", 4, 0, {}, [], 0, ""),
            ("text", 0, 0, {}, [], 0, "")]
    spec = turnflow.compile(EXAMPLE.read_text(encoding="utf-8"))[0]
    hub_speakers, _ctx, reason = run_hub(spec, plan, classic=True)
    assert (hub_speakers, reason) == (speakers, "resolved")


@pytest.mark.parametrize("flow, kind", [
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " * -> terminate \"done\" when text contains \"DONE\"\n otherwise -> next\n}\n", "RoundRobinGroupChat"),
    ("workflow w {\n participant a\n participant b\n participant c\n start a\n max_turns 4\n"
     " a -> b when text contains \"BILL\"\n a -> terminate \"other\"\n b -> c\n c -> terminate \"done\"\n}\n",
     "GraphFlow"),
])
def test_each_team_kind_is_chosen_where_it_decides_as_the_flow(flow, kind):
    doc = json.loads(compile_target(flow, "autogen-json"))
    assert doc["provider"] == f"autogen_agentchat.teams.{kind}" and doc["turnflow"]["team"] == kind
    assert compile_target(flow, "autogen-json") == compile_target(flow, "autogen-json")


@pytest.mark.parametrize("flow, line, lacks", [
    # a fan-out: both edges would fire on a text with both words
    ("workflow w {\n participant a\n participant b\n participant c\n start a\n max_turns 4\n"
     " a -> b when text contains \"BILL\"\n a -> c\n b -> terminate \"done\"\n c -> terminate \"done\"\n}\n",
     8, "activates every edge whose condition holds"),
    # a Swarm speaker handing over without a tool
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " handoff a -> b via t1\n b -> a\n otherwise -> stay\n}\n", 7, "routes by handoff tools alone"),
    # a terminate after the routing it would overtake
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " a -> b when text contains \"X\"\n a -> terminate \"done\" when text contains \"DONE\"\n"
     " a -> terminate \"other\"\n b -> terminate \"done\"\n}\n", 7, "must come before the speaker's routing"),
    # a text termination for one speaker: component JSON keeps no `sources`
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " a -> terminate \"done\" when text contains \"DONE\"\n otherwise -> next\n}\n", 6, "not its `sources`"),
    # the task message's source is `user`
    ("workflow w {\n participant user\n participant b\n start user\n max_turns 4\n"
     " user -> terminate \"done\"\n otherwise -> next\n}\n", 6, "whose source is `user`"),
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " a -> previous\n b -> terminate \"done\"\n}\n", 6, "speaker before the last one"),
    ("workflow w {\n participant a\n participant b\n start a\n max_turns 4\n"
     " a -> b when text contains \"X\" or text contains \"Y\"\n a -> terminate \"no\"\n b -> terminate \"done\"\n}\n",
     6, "no `and`, `or` or `not`"),
    # the task message's source is `user`, a node of the graph
    ("workflow w {\n participant user\n participant b\n start b\n max_turns 4\n"
     " user -> b\n b -> terminate \"done\"\n}\n", 6, "cannot have an edge"),
    ("workflow w {\n participant a\n participant b\n participant c\n start a\n a -> b when text contains \"X\"\n"
     " a -> terminate \"done\"\n b -> a\n c -> terminate \"done\"\n}\n", 6,
     "neither `max_turns` nor a termination condition"),
    ("workflow w {\n participant a\n participant b\n participant c\n start a\n max_turns 4\n a -> b\n b -> a\n"
     " c -> terminate \"done\"\n}\n", 7, "refuses a cycle of edges without a condition"),
])
def test_a_flow_no_component_decides_is_refused_at_its_rule(flow, line, lacks):
    with pytest.raises(CompileError) as exc:
        compile_target(flow, "autogen-json")
    found = [d for d in exc.value.diagnostics if d.code == "TF305"]
    assert found and found[0].span.line == line and lacks in found[0].message, exc.value.diagnostics
    assert all(d.code == "TF305" for d in exc.value.diagnostics if d.severity == "error")


SILENCED = [
    ("a -> terminate \"d\" when context.done == true  # turnflow: ignore[TF305]", 6, "no `and`, `or`, `not`"),
    ("a -> b when text contains \"x\" and text contains \"y\"  # turnflow: ignore[TF305]", 6, "no `and`, `or`, `not`"),
    ("a -> previous  # turnflow: ignore[TF305]", 6, "speaker before the last one"),
]


@pytest.mark.parametrize("rule,line,lacks", SILENCED)
def test_a_silenced_refusal_no_component_can_carry_is_a_positioned_failure(rule, line, lacks, tmp_path, capsys):
    """A TF305 silenced on a rule no team component can carry (a condition with `and` / `or` /
    `not`, or on context; `previous`) still has no JSON to write: the library raises
    `TargetError` and the command exits 1 with FILE:LINE:COL of the rule and what to change,
    never an internal error."""
    from turnflow.cli import main
    from turnflow.compiler.emit.targets import TargetError

    flow = ("workflow s {\n    participant a tools [t1]\n    participant b\n    start a\n    max_turns 6\n"
            f"    {rule}\n    a -> b\n    b -> a\n}}\n")
    with pytest.raises(TargetError) as exc:
        compile_target(flow, "autogen-json", path="s.flow")
    assert exc.value.span is not None and (exc.value.span.line, exc.value.span.column) == (line, 5)
    assert lacks in str(exc.value)
    path = tmp_path / "s.flow"
    path.write_text(flow, encoding="utf-8")
    assert main(["compile", str(path), "--target", "autogen-json", "-o", str(tmp_path / "s.json")]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:5:" in err and lacks in err and "--target autogen" in err, err
    assert "internal error" not in err and not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("cond,columns", [
    ("tool t1 or text contains \"x\"", [17]),                   # one `or`: one finding
    ("tool t1 and text contains \"x\"", [29]),                  # the rule's own `and`: at its second term
    ("not (tool t1 or tool t2 or tool t3)", [17, 22]),          # the `not` and the `or` inside it
    ("tool t1 and (tool t2 or text contains \"x\")", [30]),  # the `and` at its second term, the `or`: one place
])
def test_each_and_or_not_is_refused_once(cond, columns):
    """TF305 reports every `and` / `or` / `not` of a condition once, where it is: an `or` of n
    terms is one refusal, not one more at its second term (two at one place are one)."""
    flow = (f"workflow s {{\n    participant a tools [t1, t2, t3]\n    participant b\n    start a\n    max_turns 6\n"
            f"    a -> b when {cond}\n    b -> terminate\n}}\n")
    with pytest.raises(CompileError) as exc:
        compile_target(flow, "autogen-json")
    logic = [d for d in exc.value.diagnostics if d.code == "TF305" and "`and`, `or`, `not`" in d.message]
    assert [(d.span.line, d.span.column) for d in logic] == [(6, c) for c in columns], logic
