"""The workflow adapter: AG2 1.2.1's `WorkflowAdapter` semantics, decision for decision
(RUNTIME.md §3), on a graph compiled once per session (`transitions.CompiledGraph`).

Documented differences from AG2 1.2.1 (each tested):
- the graph is validated and compiled once, in `initial_state`; no re-parse per envelope;
- an `agent` target that is not a participant is refused at create time, and a packet's
  handoff `target` that is not a participant is refused with `ProtocolError` (AG2 accepts
  both and the session stalls until its TTL);
- every malformed knob is a `ProtocolError` (AG2 leaks `KeyError` / `TypeError`);
- packet and context-set payloads are shape-checked in `validate_send`;
- `all_of` and `text_contains` are built in;
- an `expectation.violated` envelope with action `hide` makes `round_robin` targets skip
  that participant until it speaks again (AG2 has no `hide`).
"""

from __future__ import annotations

from typing import Any, Optional

from turnflow.runtime.adapters.base import (NO_CHANGE, AdapterResult, ExpectedTurn, check_knobs,
                                            check_participants, render_substantive, round_to_envelope, text_of)
from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_EXPECTATION_VIOLATED, EV_PACKET, EV_TEXT, Envelope)
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata
from turnflow.runtime.transitions import CompiledGraph, validate_graph

_EMPTY: frozenset = frozenset()


class WorkflowState:
    __slots__ = ("graph", "expected_next_speaker", "last_speaker_id", "last_envelope_id", "turn_count",
                 "pending_close_reason", "context_vars", "hidden")

    def __init__(self, graph: CompiledGraph, expected: Optional[str], last_speaker: Optional[str],
                 last_envelope_id: Optional[str], turn_count: int, pending: str, context: dict,
                 hidden: frozenset = _EMPTY) -> None:
        self.graph = graph
        self.expected_next_speaker = expected
        self.last_speaker_id = last_speaker
        self.last_envelope_id = last_envelope_id
        self.turn_count = turn_count
        self.pending_close_reason = pending
        self.context_vars = context  # never mutated in place: a fold that changes it copies it
        self.hidden = hidden

    def snapshot(self) -> dict:
        return {"expected_next_speaker": self.expected_next_speaker, "last_speaker_id": self.last_speaker_id,
                "last_envelope_id": self.last_envelope_id, "turn_count": self.turn_count,
                "pending_close_reason": self.pending_close_reason, "context_vars": self.context_vars,
                "hidden": sorted(self.hidden)}


def _check_context_vars(v: Any) -> None:
    if not isinstance(v, dict):
        raise ProtocolError(f"workflow session: knob `context_vars` must be an object, got {type(v).__name__}")
    for k in v:
        if not isinstance(k, str):
            raise ProtocolError(f"workflow session: context variable names must be strings, got {k!r}")


def _check_updates(u: Any, what: str) -> None:
    if not isinstance(u, dict):
        raise ProtocolError(f"{what} must be an object with `set` and `delete`, got {u!r}")
    s, d = u.get("set"), u.get("delete")
    if s is not None and not isinstance(s, dict):
        raise ProtocolError(f"{what}.set must be an object, got {s!r}")
    if d is not None and (not isinstance(d, list) or not all(isinstance(k, str) for k in d)):
        raise ProtocolError(f"{what}.delete must be a list of names, got {d!r}")


def _apply(ctx: dict, updates: dict) -> dict:
    dels, sets = updates.get("delete"), updates.get("set")
    if not dels and not sets:
        return ctx
    new = dict(ctx)
    if dels:
        for k in dels:
            new.pop(k, None)
    if sets:
        new.update(sets)
    return new


