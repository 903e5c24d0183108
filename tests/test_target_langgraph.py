"""`turnflow compile --target langgraph`: the generated module, run by real LangGraph, makes
exactly the decisions turnflow's hub makes (docs/targets.md).

The differential: generated flows (tests/flow_strategies.py, their `expect` / `ttl` dropped:
TF302 refuses those for this target) and every example's workflow, each run with the same
scripted turn plan on turnflow's hub (`FunctionAgent`s, in-memory store) and in LangGraph with
the compiled module; the speaker sequence, the context after every turn and the close reason
must be equal. The suite runs 60 generated flows; the larger run (docs/targets.md):

    TURNFLOW_TARGET_EXAMPLES=500 python3 -m pytest -q -p no:cacheprovider tests/test_target_langgraph.py
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph")

import turnflow  # noqa: E402
from flow_strategies import workflow_blocks  # noqa: E402
from target_harness import DIFF_TOOLS, load_module, plans, run_hub, step  # noqa: E402
from turnflow.compiler.emit.targets import compile_target  # noqa: E402
from turnflow.compiler.emit.spec import CompileError  # noqa: E402
from turnflow.dsl import ast  # noqa: E402
from turnflow.dsl.printer import print_flow  # noqa: E402

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted(ROOT.glob("examples/*.flow"))
N = int(os.environ.get("TURNFLOW_TARGET_EXAMPLES", "60"))


def run_langgraph(source: str, plan: list):
    """The compiled module run by LangGraph with agents following `plan`."""
    mod = load_module(source)
    order = list(mod.PARTICIPANTS)
    owned = {p: list(mod.TOOLS[p]) for p in order}

    def agent(name):
        return lambda state: step(plan, state["turns"], name, order, owned)

    final = mod.build({p: agent(p) for p in order}).invoke(mod.initial_state("task"))
    return ([t["speaker"] for t in final["transcript"]], [t["context"] for t in final["transcript"]],
            final["reason"])


@functools.lru_cache(maxsize=16)
def _compiled(text: str, block: str) -> tuple[str, str]:
    """`block`'s spec (as JSON: each run gets its own copy) and its LangGraph module: compiled
    once per text, an example's for its 25 plans."""
    spec = next(s for s in turnflow.compile(text) if s["name"] == block)
    return json.dumps(spec), compile_target(text, "langgraph", block=block)


def same_decisions(text: str, block: str, plan: list) -> None:
    spec, source = _compiled(text, block)
    hub = run_hub(json.loads(spec), plan)
    graph = run_langgraph(source, plan)
    assert graph[0] == hub[0], "speaker sequences differ"
    assert graph[1] == hub[1], "context after a turn differs"
    assert graph[2] == hub[2], "close reasons differ"
    event(f"closed by {hub[2]}")
    event(f"turns: {min(len(hub[0]), 10)}{'+' if len(hub[0]) >= 10 else ''}")


def _routing_only(block: ast.Block) -> ast.Block:
    keep = [s for s in block.statements if not isinstance(s, (ast.Expect, ast.Ttl))]
    return ast.Block(span=block.span, kind=block.kind, kind_span=block.kind_span, name=block.name,
                     title=block.title, statements=keep, close_span=block.close_span)


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_blocks(tools=DIFF_TOOLS), plans)
def test_generated_flows_decide_alike_in_langgraph_and_on_the_hub(block, plan):
    block = _routing_only(block)
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    assume(not any(d.severity == "error" for d in turnflow.check(text)))
    same_decisions(text, block.name.name, plan)


WORKFLOWS = [(p, b["name"]) for p in EXAMPLES for b in turnflow.compile(p.read_text(encoding="utf-8"))
             if b["kind"] == "workflow"]


@pytest.mark.parametrize("path,block", WORKFLOWS, ids=[f"{p.stem}:{b}" for p, b in WORKFLOWS])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans)
def test_every_example_decides_alike_in_langgraph_and_on_the_hub(path, block, plan):
    same_decisions(path.read_text(encoding="utf-8"), block, plan)


