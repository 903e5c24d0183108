"""`turnflow simulate`: determinism, the report, agreement with the static graph analysis,
and agreement of its fast path with the real hub."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from runtime_helpers import FakeClock
from turnflow import compile as compile_flow
from turnflow import parse
from turnflow.cli import main
from turnflow.runtime.agents import ScriptedAgent
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.simulate import Simulator, run_rng
from turnflow.runtime.store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.flow"))
SIM = Path(__file__).parent / "fixtures" / "simulate"
GUARDS = str(SIM / "guards.flow")


def simulate_json(capsys, *args):
    assert main(["simulate", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_same_seed_same_report_other_seed_other_report(capsys):
    path = str(ROOT / "examples" / "support.flow")
    a = simulate_json(capsys, path, "--runs", "300", "--seed", "7")
    b = simulate_json(capsys, path, "--runs", "300", "--seed", "7")
    c = simulate_json(capsys, path, "--runs", "300", "--seed", "8")
    assert a == b
    assert a["blocks"][0]["close_reasons"] != c["blocks"][0]["close_reasons"]
    assert main(["simulate", path, "--runs", "50", "--seed", "3"]) == 0
    t1 = capsys.readouterr().out
    assert main(["simulate", path, "--runs", "50", "--seed", "3"]) == 0
    assert capsys.readouterr().out == t1


def test_report_of_a_flow_with_dead_parts(capsys):
    rep = simulate_json(capsys, GUARDS, "--runs", "400")
    (b,) = rep["blocks"]
    assert b["runs"] == 400 and sum(b["close_reasons"].values()) == 400
    assert set(b["close_reasons"]) <= {"stop", "done", "max_turns", "finished"}
    assert b["cut_off_by_max_turns"] == b["close_reasons"]["max_turns"] > 0
    assert b["turns"]["min"] >= 1 and b["turns"]["max"] == 8 == b["max_turns"]
    assert b["participants_never_reached"] == ["e", "f"]
    assert [(r["line"], r["text"]) for r in b["rules_never_fired"]] == [
        (17, "a -> e"), (21, "e -> a"), (22, "f -> a")]
    assert main(["simulate", GUARDS, "--runs", "400"]) == 0
    text = capsys.readouterr().out
    assert "  participants never reached: e, f\n" in text
    assert f"    {GUARDS}:17: a -> e\n" in text
    assert "  cut off by max_turns: " in text and "(max_turns 8)" in text


def test_non_workflow_blocks_are_skipped_and_block_selects(capsys):
    rep = simulate_json(capsys, str(ROOT / "examples" / "onboarding.flow"), "--runs", "20")
    assert [(b["name"], "skipped" in b) for b in rep["blocks"]] == [
        ("intake", False), ("welcome_call", True), ("kickoff", True)]
    rep = simulate_json(capsys, str(ROOT / "examples" / "onboarding.flow"), "--runs", "20", "--block", "intake")
    assert [b["name"] for b in rep["blocks"]] == ["intake"]


def test_a_compiled_spec_file_is_simulated_too(tmp_path, capsys):
    spec = tmp_path / "g.json"
    spec.write_text(json.dumps(compile_flow(Path(GUARDS).read_text())))
    (b,) = simulate_json(capsys, str(spec), "--runs", "300")["blocks"]
    assert [r["text"] for r in b["rules_never_fired"]] == [
        "when speaker a then e", "when speaker e then a", "when speaker f then a"]
    assert main(["simulate", str(spec), "--runs", "300"]) == 0
    assert "    transitions[4]: when speaker a then e\n" in capsys.readouterr().out


@pytest.mark.parametrize("args, code, message", [
    (["nope.flow"], 2, "no such file or directory: `nope.flow`"),
    ([str(SIM)], 2, "is a directory; give a file"),
    ([GUARDS, "--runs", "0"], 2, "argument --runs: expected a positive whole number, got '0'"),
    ([GUARDS, "--block", "zzz"], 2, "has no block `zzz` (blocks: guards)"),
])
def test_bad_input(capsys, args, code, message):
    try:
        rc = main(["simulate", *args])
    except SystemExit as exc:  # argparse
        rc = exc.code
    assert rc == code
    assert message in capsys.readouterr().err


def test_a_flow_with_errors_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.flow"
    bad.write_text("workflow w {\n    participant a\n    start zz\n}\n")
    assert main(["simulate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "the flow has errors" in err and "Traceback" not in err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_file_without_blocks_says_so_as_run_does(tmp_path, capsys, fmt):
    # before: an empty line (text) or `"blocks": []` and exit 0, as if something had been simulated
    empty = tmp_path / "empty.flow"
    empty.write_text("# nothing here yet\n")
    assert main(["simulate", str(empty), "--format", fmt]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"turnflow simulate: {empty}: nothing to simulate: the file declares no blocks" in captured.err


@pytest.mark.parametrize("command", [["simulate"], ["run", "--agents", "AGENTS"]])
def test_a_unicode_name_the_hub_cannot_run_is_refused_at_its_position(tmp_path, capsys, command):
    # docs/language.md: `agént` is a NAME, and `turnflow check` passes the flow; the hub's ids are ASCII,
    # so run and simulate refuse it, but at the name's line and column, each such name at once
    flow = tmp_path / "u.flow"
    flow.write_text("workflow équipe {\n    participant agént\n    participant b\n    start agént\n"
                    "    agént -> b\n    b -> terminate\n}\n", encoding="utf-8")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  b: {kind: scripted, steps: []}\n")
    assert main(["check", str(flow)]) == 0
    capsys.readouterr()
    args = [str(agents) if a == "AGENTS" else a for a in command]
    assert main([*args, str(flow)]) == 1
    err = capsys.readouterr().err
    assert f"{flow}:1:10: block name `équipe` cannot run on the hub" in err
    assert f"{flow}:2:17: participant `agént` cannot run on the hub" in err
    assert "ASCII" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["simulate", "--runs", "5"], ["run", "--agents", "AGENTS", "--block", "w"],
                                     ["run", "--agents", "AGENTS", "--block", "w", "--tasks", "TASKS"]])
def test_only_the_blocks_that_run_need_names_the_hub_takes(tmp_path, capsys, command):
    # an ASCII workflow runs beside a block with Unicode names that this command does not run
    flow = tmp_path / "two.flow"
    flow.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n"
                    "    b -> terminate\n}\n\ndiscussion café {\n    participant agént\n    participant b\n}\n",
                    encoding="utf-8")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  a: {kind: scripted, steps: [{say: hi}]}\n  b: {kind: scripted, steps: [{say: ok}]}\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1", "task": "go"}\n')
    subst = {"AGENTS": str(agents), "TASKS": str(tasks)}
    assert main([*(subst.get(a, a) for a in command), str(flow)]) == 0, capsys.readouterr().err
    assert "cannot run on the hub" not in capsys.readouterr().err
    assert main(["run", "--agents", str(agents), "--block", "café", str(flow)]) == 1
    assert f"{flow}:9:12: block name `café` cannot run on the hub" in capsys.readouterr().err


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    assert main(["simulate", GUARDS, "--runs", "20"]) == 0
    assert capsys.readouterr().err == ""

    class TTY(io.StringIO):
        def isatty(self):
            return True
    fake = TTY()
    monkeypatch.setattr("sys.stderr", fake)
    assert main(["simulate", GUARDS, "--runs", "20"]) == 0
    assert "\rsimulate guards [" in fake.getvalue() and fake.getvalue().endswith("20/20\n")


# -- agreement with the static analysis (the graph IR) ---------------------------------------------

def _static(block):
    graph = pytest.importorskip("turnflow.compiler.speaker_graph")
    ir = graph.build_graph(block)
    reach = ir.reachable()
    firable = set()
    for s in reach:
        for _, _, data in ir.g.out_edges(s, data=True):
            firable.update(id(st) for st in data["rules"] if st is not None)
    unreached = [p for p in ir.participants if p not in reach]
    never = [st.span.line for st in block.rules if id(st) not in firable]
    return unreached, never


@pytest.mark.parametrize("path", EXAMPLES + sorted(SIM.glob("*.flow")), ids=lambda p: p.name)
def test_simulate_agrees_with_the_graph_analysis(path, capsys):
    flow = parse(path.read_text(), str(path))
    rep = simulate_json(capsys, str(path), "--runs", "600", "--seed", "1")
    for b in rep["blocks"]:
        if "skipped" in b:
            continue
        unreached, never = _static(flow.block(b["name"]))
        assert b["participants_never_reached"] == unreached
        assert [r["line"] for r in b["rules_never_fired"]] == never


# -- the fast path decides as the hub does ---------------------------------------------------------

def _replay_on_hub(spec, rounds):
    steps: dict[str, list] = {p["agent_id"]: [] for p in spec["participants"]}
    for speaker, rnd in rounds:
        step = {"say": rnd["body"]}
        if rnd["tool"]:
            step["tool"] = rnd["tool"]
        if rnd["set"]:
            step["set"] = rnd["set"]
        if rnd["kind"] == "finish":
            step["finish"] = rnd["reason"] or ""
        steps[speaker].append(step)
    agents = {n: ScriptedAgent(n, s or [{"say": "unused"}]) for n, s in steps.items()}

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        try:
            return await run_session(hub, spec, agents)
        finally:
            await hub.aclose()
    return asyncio.run(go())


@pytest.mark.parametrize("path", [ROOT / "examples" / "support.flow", ROOT / "examples" / "research_loop.flow",
                                  ROOT / "examples" / "onboarding.flow", SIM / "guards.flow"], ids=lambda p: p.name)
def test_simulated_sessions_end_the_same_on_the_real_hub(path):
    spec = next(s for s in compile_flow(path.read_text()) if s["kind"] == "workflow")
    sim = Simulator(spec)
    for run in range(15):
        rounds: list = []
        reason, turns = sim.run_one(run_rng(0, spec["name"], run), rounds=rounds)
        res = _replay_on_hub(spec, rounds)
        assert res.error is None
        assert (res.close_reason, len(res.turns)) == (reason, turns)
        assert [(t["speaker"], t["tool"], t["body"], t["set"]) for t in res.turns] == [
            (s, r["tool"], r["body"], r["set"]) for s, r in rounds]


@pytest.mark.parametrize("path", EXAMPLES + sorted(SIM.glob("*.flow")), ids=lambda p: p.name)
def test_simulate_agrees_with_turnflow_check(path, capsys):
    """TF203 names exactly the participants simulate never reaches; the rules it never saw fire
    are TF204's shadowed rules plus the rules of those unreachable participants."""
    import re

    from turnflow import check

    text = path.read_text()
    flow = parse(text, str(path))
    diags = check(text, str(path))
    rep = simulate_json(capsys, str(path), "--runs", "600", "--seed", "2")
    for b in rep["blocks"]:
        if "skipped" in b:
            continue
        block = flow.block(b["name"])
        lo, hi = block.span.line, block.span.end_line
        mine = [d for d in diags if lo <= d.span.line <= hi]
        tf203 = sorted(re.search(r"participant `([^`]+)`", d.message).group(1) for d in mine if d.code == "TF203")
        assert sorted(b["participants_never_reached"]) == tf203
        tf204 = {d.span.line for d in mine if d.code == "TF204"}
        orphaned = {st.span.line for st in block.rules
                    if st.source is not None and st.source.name in tf203}
        assert {r["line"] for r in b["rules_never_fired"]} == tf204 | orphaned


