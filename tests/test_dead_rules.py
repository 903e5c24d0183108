"""`turnflow check` proves dead rules, and is complete against an exhaustive exploration.

The exploration (tests/exhaustive_runs.py) does not use `turnflow.compiler`: it drives the runtime's own reading of
a compiled workflow (`Simulator`: the spec models' `holds` / `resolve`, the evaluation order,
the creator, each participant's tool pool) over EVERY choice an agent has on a turn — no tool
or each tool it may call, a body text containing any set of the conditions' strings, and a
value for every context key the conditions read, from a generous set of values around every
literal the flow names — and over every run, state by state ((speaker, who spoke before),
breadth-first, cut at `max_turns`). A rule "fires" when some reachable turn makes it the first
rule that holds.

Both directions must hold on every generated flow: each rule the exploration never fires is
reported by `check` (TF204 shadowed, TF207 undeclared tool, TF212 impossible condition, or its
source is unreachable: TF203, or the silent initiator: TF213), and each rule `check` reports
dead is never fired.

    PYTHONPATH=src python3 -m pytest -q -p no:cacheprovider tests/test_dead_rules.py              # 150 flows
    TURNFLOW_DEAD_RULES_EXAMPLES=2500 PYTHONPATH=src python3 -m pytest -q -p no:cacheprovider \
        tests/test_dead_rules.py -k exhaustive --hypothesis-show-statistics   # how many were compared
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

import turnflow
from exhaustive_runs import Exploration
from flow_strategies import workflow_blocks
from turnflow.dsl import ast, printer

EXAMPLES = int(os.environ.get("TURNFLOW_DEAD_RULES_EXAMPLES", "150"))
FIXTURES = Path(__file__).parent / "fixtures" / "dead_rules"
DEAD_CODES = {"TF204", "TF207", "TF212"}


# --------------------------------------------------------------------------------------------
#  What check reports dead
# --------------------------------------------------------------------------------------------
def reported_dead(block, diags):
    """Indexes (in `block.rules`, file order) of the rules `check` reports as never firing."""
    by_line = {}
    for d in diags:
        by_line.setdefault(d.span.line, set()).add(d.code)
    silent = {p.name.name for p in block.participants
              if {"TF203", "TF213"} & by_line.get(p.name.span.line, set())}
    # TF207 says "dead" only when the block declares tools; else it flags a tool nobody declares
    declares = any(p.tools for p in block.participants) or bool(block.of_type(ast.Handoff))
    codes = DEAD_CODES if declares else DEAD_CODES - {"TF207"}
    out = set()
    for i, st in enumerate(block.rules):
        if by_line.get(st.span.line, set()) & (codes | {"TF203"}):
            out.add(i)
        elif st.source is not None and st.source.name in silent:
            out.add(i)
    return out


def differences(text):
    """Rules the exploration never fires that check does not report, and the reverse."""
    flow = turnflow.parse(text)
    diags = turnflow.check(text)
    if any(d.severity == "error" and not d.code.startswith("TF2") for d in diags):
        return None
    block = flow.blocks[0]
    spec = turnflow.compile(text)[0] if not any(d.severity == "error" for d in diags) else \
        _compile_anyway(block)
    ex = Exploration(spec)
    never = {i for i in range(len(block.rules)) if not ex.fired_on_some_run(i)}
    dead = reported_dead(block, diags)
    return sorted(never - dead), sorted(dead - never)


def _compile_anyway(block):
    from turnflow.compiler.emit.spec import compile_block

    return compile_block(block)


def _text(block):
    return printer.format_flow(ast.FlowFile(span=block.span, blocks=[block]))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(workflow_blocks())
def test_check_agrees_with_exhaustive_exploration(block):
    text = _text(block)
    diff = differences(text)
    event("flow with errors: skipped" if diff is None else "flow compared")
    if diff is None:
        return
    missed, wrong = diff
    assert (missed, wrong) == ([], []), text


# --------------------------------------------------------------------------------------------
#  The examples, as fixtures
# --------------------------------------------------------------------------------------------
def _expected(text):
    """`# expect: TFxxx` at the end of a line: the codes check must report on that line."""
    out = set()
    for n, line in enumerate(text.splitlines(), start=1):
        if "# expect:" in line:
            for code in line.split("# expect:")[1].split(","):
                out.add((n, code.strip()))
    return out


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.flow")), ids=lambda p: p.stem)
def test_fixture(path):
    text = path.read_text()
    diags = turnflow.check(text, str(path))
    want = _expected(text)
    got = {(d.span.line, d.code) for d in diags if d.code in DEAD_CODES | {"TF203", "TF213"}}
    assert got == want, [d.message for d in diags]
    assert differences(text) == ([], [])


# --------------------------------------------------------------------------------------------
#  `check --fix` never creates a dead rule
# --------------------------------------------------------------------------------------------
MISSPELT = """workflow w {
    participant planner
    participant writer
    participant critic tools [review]
    start planner
    max_turns 6
    handoff planner -> writer via delegate
    planner -> critic when tool delegat
    writer -> terminate
    critic -> terminate when tool reveiw
    critic -> terminate
}
"""


def test_fix_never_turns_a_misspelt_tool_into_a_dead_rule(tmp_path, capsys):
    """`delegat` -> `delegate` would make `planner -> critic when tool delegate` dead (the handoff
    of the same tool decides first): not applied, not counted as fixable; a correction that
    keeps its rule alive in the same file still is."""
    from turnflow.cli import main

    path = tmp_path / "w.flow"
    path.write_text(MISSPELT)
    main(["check", str(path)])
    out = capsys.readouterr().out
    assert "1 fixable with the `--fix` option" in out or "[*] 1 fixable" in out, out
    main(["check", "--fix", str(path)])
    capsys.readouterr()
    fixed = path.read_text()
    assert "planner -> critic when tool delegat\n" in fixed  # left for the author to decide
    assert "critic -> terminate when tool review\n" in fixed
    diags = turnflow.check(fixed)
    assert not [d for d in diags if d.code in DEAD_CODES - {"TF207"}], [d.message for d in diags]
    assert any(d.code == "TF207" and "delegat" in d.message for d in diags)
