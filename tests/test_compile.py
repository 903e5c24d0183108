"""Compiler goldens as data: tests/fixtures/compile/<name>.flow compiles to
<name>.json (what `turnflow compile` prints) and decompiles back to
<name>.decompiled.flow. Every golden validates against the shipped schemas,
and every workflow graph loads in AG2 1.2.1 and re-serialises identically."""

import json
from pathlib import Path

import pytest

import turnflow
from golden import check_golden
from turnflow import schemas
from turnflow.cli import main
from turnflow.compiler.emit.spec import dumps
from turnflow.spec import parse_spec

ROOT = Path(__file__).parent / "fixtures" / "compile"
EXAMPLES = Path(__file__).parent.parent / "examples"
FLOWS = sorted(ROOT.glob("*.flow")) + sorted(EXAMPLES.glob("**/*.flow"))
FLOWS = [f for f in FLOWS if not f.name.endswith(".decompiled.flow")]
IDS = [str(f.relative_to(f.parents[1])) for f in FLOWS]


def golden_for(flow: Path, suffix: str) -> Path:
    folder = ROOT if flow.parent == ROOT else ROOT / "examples"
    folder.mkdir(exist_ok=True)
    return folder / (flow.stem + suffix)


@pytest.mark.parametrize("flow", FLOWS, ids=IDS)
def test_compile_golden(flow: Path, capsys, update_goldens):
    assert main(["compile", str(flow)]) == 0
    printed = capsys.readouterr().out
    check_golden(golden_for(flow, ".json"), printed, update_goldens)
    specs = json.loads(printed)
    assert dumps(specs) == printed  # canonical: sorted keys, 2-space indent, trailing newline
    schemas.validate("session-specs", specs)
    for spec in specs:
        schemas.validate_spec(spec)
        # the compiler emits plain data (no model per node): it is exactly the model's own dump
        assert parse_spec(spec).to_dict() == spec


@pytest.mark.parametrize("flow", FLOWS, ids=IDS)
def test_decompile_golden_round_trips(flow: Path, update_goldens):
    specs = turnflow.compile(flow.read_text(encoding="utf-8"), path=str(flow))
    text = turnflow.decompile(specs)
    check_golden(golden_for(flow, ".decompiled.flow"), text, update_goldens)
    assert turnflow.compile(text) == specs
    assert turnflow.decompile(turnflow.compile(text)) == text


@pytest.mark.parametrize("flow", FLOWS, ids=IDS)
def test_compiled_graphs_load_in_ag2(flow: Path):
    from ag2.network import TransitionGraph

    from turnflow.interop.ag2 import register_extensions

    register_extensions()
    for spec in turnflow.compile(flow.read_text(encoding="utf-8")):
        if spec["kind"] != "workflow":
            continue
        graph = spec["knobs"]["graph"]
        loaded = TransitionGraph.loads(graph)
        assert loaded.to_dict() == graph
        assert json.loads(loaded.dumps()) == graph
        assert TransitionGraph.loads(loaded.dumps()) == loaded


def test_compile_is_byte_stable(tmp_path, capsys):
    flow = ROOT / "every_construct.flow"
    outs = []
    for i in range(2):
        assert main(["compile", str(flow), "-o", str(tmp_path / f"out{i}.json")]) == 0
        outs.append((tmp_path / f"out{i}.json").read_bytes())
    assert capsys.readouterr().out == ""
    assert outs[0] == outs[1] == (ROOT / "every_construct.json").read_bytes()


def test_spec_mapping_of_the_language_reference_example():
    spec = turnflow.compile((ROOT / "support.flow").read_text(encoding="utf-8"))[0]
    graph = spec["knobs"]["graph"]
    assert list(graph) == ["initial_speaker", "transitions", "default_target", "max_turns"]
    assert graph["initial_speaker"] == "triage" and graph["max_turns"] == 12
    # single owner: the handoff is just tool_called
    assert graph["transitions"][0] == {"when": {"name": "tool_called", "args": {"tool_name": "transfer_to_billing"}},
                                       "then": {"name": "agent", "args": {"agent_id": "billing"}}, "priority": 0}
    # source test + term: all_of, source test first
    assert graph["transitions"][4]["when"] == {"name": "all_of", "args": {"conditions": [
        {"name": "from_speaker", "args": {"agent_id": "user"}},
        {"name": "context_equals", "args": {"key": "resolved", "value": True}}]}}
    assert spec["knobs"]["context_vars"] == {"resolved": False}
    assert spec["tools"][0] == {"owner": "triage", "name": "transfer_to_billing",
                                "description": "The question is about money", "target": "billing"}
    assert spec["participants"][0] == {"agent_id": "user", "role": "initiator", "order": 0,
                                       "description": "", "tools": []}


