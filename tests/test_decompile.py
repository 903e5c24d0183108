"""Decompile as data: tests/fixtures/decompile/<name>.json gives <name>.flow
(`turnflow decompile` stdout, exit 0) or, for error_* cases, <name>.error
(stderr, exit 1). A decompiled bare graph or knobs compiles back to the
graph AG2 itself would hold after `TransitionGraph.loads`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import turnflow
from golden import check_golden
from turnflow.cli import main
from turnflow.compiler.decompile import DecompileError, decompile_text, load_graph, mentioned_agents

ROOT = Path(__file__).parent / "fixtures" / "decompile"
CASES = sorted(ROOT.glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_decompile_fixture(case: Path, capsys, update_goldens, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = main(["decompile", case.name])
    cap = capsys.readouterr()
    if case.stem.startswith("error_"):
        assert code == 1 and cap.out == ""
        assert cap.err.startswith(case.name + ":")
        check_golden(case.with_suffix(".error"), cap.err, update_goldens)
        return
    assert code == 0, cap.err
    check_golden(case.with_suffix(".flow"), cap.out, update_goldens)
    data = json.loads(case.read_text())
    spec = turnflow.compile(cap.out)[0]
    if "initial_speaker" in data:
        from ag2.network import TransitionGraph

        from turnflow.interop.ag2 import register_extensions

        register_extensions()  # bare graphs may use turnflow's extensions
        assert spec["knobs"]["graph"] == TransitionGraph.loads(data).to_dict() == load_graph(data).to_dict()
    elif "graph" in data:
        assert spec["knobs"]["graph"] == load_graph(data["graph"]).to_dict()
        assert spec["knobs"]["context_vars"] == data["context_vars"]


def test_bare_graph_participants_in_order_of_appearance():
    graph = json.loads((ROOT / "ag2_graph.json").read_text())
    assert list(mentioned_agents(load_graph(graph).to_dict())) == ["planner", "reviewer", "coder"]
    text = decompile_text(graph)
    names = [line.split()[1] for line in text.splitlines() if line.strip().startswith("participant")]
    assert names == ["planner", "reviewer", "coder"]


def test_given_participants_and_name():
    graph = json.loads((ROOT / "error_round_robin_one_agent.json").read_text())
    text = decompile_text(graph, name="panel", participants=["a", "b", "c"])
    assert text.startswith("workflow panel {\n    participant a\n    participant b\n    participant c\n")
    assert "    * -> next\n" in text and "max_turns" not in text
    assert "otherwise -> terminate \"round_robin_complete\"" in text
    with pytest.raises(DecompileError) as exc:
        decompile_text(graph, participants=["b", "c"])
    assert exc.value.path == "$.initial_speaker" and "'a'" in exc.value.reason


def test_spec_list_single_spec_and_knobs_agree():
    specs = turnflow.compile((Path(__file__).parent / "fixtures" / "compile" / "support.flow").read_text())
    whole = decompile_text(specs)
    assert decompile_text(specs[0]) == whole
    from_knobs = decompile_text(specs[0]["knobs"], name="support")
    assert turnflow.compile(from_knobs)[0]["knobs"] == specs[0]["knobs"]


def test_inexpressible_spec_edits_name_their_path():
    specs = turnflow.compile((Path(__file__).parent / "fixtures" / "compile" / "support.flow").read_text())
    spec = json.loads(json.dumps(specs[0]))
    spec["labels"] = {"team": "x"}
    with pytest.raises(DecompileError) as exc:
        decompile_text(spec)
    assert exc.value.path == "$" and "labels" in exc.value.reason
    spec = json.loads(json.dumps(specs))
    spec[0]["tools"][0]["target"] = "tech"  # the handoff tool no longer matches its transition
    with pytest.raises(DecompileError) as exc:
        decompile_text(spec)
    assert exc.value.path == "$[0].tools[0]"
    spec = json.loads(json.dumps(specs))
    spec[0]["knobs"]["graph"]["transitions"][2]["then"]["args"]["agent_id"] = "ghost"
    with pytest.raises(DecompileError) as exc:
        decompile_text(spec)
    assert exc.value.path == "$[0].knobs.graph.transitions[2].then.args.agent_id"
    assert "not a participant" in exc.value.reason
    spec = json.loads(json.dumps(specs))
    spec.append(spec[0])
    with pytest.raises(DecompileError) as exc:
        decompile_text(spec)
    assert exc.value.path == "$[1].name"


def test_decompile_stdin_and_output_file(tmp_path):
    graph = (ROOT / "ag2_sequence.json").read_text()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent / "src")}
    out = tmp_path / "seq.flow"
    proc = subprocess.run([sys.executable, "-m", "turnflow", "decompile", "-", "--name", "seq", "-o", str(out)],
                          input=graph, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == (ROOT / "ag2_sequence.flow").read_text().replace("workflow main", "workflow seq")
    assert main(["check", str(out)]) == 0


def test_unreadable_file_is_a_usage_error(tmp_path, capsys):
    assert main(["decompile", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_empty_spec_list_is_an_empty_file():
    assert turnflow.compile("") == []
    assert decompile_text([]) == ""


def test_numbers_compare_by_value_but_booleans_are_not_numbers():
    spec = turnflow.compile((Path(__file__).parent / "fixtures" / "compile" / "kinds.flow").read_text())[0]
    spec["ttl_seconds"] = 3600.0
    assert "    ttl 1h\n" in decompile_text(spec)
    spec["ttl_seconds"] = True
    with pytest.raises(DecompileError) as exc:
        decompile_text(spec)
    assert exc.value.path == "$.ttl_seconds"


@pytest.mark.parametrize("case, where", [
    ("error_keyword_name.json", "8:23: $.transitions[0].when.args.agent_id: 'next' is a .flow keyword"),
    ("error_not_a_spec.json", "1:1: $: expected a list of session specs"),
])
def test_an_error_names_the_line_and_column_of_its_json_path(case, where, capsys, monkeypatch):
    """What cannot be decompiled is reported at its value, `FILE:LINE:COL: $.path: reason`, as editors
    and CI annotations read positions. Before: `FILE: $.path: reason`, a JSON path only."""
    monkeypatch.chdir(ROOT)
    assert main(["decompile", case]) == 1
    assert capsys.readouterr().err.startswith(f"{case}:{where}")
