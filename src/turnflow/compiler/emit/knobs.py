"""A workflow block → AG2 TransitionGraph dict (FLOW_LANGUAGE.md §5).

The dict is exactly what `ag2.network.TransitionGraph.to_dict()` produces:
keys `initial_speaker`, `transitions`, `default_target`, `max_turns` (null when
absent); each transition `{"when", "then", "priority"}` in file order (AG2
sorts by priority itself, stably, so file order breaks ties as the language
says). Only plain data from the AST is read, so this module also serves the
TF301 profile check on blocks that have errors.
"""

from __future__ import annotations

from typing import Any, Optional, Union

from turnflow.dsl import ast

#: condition names that are not AG2 1.2.1 built-ins (the runtime and
#: `turnflow.interop.ag2.register_extensions()` provide them)
EXTENSION_CONDITIONS = ("all_of", "text_contains")
BUILTIN_CONDITIONS = ("always", "from_speaker", "tool_called", "context_equals")
TARGETS = ("agent", "round_robin", "stay", "revert_to_initiator", "terminate")
DEFAULT_REASON = "after_work"

#: what a handoff's top-level `tools[].target` says for a non-participant
#: target: the keyword itself (keywords can never be participant names)
TOOL_TARGET_KEYWORDS = ("terminate", "stay", "next", "initiator")


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


def _unique(names) -> list[str]:
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return seen


def target_dict(t: ast.Target) -> dict[str, Any]:
    if t.kind == "participant":
        return {"name": "agent", "args": {"agent_id": t.name.name}}
    if t.kind == "terminate":
        return {"name": "terminate", "args": {"reason": t.reason.value if t.reason is not None else DEFAULT_REASON}}
    if t.kind == "stay":
        return {"name": "stay", "args": {}}
    if t.kind == "next":
        return {"name": "round_robin", "args": {}}
    return {"name": "revert_to_initiator", "args": {}}


def tool_target(t: ast.Target) -> str:
    """The `tools[].target` string of a handoff: the participant name, or the
    target keyword (`terminate`, `stay`, `next`, `initiator`)."""
    return t.name.name if t.kind == "participant" else t.kind


def term_dict(term) -> dict[str, Any]:
    if isinstance(term, ast.ToolTerm):
        return {"name": "tool_called", "args": {"tool_name": term.tool.name}}
    if isinstance(term, ast.ContextTerm):
        return {"name": "context_equals", "args": {"key": term.key.name, "value": term.value.value}}
    return {"name": "text_contains", "args": {"text": term.text.value}}


def condition_dict(source: Optional[str], terms: list, owners: dict[str, list[str]]) -> dict[str, Any]:
    """The mapping of §5: a source test plus terms → one condition."""
    conds: list[dict[str, Any]] = []
    if source is not None:
        conds.append({"name": "from_speaker", "args": {"agent_id": source}})
    conds.extend(term_dict(t) for t in terms)
    if not conds:
        return {"name": "always", "args": {}}
    if len(conds) == 1:
        return conds[0]
    if (source is not None and len(terms) == 1 and isinstance(terms[0], ast.ToolTerm)
            and owners.get(terms[0].tool.name) == [source]):
        return conds[1]  # only `source` can emit the tool: the source test is implied
    return {"name": "all_of", "args": {"conditions": conds}}


def rule_condition(st: Union[ast.Rule, ast.Handoff], owners: dict[str, list[str]]) -> dict[str, Any]:
    if isinstance(st, ast.Handoff):
        term = ast.ToolTerm(span=st.tool.span, tool=st.tool)
        return condition_dict(st.source.name, [term], owners)
    return condition_dict(st.source.name if st.source is not None else None, list(st.terms), owners)


def extensions_used(cond: dict[str, Any]) -> list[str]:
    """Extension condition names used by `cond` (recursively), outermost first."""
    found: list[str] = []
    if cond["name"] in EXTENSION_CONDITIONS:
        found.append(cond["name"])
    if cond["name"] == "all_of":
        for sub in cond["args"]["conditions"]:
            for name in extensions_used(sub):
                if name not in found:
                    found.append(name)
    return found


def transition_graph(block: ast.Block) -> dict[str, Any]:
    """The TransitionGraph dict of a workflow block (assumes no errors)."""
    owners = tool_owners(block)
    starts = block.of_type(ast.Start)
    max_turns = block.of_type(ast.MaxTurns)
    otherwise = block.of_type(ast.Otherwise)
    transitions = []
    for st in block.rules:
        priority = st.priority.value if isinstance(st, ast.Rule) and st.priority is not None else 0
        transitions.append({"when": rule_condition(st, owners), "then": target_dict(st.target),
                            "priority": priority})
    default = (target_dict(otherwise[0].target) if otherwise
               else {"name": "terminate", "args": {"reason": DEFAULT_REASON}})
    return {
        "initial_speaker": starts[0].name.name if starts else None,
        "transitions": transitions,
        "default_target": default,
        "max_turns": max_turns[0].value.value if max_turns else None,
    }