def test_mapping_details():
    spec = turnflow.compile((ROOT / "every_construct.flow").read_text(encoding="utf-8"))[0]
    trs = spec["knobs"]["graph"]["transitions"]
    by_target = [(t["when"]["name"], t["then"]) for t in trs]
    # submit is declared by writer and editor: the handoff needs the source test
    assert trs[1]["when"]["name"] == "all_of"
    assert by_target[3] == ("tool_called", {"name": "terminate", "args": {"reason": "rejected"}})
    assert [t["then"]["name"] for t in trs[4:7]] == ["stay", "round_robin", "revert_to_initiator"]
    assert trs[7]["when"] == {"name": "tool_called", "args": {"tool_name": "ask_planner"}}  # writer alone declares it
    assert trs[8]["priority"] == -5 and trs[13]["priority"] == 10
    assert trs[10]["when"] == {"name": "tool_called", "args": {"tool_name": "submit"}}  # `*`: no source test
    assert trs[11]["when"] == {"name": "text_contains", "args": {"text": "LGTM"}}
    assert trs[14]["when"] == {"name": "from_speaker", "args": {"agent_id": "writer"}}
    assert spec["knobs"]["graph"]["default_target"] == {"name": "round_robin", "args": {}}
    targets = {(t["owner"], t["name"]): t["target"] for t in spec["tools"]}
    assert targets[("editor", "reject")] == "terminate"
    assert targets[("publisher", "retry")] == "stay"
    assert targets[("publisher", "pass")] == "next"
    assert targets[("publisher", "report")] == "initiator"
    assert targets[("writer", "ask_planner")] is None
    writer = spec["participants"][1]
    assert writer["tools"] == ["ask_planner", "submit"]
    assert spec["participants"][0]["tools"] == ["assign"]


def test_other_kinds():
    ask, chat, panel, quiet = turnflow.compile((ROOT / "kinds.flow").read_text(encoding="utf-8"))
    assert ask["knobs"] == {} and chat["knobs"] == {}
    assert panel["knobs"] == {"ordering": "round_robin"} and quiet["knobs"] == {"ordering": "round_robin"}
    assert ask["expectations"] == [{"name": "reply_within", "params": {"seconds": 600}, "on_violation": "auto_close"}]
    assert ask["ttl_seconds"] == 3600 and chat["ttl_seconds"] is None
    assert panel["expectations"][1]["params"] == {"seconds": 1.5}
    assert [p["role"] for p in ask["participants"]] == ["initiator", "respondent"]
    assert ask["tools"] == [{"owner": "expert", "name": "lookup", "description": "", "target": None}]
    assert quiet["title"] is None and quiet["expectations"] == []


def test_max_turns_null_when_absent():
    spec = turnflow.compile((ROOT / "minimal.flow").read_text(encoding="utf-8"))[0]
    assert spec["knobs"]["graph"]["max_turns"] is None
    assert spec["knobs"]["graph"]["default_target"] == {"name": "terminate", "args": {"reason": "after_work"}}
    assert spec["knobs"]["context_vars"] == {}


# --------------------------------------------------------------------------
#  The command line
# --------------------------------------------------------------------------
BAD = """workflow w {
    participant a
    participant b
    start c
    a -> b
}
"""


def test_flow_with_errors_is_not_compiled(tmp_path, capsys):
    src = tmp_path / "bad.flow"
    src.write_text(BAD)
    out = tmp_path / "out.json"
    out.write_text("keep me")
    assert main(["compile", str(src), "-o", str(out)]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert f"{src}:4:11: TF102 error:" in cap.err
    assert "start c" in cap.err and "^" in cap.err
    assert out.read_text() == "keep me"
    with pytest.raises(turnflow.CompileError) as exc:
        turnflow.compile(BAD)
    assert exc.value.diagnostics[0].code == "TF102"


def test_profile_refuses_extensions(tmp_path, capsys):
    # two speakers with guarded rules: no built-in graph decides both turns exactly
    src = tmp_path / "two.flow"
    src.write_text((ROOT / "support.flow").read_text().replace("    billing -> user\n",
                                                                 "    billing -> user when context.resolved == true\n"
                                                                 "    billing -> triage\n"))
    assert main(["compile", str(src), "--profile", "ag2-builtin"]) == 1
    err = capsys.readouterr().err
    assert ":15:5: TF301 error:" in err and ":18:5: TF301 error:" in err and "`all_of`" in err
    with pytest.raises(turnflow.CompileError) as exc:
        turnflow.compile(src.read_text(), profile="ag2-builtin")
    assert [d.code for d in exc.value.diagnostics] == ["TF301", "TF301"]
    # `turnflow check` does not run the profile rule
    assert main(["check", str(src)]) == 0
    # one guarded speaker (the README's example): the profile emits built-in conditions instead
    assert main(["compile", str(ROOT / "support.flow"), "--profile", "ag2-builtin"]) == 0
    capsys.readouterr()
    minimal = (ROOT / "minimal.flow").read_text()
    assert turnflow.compile(minimal, profile="ag2-builtin") == turnflow.compile(minimal)


def test_block_and_knobs(capsys):
    kinds = str(ROOT / "kinds.flow")
    assert main(["compile", kinds, "--block", "panel"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "panel"
    assert main(["compile", kinds, "--block", "panel", "--knobs"]) == 0
    assert capsys.readouterr().out == '{\n  "ordering": "round_robin"\n}\n'
    assert main(["compile", kinds, "--block", "nope"]) == 2
    assert "no block `nope` (blocks: ask, chat, panel, quiet)" in capsys.readouterr().err
    assert main(["compile", kinds, "--knobs"]) == 2
    assert "--knobs needs --block NAME" in capsys.readouterr().err
    assert main(["compile", str(ROOT / "minimal.flow"), "--knobs"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"graph", "context_vars"}


def test_unreadable_input_is_a_usage_error(tmp_path, capsys):
    assert main(["compile", str(tmp_path / "missing.flow")]) == 2
    assert "no such file" in capsys.readouterr().err.lower()


def test_schema_command(capsys):
    assert main(["schema"]) == 0
    listed = capsys.readouterr().out
    for name in ("session-spec", "transition-graph", "workflow-knobs", "discussion-knobs",
                 "consulting-knobs", "conversation-knobs"):
        assert name in listed
    assert main(["schema", "transition-graph"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert main(["schema", "nope"]) == 2
    assert "unknown schema `nope`" in capsys.readouterr().err
