"""A workflow block → the AG2 TransitionGraph as plain JSON data (the
language's rule mapping).

`transition_graph(block)` is exactly what `ag2.network.TransitionGraph.to_dict()`
produces, and what `turnflow.spec.TransitionGraph(...).to_dict()` gives for the
same graph: keys `initial_speaker`,
`transitions`, `default_target`, `max_turns` (null when absent); each
transition `{"when", "then", "priority"}` in file order (AG2 sorts by
priority itself, stably, so file order breaks ties as the language says).
Only plain data from the AST is read, so this module also serves the TF301
profile check on blocks that have errors.

Conditions and targets are built with `turnflow.spec`'s `Kind.data(...)`: plain
data, no model object per condition (the models stay the one definition: the
tests validate every emitted graph with `turnflow.spec`).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

from turnflow import spec
from turnflow.dsl import ast
from turnflow.spec import DEFAULT_REASON

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


def target(t: ast.Target) -> Data:
    if t.kind == "participant":
        assert t.name is not None  # a participant target names one (the parser guarantees it)
        return spec.AgentTarget.data(agent_id=t.name.name)
    if t.kind == "terminate":
        return spec.Terminate.data(reason=t.reason.value if t.reason is not None else DEFAULT_REASON)
    if t.kind == "stay":
        return spec.Stay.data()
    if t.kind == "next":
        return spec.RoundRobin.data()
    if t.kind == "previous":
        return spec.PreviousSpeaker.data()
    return spec.RevertToInitiator.data()


def tool_target(t: ast.Target) -> str:
    """The `tools[].target` string of a handoff: the participant name, or the
    target keyword (`terminate`, `stay`, `next`, `initiator`, `previous`)."""
    if t.kind == "participant":
        assert t.name is not None
        return t.name.name
    return t.kind


def term(t: ast.Term) -> Data:
    if isinstance(t, ast.ToolTerm):
        return spec.ToolCalled.data(tool_name=t.tool.name)
    if isinstance(t, ast.ContextTerm):
        return spec.ContextEquals.data(key=t.key.name, value=t.value.value)
    if isinstance(t, ast.CompareTerm):
        return spec.ContextCompare.data(key=t.key.name, op=t.op, value=t.value.value, len=t.length)
    if isinstance(t, ast.AllTerm):
        return spec.AllOf.data(conditions=[term(x) for x in t.terms])
    if isinstance(t, ast.AnyTerm):
        return spec.AnyOf.data(conditions=[term(x) for x in t.terms])
    if isinstance(t, ast.NotTerm):
        return spec.Not.data(condition=term(t.term))
    return spec.TextContains.data(text=t.text.value)


def condition(source: Optional[str], terms: Sequence[ast.Term], owners: dict[str, list[str]]) -> Data:
    """The language's mapping: a source test plus terms → one condition."""
    conds: list[Data] = []
    if source is not None:
        conds.append(spec.FromSpeaker.data(agent_id=source))
    conds.extend(term(t) for t in terms)
    if not conds:
        return spec.Always.data()
    if len(conds) == 1:
        return conds[0]
    if (source is not None and len(terms) == 1 and isinstance(terms[0], ast.ToolTerm)
            and owners.get(terms[0].tool.name) == [source]):
        return conds[1]  # only `source` can emit the tool: the source test is implied
    return spec.AllOf.data(conditions=conds)


def rule_condition(st: Union[ast.Rule, ast.Handoff], owners: dict[str, list[str]]) -> Data:
    if isinstance(st, ast.Handoff):
        return condition(st.source.name, [ast.ToolTerm(span=st.tool.span, tool=st.tool)], owners)
    return condition(st.source.name if st.source is not None else None, list(st.terms), owners)


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
    starts = block.of_type(ast.Start)
    max_turns = block.of_type(ast.MaxTurns)
    otherwise = block.of_type(ast.Otherwise)
    transitions = []
    for st in block.rules:
        priority = st.priority.value if isinstance(st, ast.Rule) and st.priority is not None else 0
        transitions.append({"when": rule_condition(st, owners), "then": target(st.target), "priority": priority})
    return {
        "initial_speaker": starts[0].name.name,
        "transitions": transitions,
        "default_target": target(otherwise[0].target) if otherwise else spec.Terminate.data(reason=DEFAULT_REASON),
        "max_turns": max_turns[0].value.value if max_turns else None,
    }

