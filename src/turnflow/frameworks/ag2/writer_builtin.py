"""`compile --profile ag2-builtin`: a workflow's TransitionGraph in AG2 1.2.1's built-in
conditions alone, where they express the rules exactly.

A rule `S -> T when G` compiles to `all_of(from_speaker S, G)` (docs/compiler.md), and AG2 ships
no `all_of`. When S is the only speaker with such rules, the rules can be reordered so that `G`
alone is exact: first, for every other participant X in turn, the rules X's turn can reach
(its own, the `*` rules and handoffs of tools only X declares, in the order the language
evaluates them) up to the first that always fires for X, ending with `from_speaker X` → the
target X's turn falls back to (X's first unconditional rule, else `otherwise`); then S's rules
with the speaker test dropped — every other participant's turn has been decided above, so
only S's turn gets there. Each condition is then a single built-in one and the graph decides
every participant's turn as the flow does (turnflow.compiler.emit.knobs keeps the file order
for every other target).

`builtin_transitions(block)` is None when this cannot be done: two sources with guarded rules,
a `*` rule with a condition, a condition that is not a single built-in one even so (`or`,
`not`, `text contains`, comparisons other than `==`, two terms), or an extension target
(`previous`). TF301 then reports the rules as before."""

from __future__ import annotations

from typing import Optional

from turnflow import spec
from turnflow.compiler.emit import knobs
from turnflow.compiler.lower import Lowering, RuleInfo, lower_rules
from turnflow.dsl import ast

Data = knobs.Data


def _builtin(cond: Data) -> bool:
    return not knobs.extensions_used(cond)


def _guarded(r: RuleInfo) -> bool:
    return isinstance(r.stmt, ast.Handoff) or bool(r.stmt.terms)


def builtin_transitions(block: ast.Block) -> Optional[list[Data]]:
    """The transitions (priority 0, in evaluation order) that decide each participant's turn as
    the block's rules do, with built-in conditions only; None when that is not possible."""
    if block.kind != "workflow":
        return None
    owners = knobs.tool_owners(block)
    lowering = Lowering()
    rules = lower_rules(block, lowering)  # in the order the language evaluates them
    names = [p.name.name for p in block.participants]
    otherwise = block.of_type(ast.Otherwise)
    fallback = knobs.target(otherwise[0].target if otherwise else None, lowering)
    if any(knobs.is_extension_target(knobs.data(r.then)) for r in rules) or knobs.is_extension_target(fallback):
        return None
    if any(r.source is None and _guarded(r) for r in rules):
        return None  # a guarded `*` rule belongs to every turn: it would need the speaker test everywhere
    needing = {r.source for r in rules if r.source is not None and not _builtin(knobs.emitted_when(r, owners))}
    if not needing:
        return None  # already built in (or nothing to do here): knobs.transition_graph is exact
    if len(needing) > 1:
        return None
    (last,) = needing
    out: list[Data] = []
    for name in [n for n in names if n != last] + [last]:
        turn = _turn_of(name, rules, owners, fallback, speaker_test=name != last)
        if turn is None:
            return None
        out += turn
    return out


def _turn_of(name: str, rules: list[RuleInfo], owners: dict[str, list[str]], fallback: Data,
             speaker_test: bool) -> Optional[list[Data]]:
    """The transitions deciding `name`'s turn; None when one of them is not built in."""
    out: list[Data] = []
    for r in rules:
        if r.source is not None and r.source != name:
            continue
        if not _guarded(r):  # always fires for `name`: its turn is decided here
            when = spec.FromSpeaker.data(agent_id=name) if speaker_test else spec.Always.data()
            return out + [{"when": when, "then": knobs.data(r.then), "priority": 0}]
        # (a guarded rule here has the source `name`: guarded `*` rules were refused above)
        cond = knobs.emitted_when(r, owners) if speaker_test else knobs.without_speaker(r)
        if not _builtin(cond):
            return None
        out.append({"when": cond, "then": knobs.data(r.then), "priority": 0})
    if speaker_test:
        out.append({"when": spec.FromSpeaker.data(agent_id=name), "then": fallback, "priority": 0})
    return out


def builtin_graph(block: ast.Block) -> Optional[Data]:
    """`knobs.transition_graph(block)` with `builtin_transitions(block)`, or None."""
    transitions = builtin_transitions(block)
    if transitions is None:
        return None
    return {**knobs.transition_graph(block), "transitions": transitions}