class WorkflowAdapter:
    manifest = SessionManifest(
        type="workflow", version=1, min_participants=2, max_participants=None,
        roles=("initiator", "respondent", "participant"),
        knobs_schema={"graph": "TransitionGraph", "context_vars": "object"},
        default_view="named_windowed_summary",
        default_expectations=(Expectation("turn_within", 120.0, "warn"),
                               Expectation("turn_within", 600.0, "auto_close")))

    # -- creation -------------------------------------------------------------------------------
    def validate_create(self, metadata: SessionMetadata) -> None:
        check_participants(metadata, self.manifest)
        if "graph" not in (metadata.knobs if isinstance(metadata.knobs, dict) else {}):
            raise ProtocolError("workflow session: knob `graph` is required")
        check_knobs(metadata, {"graph": lambda g: validate_graph(g, metadata.participant_ids),
                               "context_vars": _check_context_vars})

    def initial_state(self, metadata: SessionMetadata) -> WorkflowState:
        graph = CompiledGraph(metadata.knobs["graph"], metadata.participant_ids, metadata.creator_id)
        ctx = metadata.knobs.get("context_vars") or {}
        _check_context_vars(ctx)
        return WorkflowState(graph, graph.initial_speaker, None, None, 0, "", dict(ctx))

    # -- sends ----------------------------------------------------------------------------------
    def validate_send(self, metadata: SessionMetadata, envelope: Envelope, state: WorkflowState) -> None:
        et = envelope.event_type
        if et == EV_PACKET or et == EV_TEXT:
            exp = state.expected_next_speaker
            if exp and envelope.sender_id != exp:
                raise ProtocolError(f"workflow {metadata.session_id!r} expects {exp!r} to speak, "
                                    f"got {envelope.sender_id!r}")
            if et == EV_PACKET:
                self._check_packet(metadata, envelope)
            return
        if et == EV_CONTEXT_SET:
            if not metadata.is_participant(envelope.sender_id):
                raise ProtocolError(f"workflow {metadata.session_id!r} only accepts context sets from "
                                    f"participants, got {envelope.sender_id!r}")
            _check_updates(envelope.event_data, "context.set data")

    def _check_packet(self, metadata: SessionMetadata, envelope: Envelope) -> None:
        d = envelope.event_data
        routing = d.get("routing")
        if routing is not None and not isinstance(routing, dict):
            raise ProtocolError(f"packet routing must be an object, got {routing!r}")
        cu = d.get("context_updates")
        if cu:
            _check_updates(cu, "packet context_updates")
        if routing and routing.get("kind") == "handoff":
            target = routing.get("target")
            if target and target not in metadata.pset:
                raise ProtocolError(f"workflow {metadata.session_id!r}: handoff target {target!r} "
                                    f"is not a participant ({', '.join(metadata.participant_ids)})")

    def fold(self, envelope: Envelope, state: WorkflowState) -> WorkflowState:
        et = envelope.event_type
        if et == EV_PACKET or et == EV_TEXT:
            sender = envelope.sender_id
            ctx = state.context_vars
            hidden = state.hidden
            if hidden and sender in hidden:
                hidden = hidden - {sender}
            if et == EV_PACKET:
                data = envelope.event_data
                cu = data.get("context_updates")
                if cu:
                    ctx = _apply(ctx, cu)
                routing = data.get("routing") or {}
                kind = routing.get("kind")
                if kind == "finish":
                    return WorkflowState(state.graph, None, sender, envelope.envelope_id, state.turn_count + 1,
                                         routing.get("reason") or "finished", ctx, hidden)
                if kind == "handoff":
                    target = routing.get("target")
                    if target:
                        return WorkflowState(state.graph, target, sender, envelope.envelope_id,
                                             state.turn_count + 1, "", ctx, hidden)
            nxt, reason = state.graph.select(sender, ctx, envelope, hidden)
            return WorkflowState(state.graph, nxt, sender, envelope.envelope_id, state.turn_count + 1,
                                 reason, ctx, hidden)
        if et == EV_CONTEXT_SET:
            return WorkflowState(state.graph, state.expected_next_speaker, state.last_speaker_id,
                                 state.last_envelope_id, state.turn_count, state.pending_close_reason,
                                 _apply(state.context_vars, envelope.event_data), state.hidden)
        if et == EV_EXPECTATION_VIOLATED and envelope.event_data.get("action") == "hide":
            who = envelope.event_data.get("agent_id")
            if isinstance(who, str) and who not in state.hidden:
                return WorkflowState(state.graph, state.expected_next_speaker, state.last_speaker_id,
                                     state.last_envelope_id, state.turn_count, state.pending_close_reason,
                                     state.context_vars, state.hidden | {who})
        return state

    def on_accepted(self, metadata: SessionMetadata, envelope: Envelope, state: WorkflowState) -> AdapterResult:
        et = envelope.event_type
        if et != EV_PACKET and et != EV_TEXT:
            return NO_CHANGE
        if state.expected_next_speaker is None:
            return AdapterResult(state.pending_close_reason or "workflow_terminated")
        mt = state.graph.max_turns
        if mt is not None and state.turn_count >= mt:
            return AdapterResult("max_turns")
        return NO_CHANGE

    # -- reading --------------------------------------------------------------------------------
    def expected_next(self, metadata: SessionMetadata, state: WorkflowState) -> Optional[ExpectedTurn]:
        if state.expected_next_speaker is None:
            return None
        return ExpectedTurn(state.expected_next_speaker, state.last_envelope_id)

    def turn_count(self, state: WorkflowState) -> int:
        return state.turn_count

    def default_view_policy(self, metadata: SessionMetadata):
        from turnflow.runtime.views import NamedWindowedSummary

        return NamedWindowedSummary(recent_n=max(2 * len(metadata.participants), 4))

    def extract_turn_input(self, envelope: Envelope) -> Optional[str]:
        return render_substantive(envelope) or None

    def build_round_envelope(self, metadata: SessionMetadata, sender_id: str, rnd: dict) -> Optional[Envelope]:
        return round_to_envelope(metadata, sender_id, rnd)

    def render_envelope(self, envelope: Envelope) -> str:
        return render_substantive(envelope) if envelope.event_type in (EV_TEXT, EV_PACKET) else text_of(envelope)

