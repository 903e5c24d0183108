"""`turnflow graph`: golden DOT / Mermaid / JSON for the examples and for flows
with each graph finding; DOT renders with Graphviz when `dot` is installed."""

import json
import shutil
from pathlib import Path

import pytest

from turnflow.cli import main
from golden import check_golden

ROOT = Path(__file__).parent.parent
CASES = sorted((Path(__file__).parent / "fixtures" / "graph").glob("*.flow")) + sorted(
    (ROOT / "examples").glob("*.flow"))
GOLDEN = Path(__file__).parent / "fixtures" / "graph" / "golden"
FORMATS = {"dot": "dot", "mermaid": "mmd", "json": "json"}


def draw(capsys, *args):
    code = main(["graph", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_golden_pictures(case, fmt, capsys, update_goldens):
    code, out, err = draw(capsys, case, "--format", fmt)
    assert code == 0, err
    GOLDEN.mkdir(exist_ok=True)
    check_golden(GOLDEN / f"{case.stem}.{FORMATS[fmt]}", out, update_goldens)
    # deterministic: a second run gives the same bytes
    assert draw(capsys, case, "--format", fmt)[1] == out


def _picture(capsys, path):
    code, out, _ = draw(capsys, path, "--format", "json")
    assert code == 0
    return json.loads(out)


def test_findings_are_drawn(capsys):
    pic = _picture(capsys, Path(__file__).parent / "fixtures" / "graph" / "diagnostics.flow")
    nodes = {n["id"]: n for n in pic["nodes"]}
    assert nodes["editor"]["unreachable"] is False  # reachable through the tool
    assert nodes["ghost"]["unreachable"] is True
    assert nodes["lawyer"]["trapped"] and nodes["archivist"]["trapped"]
    assert not nodes["writer"]["trapped"]
    edges = {(e["from"], e["to"]): e for e in pic["edges"]}
    assert edges[("lawyer", "archivist")]["trapped"] and edges[("archivist", "lawyer")]["trapped"]
    assert edges[("writer", "editor")]["kind"] == "maybe"
    assert edges[("writer", "editor")]["label"] == "tool ask_editor"
    # unconditional, but after critic's conditional rules: taken only otherwise (issue 15 item 6)
    assert edges[("critic", "<END:approved>")]["kind"] == "otherwise"
    assert edges[("critic", "<END:approved>")]["label"] == "otherwise"
    # `critic -> writer` after the always rule is shadowed: drawn dotted with the finding
    shadowed = [e for e in pic["edges"] if e["kind"] == "shadowed"]
    assert [(e["from"], e["to"], e["rules"]) for e in shadowed] == [("critic", "writer", [19])]
    assert "<END:after_work>" not in nodes  # every speaker has an always rule or ends


def test_a_participant_check_calls_unreachable_is_greyed_even_when_an_edge_leads_to_it(tmp_path, capsys):
    # `a -> b` holds on no turn (TF212), so `check` reports `b` as TF203; before, the picture drew `b`
    # as reachable (the speaker graph keeps the edge), contradicting docs/graph.md
    flow = tmp_path / "dead.flow"
    flow.write_text("workflow w {\n    participant a\n    participant b\n    participant c\n    start a\n"
                    "    max_turns 4\n    context x = 0\n    a -> b when context.x > 5 and context.x < 2\n"
                    "    a -> c\n    b -> terminate\n    c -> terminate\n}\n")
    nodes = {n["id"]: n for n in _picture(capsys, flow)["nodes"]}
    assert nodes["b"]["unreachable"] is True and nodes["b"]["trapped"] is False
    assert nodes["a"]["unreachable"] is False and nodes["c"]["unreachable"] is False
    assert main(["check", "--format", "json", str(flow)]) == 0
    assert {(d["code"], d["line"]) for d in json.loads(capsys.readouterr().out)} >= {("TF203", 3), ("TF212", 8)}


def test_unreachable_and_end_per_reason(capsys):
    pic = _picture(capsys, Path(__file__).parent / "fixtures" / "graph" / "shadowed.flow")
    nodes = {n["id"]: n for n in pic["nodes"]}
    ends = sorted(n["label"] for n in pic["nodes"] if n["kind"] == "end")
    assert ends == ["done", "handled"]
    assert nodes["bot"]["start"] and nodes["user"]["initiator"]
    edges = {(e["from"], e["to"]): e for e in pic["edges"]}
    assert edges[("user", "<END:done>")]["label"] == 'text contains "bye" [priority -1]'


def test_block_selection_and_errors(tmp_path, capsys):
    code, out, _ = draw(capsys, ROOT / "examples" / "onboarding.flow", "--block", "kickoff", "--format", "json")
    assert code == 0 and json.loads(out)["block"] == "kickoff"
    code, _, err = draw(capsys, ROOT / "examples" / "onboarding.flow", "--block", "nope")
    assert code == 2 and "has no block `nope` (blocks: intake, welcome_call, kickoff)" in err
    bad = tmp_path / "bad.flow"
    bad.write_text("workflow w {\n    participant a\n}\n")
    code, out, err = draw(capsys, bad)
    assert code == 1 and "TF105" in err and out == ""


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` not installed (CI installs it)")
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_svg_renders_every_participant(case, tmp_path, capsys):
    import turnflow

    out = tmp_path / "pic.svg"
    code, _, err = draw(capsys, case, "--format", "svg", "-o", out)
    assert code == 0, err
    svg = out.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for block in turnflow.parse(case.read_text()).blocks:
        for p in block.participants:
            assert f">{p.name.name}</text>" in svg, p.name.name


def test_missing_dot_is_a_clear_message(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` on this PATH
    code, _, err = draw(capsys, ROOT / "examples" / "ask_expert.flow", "--format", "svg", "-o", tmp_path / "x.svg")
    assert code == 2
    assert "Graphviz's `dot` program is not installed" in err
    assert not (tmp_path / "x.svg").exists()


def test_docs_pictures_exist_for_every_example():
    """docs/pictures/<example>.svg is drawn from each example and shows all its participants."""
    import turnflow

    for example in sorted((ROOT / "examples").glob("*.flow")):
        svg = ROOT / "docs" / "pictures" / f"{example.stem}.svg"
        assert svg.exists(), f"missing {svg}: see docs/graph.md for the command that draws it"
        text = svg.read_text(encoding="utf-8")
        for block in turnflow.parse(example.read_text()).blocks:
            for p in block.participants:
                assert f">{p.name.name}</text>" in text, (svg.name, p.name.name)


def test_previous_and_compound_conditions_are_labelled(capsys):
    """`user -> previous` is drawn as dashed edges to everyone who can speak before `user`,
    each saying `(previous)`; `or` / `not` / comparisons are printed as written (canonically)."""
    case = Path(__file__).parent / "fixtures" / "graph" / "conditions_and_previous.flow"
    code, out, _err = draw(capsys, case, "--format", "json")
    assert code == 0
    edges = json.loads(out)["edges"]
    back = {e["to"]: e for e in edges if e["from"] == "user"}
    assert set(back) == {"planner", "coder"}
    assert all(e["kind"] == "maybe" and e["label"] == "always (previous)" for e in back.values())
    labels = {e["label"] for e in edges}
    assert "(tool give_up or context.attempts >= 3) and not context.approved == true" in labels