def test_support_graph_from_the_command_line_runs_the_hubs_decisions(tmp_path):
    """`turnflow compile examples/support.flow --target langgraph -o support_graph.py`, then the
    module imported by a plain Python process (no turnflow import at run time) and run."""
    out = tmp_path / "support_graph.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-m", "turnflow", "compile", str(ROOT / "examples/support.flow"),
                    "--target", "langgraph", "-o", str(out)], check=True, env=env)
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "from support_graph import build, initial_state\n"
        "steps = iter([{'say': 'my invoice is wrong', 'tool': 'transfer_to_billing'}, 'refund sent',\n"
        "              'thanks, still broken', {'say': 'it is a bug', 'tool': 'transfer_to_tech'}, 'fixed',\n"
        "              {'say': 'all good', 'set': {'resolved': True}}])\n"
        "agents = {p: (lambda state: next(steps)) for p in ('user', 'triage', 'billing', 'tech')}\n"
        "final = build(agents).invoke(initial_state('help'))\n"
        "assert 'turnflow' not in sys.modules\n"
        "print(' '.join(t['speaker'] for t in final['transcript']), final['reason'], final['context'])\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[0] == "triage billing user triage tech user resolved {'resolved': True}"
    # the hub takes the same six turns and closes for the same reason
    plan = [("tool", 0, 0, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, ""),
            ("tool", 1, 1, {}, [], 0, ""), ("text", 1, 0, {}, [], 0, ""),
            ("context", 1, 0, {"resolved": True}, [], 0, "")]
    text = (ROOT / "examples/support.flow").read_text(encoding="utf-8")
    speakers, context, reason = run_hub(turnflow.compile(text)[0], plan)
    assert " ".join(speakers) == "triage billing user triage tech user" and reason == "resolved"
    assert context[-1] == {"resolved": True}


def test_output_is_byte_identical_and_names_no_folder(tmp_path):
    text = (ROOT / "examples/support.flow").read_text(encoding="utf-8")
    a = compile_target(text, "langgraph", path=str(ROOT / "examples/support.flow"))
    b = compile_target(text, "langgraph", path="elsewhere/support.flow")
    assert a == b and "support.flow" in a and "import turnflow" not in a and "from turnflow" not in a


def test_a_flow_langgraph_cannot_run_exactly_is_refused_with_positions():
    text = ("workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 4\n"
            "    a -> b\n    expect turn_within 5m auto_close\n}\n")
    with pytest.raises(CompileError) as exc:
        compile_target(text, "langgraph", path="w.flow")
    [d] = [d for d in exc.value.diagnostics if d.severity == "error"]
    assert (d.code, d.span.line, d.span.column) == ("TF302", 7, 5) and "turn deadlines" in d.message
    # silenced knowingly, it compiles (the user accepted that deadlines do not apply)
    quiet = text.replace("auto_close\n", "auto_close  # turnflow: ignore[TF302]\n")
    assert "def build" in compile_target(quiet, "langgraph")


def test_choice_of_block_and_other_kinds():
    text = (ROOT / "examples/onboarding.flow").read_text(encoding="utf-8")
    with pytest.raises(LookupError, match="name one with --block"):
        compile_target(text, "langgraph")
    assert "def build" in compile_target(text, "langgraph", block="intake")  # the discussion elsewhere is not in the way
    with pytest.raises(CompileError) as exc:
        compile_target(text, "langgraph", block="kickoff")
    assert [d.code for d in exc.value.diagnostics if d.severity == "error"] == ["TF302"]


def test_a_silenced_refusal_of_another_kind_is_still_no_workflow(tmp_path, capsys):
    """`discussion d { ... }  # turnflow: ignore[TF302]` silences the finding, yet there is no
    speaker graph to write: a clear failure, never a traceback."""
    from turnflow.cli import main

    text = "discussion d {  # turnflow: ignore[TF302]\n    participant a\n    participant b\n}\n"
    with pytest.raises(LookupError, match="is a discussion"):
        compile_target(text, "langgraph")
    path = tmp_path / "d.flow"
    path.write_text(text, encoding="utf-8")
    assert main(["compile", str(path), "--target", "langgraph"]) == 2
    err = capsys.readouterr().err
    assert "is a discussion: a target compiles a workflow block" in err
    assert f"{path}:1:1: " in err, err  # where the block is, as every refusal says