@pytest.mark.parametrize("spec, message", [
    ({"kind": "workflow", "participants": []}, "needs at least 2 participants, got 0"),
    ({"kind": "workflow", "participants": [{"x": 1}]}, "invalid agent id None"),
    ({"kind": "workflow", "name": "w", "participants": [{"agent_id": "a"}, {"agent_id": "b"}],
      "knobs": {"graph": {"initial_speaker": "a", "transitions": [{"when": {"name": "sometimes"}, "then": {}}]}}},
     "no transition condition named 'sometimes'"),
])
def test_a_bad_spec_is_a_clear_error(tmp_path, capsys, spec, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    assert main(["simulate", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err


def test_a_flow_that_never_ends_is_cut_by_the_simulation_cap(tmp_path, capsys):
    spec = {"kind": "workflow", "name": "loop", "participants": [{"agent_id": "a"}, {"agent_id": "b"}],
            "knobs": {"graph": {"initial_speaker": "a", "transitions": [
                {"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}}}]}}}
    sim = Simulator(spec, finish_p=0.0, cap=50)
    rep = sim.run(3, 0)
    assert rep.close_reasons == {"<simulation cap>": 3} and rep.turns == [50, 50, 50]


def test_property_the_fast_path_decides_as_the_hub_on_generated_workflows():
    """Generated workflows (tests/flow_strategies.py): every simulated session, replayed on a
    real hub by scripted agents, takes the same turns and ends with the same reason."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from flow_strategies import workflow_blocks
    from turnflow.dsl import ast
    from turnflow.source import Span

    @settings(max_examples=60, deadline=None)
    @given(workflow_blocks(always_max_turns=True), st.integers(0, 2 ** 16))
    def prop(block, seed):
        (spec,) = compile_flow(ast.FlowFile(span=Span.point(), blocks=[block]))
        sim = Simulator(spec)
        for run in range(2):
            rounds: list = []
            reason, turns = sim.run_one(run_rng(seed, "w", run), rounds=rounds)
            res = _replay_on_hub(spec, rounds)
            assert res.error is None
            assert (res.close_reason, len(res.turns)) == (reason, turns)
            assert [t["speaker"] for t in res.turns] == [s for s, _ in rounds]
    prop()


@pytest.mark.parametrize("bound", ["100000000000", "1e300"])
def test_a_huge_length_bound_is_simulated_without_building_the_string(bound, tmp_path, capsys):
    """`len(context.k) >= 100000000000`: the random agent's witnesses around a length bound are
    strings of at most LEN_WITNESS_CAP characters, not of the bound's length (a MemoryError, an
    OverflowError, or gigabytes allocated, before)."""
    path = tmp_path / "big.flow"
    path.write_text("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 3\n"
                    f"    a -> b when len(context.k) >= {bound}\n    a -> terminate \"short\"\n    b -> a\n}}\n",
                    encoding="utf-8")
    rep = simulate_json(capsys, str(path), "--runs", "20")
    assert rep["blocks"][0]["close_reasons"] == {"short": 20}
    from turnflow.runtime.simulate import LEN_WITNESS_CAP

    sim = Simulator(compile_flow(path.read_text(encoding="utf-8"))[0])
    assert sim.context_values["k"][:-1] == ["x" * LEN_WITNESS_CAP]
