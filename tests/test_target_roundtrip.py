"""Round trips through `turnflow migrate` for the code targets that have no reader of their own
framework (docs/targets.md): a module `compile --target langgraph|autogen` wrote migrates back
(`migrate/compiled.py`) to a flow that compiles to the same module again, byte for byte — so it
decides every turn as the original flow did. Every example, and generated flows.

`--target autogen-json` has a reader of its framework: AutoGen team component JSON is what
`frameworks/autogen/reader_json.py` reads. The team it wrote migrates back to a flow with the same speaker graph
(participants, start, every speaker's successors and ends) that compiles to the same JSON again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings

import turnflow
from component_flows import component_blocks
from flow_strategies import workflow_blocks
from target_harness import without_context
from turnflow.compiler.emit.spec import CompileError
from turnflow.compiler.emit.targets import compile_target
from turnflow.dsl import ast
from turnflow.dsl.printer import print_flow
from turnflow.migrate import detect, migrate
from turnflow.migrate.compiled import _same_code  # equal up to how `and` / `or` chains nest

ROOT = Path(__file__).resolve().parents[1]
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "60"))  # the larger run: docs/targets.md
EXAMPLES = sorted((ROOT / "examples").glob("*.flow"))
WORKFLOWS = [(p, b.name.name) for p in EXAMPLES for b in turnflow.parse(p.read_text(encoding="utf-8")).blocks
             if b.kind == "workflow"]


def round_trip(text: str, target: str, block: str | None, path: str) -> tuple[str, str]:
    """(the module, the module compiled again from what migrate read back from it)."""
    module = compile_target(text, target, block=block, path=path)
    assert detect(module) == "compiled"
    back = migrate(module, "generated.py")
    assert back.family == "compiled" and not back.diagnostics
    return module, compile_target(back.text, target, path=path)


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b}" for p, b in WORKFLOWS])
def test_every_example_round_trips_through_langgraph(path, block):
    module, again = round_trip(path.read_text(encoding="utf-8"), "langgraph", block, path.name)
    assert again == module


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b}" for p, b in WORKFLOWS])
def test_every_example_round_trips_through_autogen_where_it_compiles(path, block):
    text = path.read_text(encoding="utf-8")
    try:
        compile_target(text, "autogen", block=block, path=path.name)
    except CompileError:  # context: refused by TF304 (tests/test_target_autogen.py); its routing alone below
        chosen = next(b for b in turnflow.parse(text).blocks if b.name.name == block)
        text, block = print_flow(ast.FlowFile(span=chosen.span, blocks=[without_context(chosen)])), None
    module, again = round_trip(text, "autogen", block, path.name)
    assert again == module


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflow_blocks())
def test_generated_flows_round_trip_through_langgraph(block):
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    try:
        compile_target(text, "langgraph", path="flow.flow")
    except CompileError:  # a construct LangGraph refuses (TF302)
        assume(False)
    module = compile_target(text, "langgraph", path="flow.flow")
    back = migrate(module, "generated.py")
    assert back.family == "compiled"
    try:
        again = compile_target(back.text, "langgraph", path="flow.flow")
    except CompileError as exc:
        # The module routes only by the tools each speaker owns, and resolves `initiator` when it
        # is written (the start speaker when no participant is marked). A flow whose way out is a
        # rule on a tool its speaker does not own, or an `initiator` target that could have been
        # another participant, reads back without it, and check then proves what the original
        # hid: the module can never end (TF201, TF202). migrate says so (TF409, below); refusing
        # it is right, it is not a loss.
        assert {d.code for d in exc.diagnostics if d.severity == "error"} <= {"TF201", "TF202"}, exc.diagnostics
        assert [d.code for d in back.diagnostics] == ["TF409"], back.diagnostics
        assume(False)
    assert not back.diagnostics
    assert _same_code(again, module)


def test_an_initiator_the_module_resolves_to_its_start_reads_back_as_a_flow_that_never_ends():
    """Without a marked initiator, `* -> initiator` may lead anywhere on the hub (TF110), so the flow
    below may end (through `b`). The module resolves `initiator` to its start speaker, `a`, when it
    is written (docs/targets.md): it routes `a -> a` forever. migrate reads that back and says the
    flow it read can never end, instead of passing it over."""
    text = (
        "workflow w {\n    participant a\n    participant b\n    start a\n    b -> terminate\n"
        "    handoff a -> a via t1\n    * -> initiator\n}\n"
    )
    assert not any(d.severity == "error" for d in turnflow.check(text))
    back = migrate(compile_target(text, "langgraph", path="flow.flow"), "generated.py")
    assert "    a -> a\n" in back.text
    [d] = back.diagnostics
    assert d.code == "TF409" and "TF201" in d.message
    with pytest.raises(CompileError):
        compile_target(back.text, "langgraph", path="flow.flow")


def test_a_hand_edited_router_is_refused_at_its_line():
    module = compile_target((ROOT / "examples" / "support.flow").read_text(), "langgraph", path="support.flow")
    edited = module.replace("    if tool == 'transfer_to_billing':", "    if len(text) > 3:")
    with pytest.raises(Exception) as exc:
        migrate(edited, "support_graph.py")
    [d] = exc.value.diagnostics
    assert d.code == "TF401" and "not one `turnflow compile` writes" in d.message
    assert d.span.line == edited[:edited.index("if len(text)")].count("\n") + 1


def test_an_edit_outside_the_tables_and_routers_is_said_at_its_line():
    """Only the tables and routers are read: anything else edited by hand is not in the flow, and
    migrate says so (TF409 at the first line that differs) instead of passing it over."""
    module = compile_target((ROOT / "examples" / "support.flow").read_text(), "langgraph", path="support.flow")
    old = '    turns = (state.get("turns") or 0) + 1'
    edited = module.replace(old, '    turns = (state.get("turns") or 0) + 2')
    back = migrate(edited, "support_graph.py")
    [d] = back.diagnostics
    assert d.code == "TF409" and "only its tables and routers were read" in d.message
    assert d.span.line == module[:module.index(old)].count("\n") + 1
    assert migrate(module, "support_graph.py").diagnostics == []



@pytest.mark.parametrize("table, value, said", [
    ("PARTICIPANTS", "5", "a tuple of names"),
    ("TOOLS", "3", "a dict of name to a tuple of tool names"),
    ("DESCRIPTIONS", "[1]", "a dict of name to text"),
    ("MAX_TURNS", "'12'", "an integer or None"),
])
def test_a_table_of_another_shape_is_refused_at_its_line(table, value, said):
    import re

    module = compile_target((ROOT / "examples" / "support.flow").read_text(), "langgraph", path="support.flow")
    # a table on one line, or one entry a line when it is long (pyroute.table)
    edited = re.sub(rf"^{table}\b(: [^=]*)? = (\{{\n(    .*\n)*\}}|.*)$", f"{table} = {value}", module, count=1,
                    flags=re.M)
    with pytest.raises(Exception) as exc:
        migrate(edited, "support_graph.py")
    [d] = exc.value.diagnostics
    assert d.code == "TF401" and said in d.message
    assert edited.splitlines()[d.span.line - 1] == f"{table} = {value}"


def speaker_graph(text: str) -> tuple:
    """(participants, start, max_turns, per speaker its successors: names or `end:REASON`) of the
    flow's only workflow, from the hub's dispatch table (`frameworks/autogen/writer_json.py`'s `table`)."""
    from turnflow.frameworks.autogen.writer_json import table
    from turnflow.spec import parse_spec

    spec = parse_spec(turnflow.compile(text)[0])
    order, start, rows = table(spec.participants, spec.knobs.graph)
    nexts = {s: frozenset(f"end:{r.then.reason}" if r.then.kind == "end" else r.then.name for r in rows[s])
             for s in order}
    return frozenset(order), start, spec.knobs.graph.max_turns, nexts


def json_round_trip(text: str, path: str) -> tuple[str, str, str]:
    """(the team JSON, the flow migrate read back from it, that flow compiled again)."""
    doc = compile_target(text, "autogen-json", path=path)
    assert detect(doc) == "autogen"
    back = migrate(doc, "team.json")
    assert back.family == "autogen" and not [d for d in back.diagnostics if d.severity != "info"], back.diagnostics
    return doc, back.text, compile_target(back.text, "autogen-json", path=path)


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b}" for p, b in WORKFLOWS])
def test_every_example_that_compiles_round_trips_through_autogen_json(path, block):
    text = path.read_text(encoding="utf-8")
    try:
        compile_target(text, "autogen-json", block=block, path=path.name)
    except CompileError as exc:  # the examples that keep context (TF305, tests/test_target_autogen_json.py)
        assert path.stem != "helpdesk" and {d.code for d in exc.diagnostics if d.severity == "error"} == {"TF305"}
        return
    chosen = next(b for b in turnflow.parse(text).blocks if b.name.name == block)
    text = print_flow(ast.FlowFile(span=chosen.span, blocks=[chosen]))
    doc, back, again = json_round_trip(text, path.name)
    assert speaker_graph(back) == speaker_graph(text)
    assert again == doc


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(component_blocks())
def test_generated_flows_round_trip_through_autogen_json(block):
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    try:
        compile_target(text, "autogen-json", path="flow.flow")
    except CompileError:  # no component team decides as the flow does (TF305)
        assume(False)
    doc, back, again = json_round_trip(text, "flow.flow")
    assert speaker_graph(back) == speaker_graph(text), back
    assert again == doc