@pytest.mark.parametrize("depth", [110, 140])
def test_a_condition_too_deep_for_python_is_a_clear_failure(depth, tmp_path, capsys):
    """Nested 110 deep the generated expression passes the spec model but not Python's parser; 140
    deep the spec model refuses it. Either way: a message and exit 1, never a traceback or a module
    that does not import."""
    from turnflow.cli import main
    from turnflow.compiler.emit.targets import TargetError

    cond = 'text contains "q"'
    for i in range(depth):
        cond = f'not (text contains "x{i}" or {cond})'
    text = (f"workflow w {{\n    participant a\n    participant b\n    start a\n    max_turns 3\n"
            f"    a -> b when {cond}\n    b -> a\n}}\n")
    from turnflow.compiler.emit.spec import CompileError
    with pytest.raises((TargetError, CompileError), match="cannot write `w` for langgraph|nested too deeply"):
        compile_target(text, "langgraph")
    path = tmp_path / "deep.flow"
    path.write_text(text, encoding="utf-8")
    assert main(["compile", str(path), "--target", "langgraph", "-o", str(tmp_path / "out.py")]) == 1
    err = capsys.readouterr().err
    assert ("cannot write `w` for langgraph" in err or "TF002" in err and "nested too deeply" in err) \
        and not (tmp_path / "out.py").exists()


@pytest.mark.parametrize("target", ["langgraph", "ag2-groupchat", "autogen"])
def test_hostile_titles_and_file_names_stay_inside_the_docstring(target, tmp_path):
    """A title or file name with quotes, backslashes, control characters or a lone surrogate
    cannot end the generated docstring early or make the file unwritable."""
    from flow_strategies import string

    block = turnflow.parse("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n}\n").blocks[0]
    title = 'x """ y \\ z \x00\x1b \ud800 \u00e9 "'
    block = ast.Block(span=block.span, kind=block.kind, kind_span=block.kind_span, name=block.name,
                      title=string(title), statements=block.statements, close_span=block.close_span)
    text = print_flow(ast.FlowFile(span=block.span, blocks=[block]))
    code = compile_target(text, target, path='my "flows"/we\\ird """.flow')
    import ast as pyast

    doc = pyast.get_docstring(pyast.parse(code))
    assert title in doc and 'we\\ird """.flow' in doc
    (tmp_path / "out.py").write_text(code, encoding="utf-8")


def test_bad_steps_are_refused_by_the_module():
    mod = load_module(compile_target((ROOT / "examples/support.flow").read_text(encoding="utf-8"), "langgraph"))
    for bad, words in [({"tool": "transfer_to_tech", "say": 1}, "must be a string"), ({}, "empty step"),
                       ({"tool": "nope"}, "no routing tool"), ({"handoff": "ghost"}, "not a participant"),
                       ({"sing": "x"}, "unknown step key")]:
        graph = mod.build({p: (lambda state, bad=bad: bad) for p in mod.PARTICIPANTS})
        with pytest.raises(mod.StepError, match=words):
            graph.invoke(mod.initial_state())
    with pytest.raises(ValueError, match="missing: tech"):
        mod.build({p: None for p in mod.PARTICIPANTS if p != "tech"})


@given(st.data())
@settings(max_examples=1, deadline=None)
def test_compare_helper_is_the_languages(data):
    """The `_compare` emitted into modules is `turnflow.spec.meaning.compare`, value for value."""
    from turnflow.compiler.emit.pyroute import COMPARE_SOURCE
    from turnflow.spec.meaning import compare

    ns: dict = {}
    exec(COMPARE_SOURCE, ns)  # noqa: S102
    values = [None, True, False, 0, 1, 1.0, -2.5, "", "a", "b", [], [1], {}, {"a": 1}]
    for a in values:
        for v in values:
            for op in ("==", "!=", "<", "<=", ">", ">="):
                for n in (False, True):
                    assert ns["_compare"](a, op, v, n) == compare(a, op, v, n), (a, op, v, n)


