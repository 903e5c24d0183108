"""A workflow block → the AG2 TransitionGraph as plain JSON data (the
language's rule mapping).

`transition_graph(block)` is exactly what `ag2.network.TransitionGraph.to_dict()`
produces, and what `turnflow.spec.TransitionGraph(...).to_dict()` gives for the
same graph: keys `initial_speaker`,
`transitions`, `default_target`, `max_turns` (null when absent); each
transition `{"when", "then", "priority"}` in file order (AG2 sorts by
priority itself, stably, so file order breaks ties as the language says).
Conditions and targets are the block's rules as `compiler/lower.py` lowers them
(the one mapping of the language, also what the analysis reads), serialised as
plain data equal to `turnflow.spec`'s `Kind.data(...)`: no model object per
condition (the models stay the one definition: the tests validate every emitted
graph with `turnflow.spec`). The one difference from the lowering: a `from_speaker`
test that tool ownership implies is dropped (`emitted_when`). The lowering reads
the AST only, so this module also serves the TF301 profile check on blocks that
have errors.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union, cast

from turnflow import spec
from turnflow.compiler.lower import Lowering, RuleInfo
from turnflow.dsl import ast
from turnflow.spec.meaning import ConditionMeaning, Plain, TargetMeaning

Data = dict[str, Any]


def tool_owners(block: ast.Block) -> dict[str, list[str]]:
    """Tool name → participants that declare it (with `tools [...]` or as a
    handoff source), in participant declaration order."""
    declared = participant_tools(block)
    owners: dict[str, list[str]] = {}
    for name, tools in declared.items():
        for t in tools:
            owners.setdefault(t, []).append(name)
    return owners


def participant_tools(block: ast.Block) -> dict[str, list[str]]:
    """Participant name → the tool names it declares: its `tools [...]`
    clause first, then the tools of the handoffs it is the source of, in file
    order, each name once. Handoff sources that are not declared participants
    are ignored (TF102 reports them)."""
    out: dict[str, list[str]] = {}
    for p in block.participants:
        if p.name.name in out:
            continue
        out[p.name.name] = _unique(t.name for t in (p.tools or []))
    for h in block.of_type(ast.Handoff):
        tools = out.get(h.source.name)
        if tools is not None and h.tool.name not in tools:
            tools.append(h.tool.name)
    return out


def _unique(names: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def data(kind: Union[ConditionMeaning, TargetMeaning]) -> Data:
    """A lowered kind's JSON form (`Kind.data(...)`-equal: `{"name", "args"}`, nested kinds too)."""
    return cast(Plain, kind).data()


def target(t: Optional[ast.Target], lowering: Optional[Lowering] = None) -> Data:
    """A target as emitted (None: the default `otherwise`, `terminate "after_work"`)."""
    return data((lowering or Lowering()).target(t))


def tool_target(t: ast.Target) -> str:
    """The `tools[].target` string of a handoff: the participant name, or the
    target keyword (`terminate`, `stay`, `next`, `initiator`, `previous`)."""
    if t.kind == "participant":
        assert t.name is not None
        return t.name.name
    return t.kind


def emitted_when(rule: RuleInfo, owners: dict[str, list[str]]) -> Data:
    """A lowered rule's condition as emitted: the lowering's, without the `from_speaker`
    test of `SOURCE -> T when tool t` (or a handoff) when only SOURCE declares `t` (implied at
    run time: only SOURCE can call it)."""
    when = cast(Plain, rule.when)
    if rule.source is not None and when.name == "all_of":
        conds = when.args.conditions
        if (len(conds) == 2 and conds[1].name == "tool_called"
                and owners.get(conds[1].args.tool_name) == [rule.source]):
            return data(conds[1])
    return when.data()


def without_speaker(rule: RuleInfo) -> Data:
    """A lowered rule's condition without its source test (the terms alone; a rule with a
    source and terms lowers to `all_of(from_speaker SOURCE, TERM...)`)."""
    when = cast(Plain, rule.when)
    if rule.source is None:
        return when.data()
    assert when.name == "all_of" and when.args.conditions[0].name == "from_speaker", when
    rest = when.args.conditions[1:]
    return data(rest[0]) if len(rest) == 1 else spec.AllOf.data(conditions=[data(c) for c in rest])


def file_order_rules(block: ast.Block, lowering: Lowering) -> list[RuleInfo]:
    """The block's rules and handoffs lowered, in file order (what the TransitionGraph lists)."""
    return [lowering.rule(st, i) for i, st in enumerate(block.rules)]


def extensions_used(cond: Data) -> list[str]:
    """Extension condition names used by `cond` (recursively), outermost first."""
    found: list[str] = []
    for c in spec.CONDITION.validate_python(cond).walk():
        if not c.builtin and c.name not in found:
            found.append(c.name)
    return found


def is_extension_target(target: Data) -> bool:
    """True for a target AG2 1.2.1 does not ship (e.g. `previous_speaker`)."""
    return target["name"] in spec.EXTENSION_TARGETS


def transition_graph(block: ast.Block) -> Data:
    """The TransitionGraph of a workflow block as JSON data (assumes no errors)."""
    owners = tool_owners(block)
    lowering = Lowering()
    starts = block.of_type(ast.Start)
    max_turns = block.of_type(ast.MaxTurns)
    otherwise = block.of_type(ast.Otherwise)
    transitions = [{"when": emitted_when(r, owners), "then": data(r.then), "priority": r.priority}
                   for r in file_order_rules(block, lowering)]
    return {
        "initial_speaker": starts[0].name.name,
        "transitions": transitions,
        "default_target": target(otherwise[0].target if otherwise else None, lowering),
        "max_turns": max_turns[0].value.value if max_turns else None,
    }
