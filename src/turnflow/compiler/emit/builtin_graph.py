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

from typing import Optional, Union

from turnflow import spec
from turnflow.compiler.emit import knobs
from turnflow.dsl import ast
from turnflow.spec import DEFAULT_REASON

Data = knobs.Data


def _ordered(block: ast.Block) -> list[Union[ast.Rule, ast.Handoff]]:
    """The rules and handoffs in the order the language evaluates them: ascending priority, ties
    in file order."""
    keyed = [(st.priority.value if isinstance(st, ast.Rule) and st.priority is not None else 0, i, st)
             for i, st in enumerate(block.rules)]
    return [st for _p, _i, st in sorted(keyed, key=lambda k: (k[0], k[1]))]


def _builtin(cond: Data) -> bool:
    return not knobs.extensions_used(cond)


def _guarded(st: Union[ast.Rule, ast.Handoff]) -> bool:
    return isinstance(st, ast.Handoff) or bool(st.terms)


def builtin_transitions(block: ast.Block) -> Optional[list[Data]]:
    """The transitions (priority 0, in evaluation order) that decide each participant's turn as
    the block's rules do, with built-in conditions only; None when that is not possible."""
    if block.kind != "workflow":
        return None
    owners = knobs.tool_owners(block)
    rules = _ordered(block)
    names = [p.name.name for p in block.participants]
    otherwise = block.of_type(ast.Otherwise)
    fallback = knobs.target(otherwise[0].target) if otherwise else spec.Terminate.data(reason=DEFAULT_REASON)
    if any(knobs.is_extension_target(knobs.target(st.target)) for st in rules) or knobs.is_extension_target(fallback):
        return None
    if any(st.source is None and _guarded(st) for st in rules):
        return None  # a guarded `*` rule belongs to every turn: it would need the speaker test everywhere
    needing = {st.source.name for st in rules if st.source is not None
               and not _builtin(knobs.rule_condition(st, owners))}
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


def _turn_of(name: str, rules: list[Union[ast.Rule, ast.Handoff]], owners: dict[str, list[str]], fallback: Data,
             speaker_test: bool) -> Optional[list[Data]]:
    """The transitions deciding `name`'s turn; None when one of them is not built in."""
    out: list[Data] = []
    for st in rules:
        if st.source is not None and st.source.name != name:
            continue
        if not _guarded(st):  # always fires for `name`: its turn is decided here
            when = spec.FromSpeaker.data(agent_id=name) if speaker_test else spec.Always.data()
            return out + [{"when": when, "then": knobs.target(st.target), "priority": 0}]
        terms = [ast.ToolTerm(span=st.tool.span, tool=st.tool)] if isinstance(st, ast.Handoff) else list(st.terms)
        cond = knobs.condition(name if speaker_test else None, terms, owners)
        if not _builtin(cond):
            return None
        out.append({"when": cond, "then": knobs.target(st.target), "priority": 0})
    if speaker_test:
        out.append({"when": spec.FromSpeaker.data(agent_id=name), "then": fallback, "priority": 0})
    return out


def builtin_graph(block: ast.Block) -> Optional[Data]:
    """`knobs.transition_graph(block)` with `builtin_transitions(block)`, or None."""
    transitions = builtin_transitions(block)
    if transitions is None:
        return None
    return {**knobs.transition_graph(block), "transitions": transitions}
