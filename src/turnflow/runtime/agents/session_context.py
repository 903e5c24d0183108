"""What an agent is told about its session: the `AgentContext` of one participant, read from
the compiled session spec (docs/agents.md §1).

**Dynamic handoffs.** A session *allows dynamic handoffs* when its spec is a `workflow` (the
only adapter that accepts a handoff packet naming its target: that packet decides the next
speaker instead of the graph's rules for that round) whose transition graph names a
participant as a target somewhere (an `agent` target in a rule or as the default target). A
graph that only rotates (`round_robin`), stays, reverts to the initiator or terminates has
no named routing, so a model is not offered `handoff(to)` there.
"""

from __future__ import annotations

from typing import Any, Optional

from turnflow.runtime.agents.base import AgentContext, RosterEntry


GraphFacts = tuple[bool, tuple[str, ...]]  # (names an `agent` target, the context keys its rules read)
#: id(graph dict) -> (the dict, its reading): sessions of one flow share their knobs
_READ: dict[int, tuple[dict[str, Any], GraphFacts]] = {}
_READ_MAX = 64


def _graph_facts(graph: Any) -> GraphFacts:
    """(names an `agent` target, the context keys its rules read in order), read with the spec
    models (`TransitionGraph.loads`, AG2's reading): `AgentTarget` targets, and every `ContextEquals`
    / `ContextCompare` condition, nested ones included (`TransitionGraph.conditions`). A graph the
    models refuse has neither (the hub refuses such a session anyway)."""
    if not isinstance(graph, dict):
        return False, ()
    hit = _READ.get(id(graph))
    if hit is not None and hit[0] is graph:
        return hit[1]
    from turnflow.spec import AgentTarget, ContextCompare, ContextEquals, SpecError, TransitionGraph

    try:
        model = TransitionGraph.loads(graph)
    except SpecError:
        facts: GraphFacts = (False, ())
    else:
        targets = [tr.then for tr in model.transitions] + [model.default_target]
        keys = tuple(dict.fromkeys(c.args.key for c in model.conditions()
                                   if isinstance(c, (ContextEquals, ContextCompare))))
        facts = (any(isinstance(t, AgentTarget) for t in targets), keys)
    if len(_READ) >= _READ_MAX:
        _READ.clear()
    _READ[id(graph)] = (graph, facts)
    return facts


def allows_dynamic_handoffs(spec: dict[str, Any]) -> bool:
    """True when the spec is a workflow whose graph has an `agent` target (see the module doc)."""
    if spec.get("kind") != "workflow":
        return False
    return _graph_facts((spec.get("knobs") or {}).get("graph"))[0]


def context_vars(spec: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """(key, initial value) pairs: the declared context variables, then keys the graph's rules
    read that are not declared (initially unset: None), each once, in order. A rule reads a key
    through a context condition (`context_equals`, `context_compare`), also nested in
    `all_of` / `any_of` and `not`."""
    knobs = spec.get("knobs") or {}
    declared = knobs.get("context_vars")
    out: dict[str, Any] = dict(declared) if isinstance(declared, dict) else {}
    if spec.get("kind") == "workflow":
        for key in _graph_facts(knobs.get("graph"))[1]:
            out.setdefault(key, None)
    return tuple(out.items())


def agent_context(spec: dict[str, Any], session_id: str, agent_id: str, task: Optional[str] = None) -> AgentContext:
    """The handshake context of participant `agent_id` in a session of `spec`."""
    parts = [p for p in spec.get("participants") or [] if isinstance(p, dict)]
    ids = tuple(str(p.get("agent_id")) for p in parts)
    roster = tuple(RosterEntry(agent_id=str(p.get("agent_id")), role=p.get("role") or "participant",
                               description=p.get("description") or "") for p in parts)
    me = next((r for r in roster if r["agent_id"] == agent_id), {"description": ""})
    own = tuple(t for t in spec.get("tools") or [] if isinstance(t, dict) and t.get("owner") == agent_id)
    return AgentContext(session_id, agent_id, spec.get("kind") or "", ids, own, name=spec.get("name") or "",
                        title=spec.get("title") or "", description=me["description"], task=task or None,
                        roster=roster, context_vars=context_vars(spec),
                        dynamic_handoffs=allows_dynamic_handoffs(spec))
