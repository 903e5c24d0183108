"""The speaker-graph IR, its statistics and `turnflow check --stats`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import turnflow
from turnflow.cli import main
from turnflow.compiler.speaker_graph import END, block_stats, build_graph
from turnflow.dsl import ast

REPO = Path(__file__).resolve().parent.parent

SUPPORT = """\
workflow support "Customer support triage" {
    participant user      initiator
    participant triage    "Classifies the request"
    participant billing   "Invoices, refunds, payment methods"
    participant tech      "Bugs, outages, how-to questions"

    start triage
    max_turns 12
    context resolved = false

    handoff triage -> billing via transfer_to_billing "The question is about money"
    handoff triage -> tech    via transfer_to_tech    "The question is technical"

    billing -> user
    tech    -> user
    user    -> terminate "resolved" when context.resolved == true
    user    -> triage

    otherwise -> terminate "after_work"
}
"""


def graph_of(text: str):
    return build_graph(turnflow.parse(text).blocks[0])


def test_support_graph_edges_rules_and_kinds():
    g = graph_of(SUPPORT)
    assert g.speaker_edges() == {
        ("triage", "billing"), ("triage", "tech"), ("triage", END),
        ("billing", "user"), ("tech", "user"),
        ("user", END), ("user", "triage"),
    }
    e = g.g.edges
    assert e["triage", "billing"]["kind"] == "maybe"
    assert isinstance(e["triage", "billing"]["rules"][0], ast.Handoff)
    assert e["triage", END]["kind"] == "otherwise"
    assert isinstance(e["triage", END]["rules"][0], ast.Otherwise)
    assert e["billing", "user"]["kind"] == "always"
    assert e["user", END]["kind"] == "maybe"
    assert g.start == "triage"
    assert g.reachable() == {"user", "triage", "billing", "tech"}


def test_implicit_otherwise_edge_has_rule_none():
    g = graph_of("workflow w {\n participant a\n participant b\n start a\n a -> b when text contains \"x\"\n"
                 " b -> terminate\n}\n")
    assert g.g.edges["a", END]["rules"] == [None]
    assert g.g.edges["a", END]["kind"] == "otherwise"


def test_edge_keeps_every_rule_in_evaluation_order():
    g = graph_of("workflow w {\n participant a\n participant b\n start a\n"
                 " a -> b when text contains \"x\"\n a -> b priority -1\n b -> terminate\n}\n")
    rules = g.g.edges["a", "b"]["rules"]
    assert [r.priority.value if r.priority else 0 for r in rules] == [-1]  # the always rule decides first
    assert g.g.edges["a", "b"]["kind"] == "always"


def test_stats_of_support():
    st = block_stats(turnflow.parse(SUPPORT).blocks[0])
    assert st == {"block": "support", "kind": "workflow", "line": 1, "participants": 4, "rules": 6,
                  "analysed": True, "reachable": 4, "fewest_turns": 1, "most_turns": 12, "max_turns": 12,
                  "capped": True}


def test_stats_most_turns_variants():
    acyclic = "workflow w {\n participant a\n participant b\n participant c\n start a\n%s a -> b\n b -> c\n c -> terminate\n}\n"
    assert block_stats(graph_of(acyclic % ""))["most_turns"] == 3
    assert block_stats(graph_of(acyclic % " max_turns 2\n"))["most_turns"] == 2
    assert block_stats(graph_of(acyclic % " max_turns 2\n"))["capped"] is True
    assert block_stats(graph_of(acyclic % " max_turns 3\n"))["capped"] is False
    loop = "workflow w {\n participant a\n participant b\n start a\n%s a -> b\n b -> a when text contains \"x\"\n}\n"
    assert block_stats(graph_of(loop % ""))["most_turns"] == "unbounded"
    assert block_stats(graph_of(loop % " max_turns 7\n"))["most_turns"] == 7
    never = "workflow w {\n participant a\n participant b\n start a\n a -> b\n b -> a\n}\n"
    assert block_stats(graph_of(never))["fewest_turns"] is None


def test_stats_non_workflow_block():
    flow = turnflow.parse("discussion d {\n participant a\n participant b\n ordering round_robin\n}\n")
    assert block_stats(flow.blocks[0]) == {"block": "d", "kind": "discussion", "line": 1, "participants": 2,
                                           "rules": 0}


def test_check_stats_text(tmp_path, capsys):
    f = tmp_path / "support.flow"
    f.write_text(SUPPORT + "discussion d {\n participant a\n participant b\n}\n"
                 "workflow bad {\n participant a\n participant b\n start a\n a -> nobody\n}\n")
    code = main(["check", "--stats", str(f)])
    out = capsys.readouterr().out
    assert code == 1  # TF102 in `bad`
    assert (f"{f}:1: workflow support: 4 participants, 6 rules, 4 reachable, fewest turns to END 1, "
            "most turns 12 (max_turns)\n") in out
    assert f"{f}:21: discussion d: 2 participants, 0 rules\n" in out
    assert f"{f}:25: workflow bad: 2 participants, 1 rules, not analysed (the block has errors)\n" in out


def test_check_stats_json(tmp_path, capsys):
    f = tmp_path / "loop.flow"
    f.write_text("workflow w {\n participant a\n participant b\n start a\n a -> b\n b -> a\n}\n")
    code = main(["check", "--stats", "--format", "json", str(f)])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [d["code"] for d in data if "code" in d] == ["TF201"]
    assert [d for d in data if "stats" in d] == [{"path": str(f), "line": 1, "stats": {
        "block": "w", "kind": "workflow", "line": 1, "participants": 2, "rules": 2, "analysed": True,
        "reachable": 2, "fewest_turns": None, "most_turns": "unbounded", "max_turns": None, "capped": False}}]


def test_check_stats_rejects_sarif(tmp_path, capsys):
    f = tmp_path / "x.flow"
    f.write_text(SUPPORT)
    assert main(["check", "--stats", "--format", "sarif", str(f)]) == 2
    assert "--graph-stats works with --format text or json" in capsys.readouterr().err


def test_check_without_stats_keeps_json_array(tmp_path):
    f = tmp_path / "x.flow"
    f.write_text(SUPPORT)
    proc = subprocess.run([sys.executable, "-m", "turnflow", "check", "--format", "json", str(f)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_graph_rules_skip_blocks_with_errors_only():
    text = ("workflow bad {\n participant a\n participant b\n start a\n a -> b\n b -> nobody\n}\n"
            "workflow good {\n participant a\n participant b\n start a\n a -> b\n b -> a\n}\n")
    codes = [(d.code, d.span.line) for d in turnflow.check(text)]
    assert ("TF102", 6) in codes
    assert ("TF201", 11) in codes
    assert not any(code.startswith("TF2") and line < 8 for code, line in codes)


def test_syntax_error_gets_only_syntax_diagnostics():
    diags = turnflow.check("workflow w {\n participant a\n participant b\n start a\n a -> \n}\n")
    assert {d.code for d in diags} == {"TF001"}


def test_suppression_of_graph_rule():
    text = "workflow w {\n participant a\n participant b\n start a  # turnflow: ignore[TF201]\n a -> b\n b -> a\n}\n"
    assert turnflow.check(text) == []


def test_a_graph_rule_suppression_in_a_block_not_analysed_is_not_called_unused():
    # the block has an error, so its graph rules do not run (docs/analysis.md); the TF203
    # suppression is still needed once the error is fixed, so it is not TF901 "silences nothing"
    text = ("workflow w {\n participant a\n participant b\n participant c # turnflow: ignore[TF203]\n"
            " start a\n a -> zz\n b -> terminate\n}\n")
    assert [(d.code, d.span.line) for d in turnflow.check(text)] == [("TF102", 6)]
    fixed = text.replace("a -> zz", "a -> b")
    assert turnflow.check(fixed) == []  # the suppression is used once the graph rules run
    # in an analysed block, or for a code that is not a graph rule, an unused one is still reported
    assert [d.code for d in turnflow.check(fixed.replace("[TF203]", "[TF203, TF204]"))] == ["TF901"]
    assert [(d.code, d.span.line) for d in turnflow.check(text.replace("[TF203]", "[TF101]"))] == [
        ("TF901", 4), ("TF102", 6)]


def test_build_graph_never_raises_on_blocks_with_errors():
    texts = [
        "workflow w {\n participant a\n a -> nobody\n}\n",
        "workflow w {\n start x\n * -> next\n otherwise -> initiator\n}\n",
        "workflow w {\n participant a\n participant a\n start a\n a -> stay\n}\n",
    ]
    for text in texts:
        flow = turnflow.parse(text)
        st = block_stats(flow.blocks[0])
        assert st["kind"] == "workflow"


def test_check_leaves_the_garbage_collector_as_it_found_it(monkeypatch):
    import gc

    from turnflow import process
    from turnflow.dsl.parser import gc_paused

    monkeypatch.setattr(process, "PAUSE_GC", True)  # as the CLI runs; a library call never pauses it

    assert gc.isenabled()
    turnflow.check(SUPPORT)
    turnflow.check("workflow {")  # syntax error path
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        turnflow.check(SUPPORT)
        assert not gc.isenabled()
    finally:
        gc.enable()
    try:
        with gc_paused():
            assert not gc.isenabled()
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.isenabled()


def _fixture_workflows():
    from turnflow.dsl.parser import parse_source

    for path in sorted((REPO / "tests" / "fixtures").rglob("*.flow")):
        flow, _ = parse_source(path.read_text(encoding="utf-8"))
        if flow is None:
            continue
        for block in flow.blocks:
            if block.kind == "workflow" and block.rules:
                yield path, block


def test_the_analysis_reads_the_spec_models_meaning():
    """What the speaker graph reads of each rule (its condition and target lowered to
    `turnflow.spec` kinds) is the JSON the spec models validate, decides like those models,
    and like the condition `turnflow compile` emits for it (which drops a `from_speaker`
    test that tool ownership implies), for every speaker of every fixture workflow."""
    from turnflow import spec
    from turnflow.compiler.emit import knobs

    checked = 0
    for path, block in _fixture_workflows():
        graph = build_graph(block)
        owners = knobs.tool_owners(block)
        for r in graph.rules:
            model = spec.CONDITION.validate_python(r.when.data())
            emitted = spec.CONDITION.validate_python(knobs.emitted_when(r, owners))
            assert spec.TransitionGraph.model_validate(
                {"initial_speaker": "x", "transitions": [], "default_target": r.then.data(), "max_turns": None})
            for s in graph.participants:
                owned = graph.owned[s] if graph.declares_tools else None
                verdict = r.when.decide(s, owned)
                assert model.decide(s, owned) is verdict, (path, r.stmt)
                assert emitted.decide(s, owned) is verdict, (path, r.stmt)
                checked += 1
    assert checked > 500


def test_the_emitted_graph_is_the_lowering_serialised():
    """`turnflow compile`'s TransitionGraph is `compiler/lower.py`'s lowering as JSON: each
    transition's target, priority and condition is the lowered rule's `.data()` (in file order),
    but for a `from_speaker` test that tool ownership implies, which is dropped (and only then)."""
    from turnflow.compiler.emit import knobs
    from turnflow.compiler.lower import Lowering

    dropped = kept = 0
    for path, block in _fixture_workflows():
        if not block.of_type(ast.Start):
            continue  # (transition_graph assumes a block without errors)
        owners = knobs.tool_owners(block)
        graph = knobs.transition_graph(block)
        lowered = [Lowering().rule(st, i) for i, st in enumerate(block.rules)]
        assert len(graph["transitions"]) == len(lowered)
        for t, r in zip(graph["transitions"], lowered):
            assert t["then"] == r.then.data() and t["priority"] == r.priority, (path, r.stmt)
            whole = r.when.data()
            if t["when"] == whole:
                kept += 1
                continue
            speaker, tool = whole["args"]["conditions"]
            assert whole["name"] == "all_of" and speaker == {"name": "from_speaker", "args": {"agent_id": r.source}}
            assert t["when"] == tool and tool["name"] == "tool_called", (path, r.stmt)
            assert owners[tool["args"]["tool_name"]] == [r.source], (path, r.stmt)
            dropped += 1
        otherwise = block.of_type(ast.Otherwise)
        assert graph["default_target"] == Lowering().target(otherwise[0].target if otherwise else None).data()
    assert dropped > 20 and kept > 200


def test_decide_reads_only_the_top_of_a_condition():
    """docs/analysis.md: `not tool t` may well hold, so it is *maybe* even for a speaker that
    does not own `t`; a top-level `tool t` it does not own makes the rule *never*."""
    g = graph_of("""\
workflow w {
    participant a tools [t]
    participant b tools [u]
    start a
    * -> a when not tool t
    * -> b when tool t
    otherwise -> terminate
}
""")
    assert g.g.edges["b", "a"]["kind"] == "maybe"
    assert not g.g.has_edge("b", "b")
    assert g.g.edges["a", "b"]["kind"] == "maybe"
