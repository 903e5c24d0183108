"""`compile --profile ag2-builtin` emits AG2's built-in conditions where they express the rules
exactly (frameworks/ag2/writer_builtin.py): the README's first example compiles for stock AG2, and
AG2's own WorkflowAdapter, loading the built-in graph (no extension condition in it), decides
every turn as the flow's rules say (the differential reference of test_ag2_differential)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnflow
from flow_strategies import workflow_blocks
from test_ag2_differential import run_differential
from turnflow.cli import main
from turnflow.frameworks.ag2.writer_builtin import builtin_transitions
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("ag2.network")


def _extensions(graph: dict) -> set[str]:
    from turnflow.compiler.emit.knobs import extensions_used

    return {n for t in graph["transitions"] for n in extensions_used(t["when"])}


def test_the_readme_example_compiles_for_stock_ag2(capsys):
    import json

    code = main(["compile", "--profile", "ag2-builtin", str(ROOT / "examples" / "support.flow")])
    out, err = capsys.readouterr()
    assert code == 0, err
    (spec,) = json.loads(out)
    graph = spec["knobs"]["graph"]
    assert _extensions(graph) == set()
    whens = [t["when"] for t in graph["transitions"]]
    assert {"name": "context_equals", "args": {"key": "resolved", "value": True}} in whens
    assert {"name": "from_speaker", "args": {"agent_id": "triage"}} in whens  # triage's turn: otherwise, explicitly
    # without the profile, the file-order graph with all_of, as before
    assert "all_of" in _extensions(turnflow.compile((ROOT / "examples" / "support.flow").read_text())[0]
                                   ["knobs"]["graph"])


def test_what_cannot_be_expressed_is_still_tf301():
    text = ("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 5\n"
            "    a -> b when context.x == 1\n    b -> a when context.y == 2\n    a -> terminate\n"
            "    b -> terminate\n}\n")  # two speakers with guarded rules
    codes = [d.code for d in turnflow.check(text) if d.code == "TF301"]
    assert codes == []  # check never runs the profile
    with pytest.raises(turnflow.CompileError) as exc:
        turnflow.compile(text, profile="ag2-builtin")
    assert [d.code for d in exc.value.diagnostics if d.code == "TF301"] == ["TF301", "TF301"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflow_blocks(tools=["t1", "t2"]), st.data())
def test_stock_ag2_follows_the_flow_with_the_built_in_graph(block, data):
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    if any(d.severity == "error" for d in turnflow.check(text)) or builtin_transitions(block) is None:
        return
    spec = turnflow.compile(text, profile="ag2-builtin")[0]
    assert _extensions(spec["knobs"]["graph"]) == set()
    run_differential(block, spec, data)


@st.composite
def one_guarded_speaker(draw):
    """A workflow whose rules the built-in rewrite can take: one speaker (`s`) with guarded rules
    (a context equality or a tool, priorities), the others with unconditional rules and handoffs
    of their own tools, and sometimes `otherwise`."""
    names = ["s", "a", "b"]
    targets = names + ['terminate "done"', "stay", "next", "initiator"]
    lines = ["workflow w {", "    participant s initiator tools [t1]", "    participant a tools [t2]",
             "    participant b", f"    start {draw(st.sampled_from(names))}", "    max_turns 12",
             "    context k1 = 0"]
    for _ in range(draw(st.integers(1, 4))):
        guard = draw(st.sampled_from(["context.k1 == 1", "context.k1 == 0", 'context.k2 == "x"', "tool t1"]))
        prio = draw(st.sampled_from(["", " priority -1", " priority 1"]))
        lines.append(f"    s -> {draw(st.sampled_from(targets))} when {guard}{prio}")
    if draw(st.booleans()):
        lines.append(f"    s -> {draw(st.sampled_from(targets))}")
    if draw(st.booleans()):
        lines.append(f'    handoff a -> {draw(st.sampled_from(["s", "b"]))} via t2 "go"')
    for who in ("a", "b"):
        if draw(st.booleans()):
            lines.append(f"    {who} -> {draw(st.sampled_from(targets))}" + draw(st.sampled_from(["", " priority 2"])))
    if draw(st.booleans()):
        lines.append(f"    * -> {draw(st.sampled_from(targets))} priority 5")
    if draw(st.booleans()):
        lines.append(f"    otherwise -> {draw(st.sampled_from(targets))}")
    return "\n".join(lines + ["}"]) + "\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_guarded_speaker(), st.data())
def test_stock_ag2_follows_flows_with_one_guarded_speaker(text, data):
    flow = turnflow.parse(text)
    if any(d.severity == "error" for d in turnflow.check(text)):
        return
    (block,) = flow.blocks
    assert builtin_transitions(block) is not None or "all_of" not in _extensions(
        turnflow.compile(text)[0]["knobs"]["graph"]), text
    spec = turnflow.compile(text, profile="ag2-builtin")[0]
    assert _extensions(spec["knobs"]["graph"]) == set()
    run_differential(block, spec, data)
