"""`turnflow check` proves dead rules, and is complete against an exhaustive exploration.

The exploration below does not use `turnflow.compiler`: it drives the runtime's own reading of
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

import itertools
import math
import os
from collections import deque
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

import turnflow
from flow_strategies import workflow_blocks
from turnflow.dsl import ast, printer
from turnflow.runtime.simulate import Simulator

EXAMPLES = int(os.environ.get("TURNFLOW_DEAD_RULES_EXAMPLES", "150"))
FIXTURES = Path(__file__).parent / "fixtures" / "dead_rules"
DEAD_CODES = {"TF204", "TF207", "TF212"}


# --------------------------------------------------------------------------------------------
#  The exploration
# --------------------------------------------------------------------------------------------
def _leaves(cond, out):
    name = cond.name
    if name in ("all_of", "any_of"):
        for c in cond.args.conditions:
            _leaves(c, out)
    elif name == "not":
        _leaves(cond.args.condition, out)
    else:
        out.append(cond)


def _values(literals):
    """Values around every literal: the literals, numbers just below / above / between them,
    strings around them, strings and arrays of many lengths, null and the booleans."""
    nums = sorted({float(v) for v in literals if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(v)} | {-1.0, 0.0, 1.0})
    out = [None, True, False, [], {}]
    for v in nums:
        out += [v, v - 1, v + 1, v - 0.125, v + 0.125]
    for a, b in zip(nums, nums[1:]):
        out.append((a + b) / 2)
    strs = {"", "x", "y"} | {v for v in literals if isinstance(v, str)}
    for v in sorted(strs):
        out += [v, v + "\x00", v + "~", v[:-1], v + "a", "\x00" + v]
    for n in range(0, 7):
        out += ["x" * n, "\x00" * n, "~" * n, [0] * n, {str(i): i for i in range(n)}]
        for v in sorted(strs):
            out += [(v + "\x00" * n)[:n], (v + "~" * n)[:n]]
    return out


def _distinct(values, conds, key):
    """The values with distinct outcomes on `conds` (two values every condition reads alike
    are interchangeable: keeping one is still exhaustive)."""
    seen, out = set(), []
    for v in values:
        outcome = tuple(c.holds("", {key: v}, None, None) for c in conds)
        if outcome not in seen:
            seen.add(outcome)
            out.append(v)
    return out


class Exploration:
    def __init__(self, spec):
        self.sim = sim = Simulator(spec)
        leaves = []
        for tr in sim.transitions:
            _leaves(tr.when, leaves)
        by_key = {}
        for c in leaves:
            if c.name in ("context_equals", "context_compare"):
                by_key.setdefault(c.args.key, []).append(c)
        self.contexts = [dict(zip(by_key, combo)) for combo in itertools.product(
            *[_distinct(_values([c.args.value for c in cs]), cs, k) for k, cs in by_key.items()])]
        texts = sorted({c.args.text for c in leaves if c.name == "text_contains"})
        self.texts = ["\x01".join(sub) for n in range(len(texts) + 1) for sub in itertools.combinations(texts, n)]
        self.fires = {s: self._fires(s) for s in sim.ids}
        # who opened the session: the `initiator`; a flow that marks none may be opened by anyone
        marked = [p.agent_id for p in sim.md.participants if p.role == "initiator"]
        self.creators = marked or list(sim.ids)
        self.states = self._runs()
        self.speaks = {s for s, _ in self.states}

    def _fires(self, s):
        """(transition indexes that decide some turn of `s`, whether the default target can)."""
        sim = self.sim
        fired, default = set(), False
        trs = [(i, sim.transitions[i].when) for i in sim.evaluation]
        for tool, text, ctx in itertools.product((None, *sim.tool_pool[s]), self.texts, self.contexts):
            for i, when in trs:
                if when.holds(s, ctx, tool, text):
                    fired.add(i)
                    break
            else:
                default = True
        return fired, default

    def _runs(self):
        sim = self.sim
        cap = sim.graph.max_turns
        start = (sim.graph.initial_speaker, None)
        first = {start: 1}
        queue = deque([start])
        while queue:
            s, before = queue.popleft()
            if cap is not None and first[(s, before)] >= cap:
                continue
            fired, default = self.fires[s]
            targets = [sim.transitions[i].then for i in fired] + ([sim.graph.model.default_target] if default else [])
            for t, creator in itertools.product(targets, self.creators):
                nxt = t.resolve(s, sim.ids, creator, before)[0]
                if nxt is not None and (nxt, s) not in first:
                    first[(nxt, s)] = first[(s, before)] + 1
                    queue.append((nxt, s))
        return first

    def fired_on_some_run(self, i):
        return any(i in self.fires[s][0] for s in self.speaks)


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
