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

from typing import TYPE_CHECKING, Any, Optional

from turnflow.runtime.agents.contract import AgentContext, RosterEntry
from turnflow.runtime.session_spec import SessionSpec

if TYPE_CHECKING:
    from turnflow.spec import TransitionGraph

GraphFacts = tuple[bool, tuple[str, ...]]  # (names an `agent` target, the context keys its rules read)
#: id(graph model) -> (the model, its reading): sessions of one flow share their spec, and so its graph
_READ: dict[int, tuple[Any, GraphFacts]] = {}
_READ_MAX = 64


def _graph_facts(model: Optional[TransitionGraph]) -> GraphFacts:
    """(names an `agent` target, the context keys its rules read in order), from the spec's graph
    model (`SessionSpec.graph`, AG2's reading): `AgentTarget` targets, and every `ContextEquals`
    / `ContextCompare` condition, nested ones included (`TransitionGraph.conditions`). No graph
    (or one the models refuse) has neither (the hub refuses such a session anyway)."""
    if model is None:
        return False, ()
    hit = _READ.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    from turnflow.spec import AgentTarget, ContextCompare, ContextEquals

    targets = [tr.then for tr in model.transitions] + [model.default_target]
    keys = tuple(dict.fromkeys(c.args.key for c in model.conditions()
                               if isinstance(c, (ContextEquals, ContextCompare))))
    facts: GraphFacts = (any(isinstance(t, AgentTarget) for t in targets), keys)
    if len(_READ) >= _READ_MAX:
        _READ.clear()
    _READ[id(model)] = (model, facts)
    return facts


def allows_dynamic_handoffs(spec: SessionSpec) -> bool:
    """True when the spec is a workflow whose graph has an `agent` target (see the module doc)."""
    return _graph_facts(spec.graph)[0]


def context_vars(spec: SessionSpec) -> tuple[tuple[str, Any], ...]:
    """(key, initial value) pairs: the declared context variables, then keys the graph's rules
    read that are not declared (initially unset: None), each once, in order. A rule reads a key
    through a context condition (`context_equals`, `context_compare`), also nested in
    `all_of` / `any_of` and `not`."""
    out = spec.context_vars
    for key in _graph_facts(spec.graph)[1]:
        out.setdefault(key, None)
    return tuple(out.items())


def agent_context(spec: SessionSpec, session_id: str, agent_id: str, task: Optional[str] = None) -> AgentContext:
    """The handshake context of participant `agent_id` in a session of `spec`."""
    ids = tuple(spec.participant_ids)
    roster = tuple(RosterEntry(agent_id=p.agent_id, role=p.role or "participant", description=p.description or "")
                   for p in spec.participants)
    me = next((r for r in roster if r["agent_id"] == agent_id), {"description": ""})
    return AgentContext(session_id, agent_id, spec.kind or "", ids, spec.tools_of(agent_id), name=spec.name or "",
                        title=spec.title or "", description=me["description"], task=task or None,
                        roster=roster, context_vars=context_vars(spec),
                        dynamic_handoffs=allows_dynamic_handoffs(spec))