def test_docs_targets_page_is_generated_from_the_writers_tables():
    """docs/targets.md comes from the same `TABLE`s the writers and their TF3xx checks use."""
    from turnflow.compiler.emit.targets_doc import DOC, render

    assert DOC.read_text(encoding="utf-8") == render(), \
        "docs/targets.md is stale: python -m turnflow.compiler.emit.targets_doc --write"


def test_every_construct_has_an_entry_in_every_target_table():
    from turnflow.compiler.emit.constructs import KEYS
    from turnflow.compiler.emit.targets import TARGETS, writer
    from turnflow.diagnostics.codes import TARGETS as CODE_TARGETS

    assert TARGETS == CODE_TARGETS
    for t in TARGETS:
        assert set(writer(t).TABLE) == set(KEYS), t


def test_the_worked_example_of_the_docs_runs(tmp_path, monkeypatch):
    """docs/targets.md's LangGraph example, run as written against the compiled support flow."""
    import re

    doc = (ROOT / "docs/targets.md").read_text(encoding="utf-8")
    section = doc.split("## Worked example: the support triage flow as a LangGraph graph", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    text = (ROOT / "examples/support.flow").read_text(encoding="utf-8")
    (tmp_path / "support_graph.py").write_text(compile_target(text, "langgraph"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("support_graph", None)
    ns: dict = {}
    exec(code, ns)  # noqa: S102 - the documentation's own example
    final = ns["final"]
    shown = dict(re.findall(r"^(\[t\[\"speaker\"\].*?|final\[\"reason\"\].*?)\s+# (.*)$", code, re.M))
    assert repr([t["speaker"] for t in final["transcript"]]) == shown[next(k for k in shown if k.startswith("[t"))]
    assert repr((final["reason"], final["context"])) == shown[next(k for k in shown if k.startswith("final"))]


def test_an_empty_file_is_told_it_has_no_block(tmp_path, capsys):
    from turnflow.cli import main

    path = tmp_path / "empty.flow"
    path.write_text("", encoding="utf-8")
    assert main(["compile", str(path), "--target", "langgraph"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("has none") and "--block" not in err.split("compiles one block")[1]


@pytest.mark.parametrize("target,name,lacks", [
    ("langgraph", "__start__", "LangGraph reserves the node names"),
    ("langgraph", "__end__", "LangGraph reserves the node names"),
    ("autogen", "bot-1", "AgentChat requires agent names to be Python identifiers"),
    ("autogen-json", "bot-1", "AgentChat requires agent names to be Python identifiers"),
])
def test_a_silenced_name_refusal_still_writes_nothing(target, name, lacks, tmp_path, capsys):
    """A participant name the framework itself refuses (LangGraph's reserved node names,
    AgentChat's identifier rule) stays unusable when its TF30x is silenced: the module would fail
    in `build()` / `load_component` whatever the user's agents. Nothing is written; the command
    exits 1 at the participant's FILE:LINE:COL, saying to rename it."""
    from turnflow.cli import main
    from turnflow.compiler.emit.targets import TargetError

    flow = (f"workflow s {{\n    participant a\n    participant {name}  # turnflow: ignore\n    start a\n"
            f"    max_turns 4\n    a -> {name}\n    {name} -> terminate \"done\"\n}}\n")
    with pytest.raises(TargetError) as exc:
        compile_target(flow, target, path="s.flow")
    assert exc.value.span is not None and (exc.value.span.line, exc.value.span.column) == (3, 17)
    assert lacks in str(exc.value) and "rename" in str(exc.value)
    path = tmp_path / "s.flow"
    path.write_text(flow, encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["compile", str(path), "--target", target, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3:17:" in err and lacks in err and "internal error" not in err and not out.exists(), err
