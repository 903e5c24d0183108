"""Shared machinery of the consulting, conversation and discussion adapters.

These kinds carry plain rounds: `text` envelopes, or packets whose routing kind is `text`
(no handoff, no finish, no context updates: those belong to workflows). A session of these
kinds ends with an explicit close, its TTL, an expectation, or (consulting) the reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Optional

from turnflow.runtime.adapters.protocol import (NO_CHANGE, AdapterResult, ExpectedTurn, check_knobs,
                                            check_participants, render_substantive, round_to_envelope, text_of)
from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_PARTICIPANT_ADDED, EV_TEXT, MEMBERSHIP, Envelope
from turnflow.runtime.errors import ProtocolError, brief
from turnflow.runtime.session import SessionManifest, SessionMetadata, check_agent_id


@dataclass(frozen=True, slots=True)
class TurnState:
    order: tuple[str, ...] = ()
    expected: Optional[str] = None
    last_speaker_id: Optional[str] = None
    last_envelope_id: Optional[str] = None
    turn_count: int = 0
    hidden: frozenset[str] = field(default_factory=frozenset)
    done: bool = False

    @property
    def expected_next_speaker(self) -> Optional[str]:
        return self.expected

    def snapshot(self) -> dict[str, Any]:
        return {"expected_next_speaker": self.expected, "last_speaker_id": self.last_speaker_id,
                "last_envelope_id": self.last_envelope_id, "turn_count": self.turn_count,
                "hidden": sorted(self.hidden)}


class SimpleAdapter:
    """Base for the three plain kinds; subclasses set `manifest` and the turn rule.

    `membership`: the roster (`TurnState.order`) may change while the session runs, through
    `participant.added` / `participant.removed` envelopes (conversation, discussion); otherwise
    they are refused (consulting: the flow fixes who takes part)."""

    manifest: ClassVar[SessionManifest]
    knobs: dict[str, Any] = {}
    membership: ClassVar[bool] = False

    def validate_create(self, metadata: SessionMetadata) -> None:
        check_participants(metadata, self.manifest)
        check_knobs(metadata, self.knobs)

    def initial_state(self, metadata: SessionMetadata) -> TurnState:
        return TurnState(order=tuple(metadata.participant_ids), expected=self.first_speaker(metadata))

    def first_speaker(self, metadata: SessionMetadata) -> Optional[str]:
        return None

    def validate_send(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> None:
        et, kind = envelope.event_type, self.manifest.type
        if et == EV_CONTEXT_SET:
            raise ProtocolError(f"{kind} session {metadata.session_id!r} has no context variables "
                                "(context sets belong to workflows)")
        if et in MEMBERSHIP:
            self.check_membership(metadata, envelope, state)
            return
        if et not in (EV_TEXT, EV_PACKET):
            return
        if et == EV_PACKET:
            d = envelope.event_data
            routing = d.get("routing") or {}
            if not isinstance(routing, dict):
                raise ProtocolError(f"{kind} session {metadata.session_id!r}: packet routing must be an object, "
                                    f"got {brief(routing)}")
            if routing.get("kind", "text") != "text":
                raise ProtocolError(f"{kind} session {metadata.session_id!r} accepts plain rounds only, "
                                    f"not routing {brief(routing)} (handoffs and finish belong to workflows)")
            cu = d.get("context_updates") or {}
            if not isinstance(cu, dict):
                raise ProtocolError(f"{kind} session {metadata.session_id!r}: packet context_updates must be an "
                                    f"object with `set` and `delete`, got {brief(cu)}")
            if cu.get("set") or cu.get("delete"):
                raise ProtocolError(f"{kind} session {metadata.session_id!r} has no context variables")
        self.check_turn(metadata, envelope, state)

    def check_turn(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> None:
        if state.done:
            raise ProtocolError(f"{self.manifest.type} session {metadata.session_id!r} is complete")
        if state.expected is None:  # any order (conversation): any participant, as AG2's adapter says
            if envelope.sender_id not in state.order:
                raise ProtocolError(f"{self.manifest.type} session {metadata.session_id!r} only accepts sends "
                                    f"from participants, got {envelope.sender_id!r}")
        elif envelope.sender_id != state.expected:
            raise ProtocolError(f"{self.manifest.type} session {metadata.session_id!r} expects "
                                f"{state.expected!r} to speak, got {envelope.sender_id!r}")

    def check_membership(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> None:
        """A roster change: refused unless this kind allows it, the id is valid, the role allowed,
        and the roster stays within the manifest's bounds; the participant whose turn it is and the
        one who spoke last (whose message the next turn answers) cannot be removed."""
        kind, added = self.manifest.type, envelope.event_type == EV_PARTICIPANT_ADDED
        d = envelope.event_data
        who = d.get("agent_id")
        what = f"{'add' if added else 'remove'}_participant({who!r}) refused"
        if not self.membership:
            raise ProtocolError(f"{what}: the participants of a {kind} session are fixed by its flow")
        if state.done:
            raise ProtocolError(f"{what}: the {kind} session {metadata.session_id!r} is complete")
        try:
            check_agent_id(who)
        except ProtocolError as exc:
            raise ProtocolError(f"{what}: {exc}") from None
        lo, hi, n = self.manifest.min_participants, self.manifest.max_participants, len(state.order)
        if added:
            role = d.get("role", "participant")
            if role not in self.manifest.roles or role == "initiator":
                allowed = ", ".join(r for r in self.manifest.roles if r != "initiator")
                raise ProtocolError(f"{what}: role {role!r} (allowed: {allowed})")
            if not isinstance(d.get("description", ""), str):
                raise ProtocolError(f"{what}: description must be text")
            if who in state.order:
                raise ProtocolError(f"{what}: {who!r} is already a participant")
            if hi is not None and n + 1 > hi:
                raise ProtocolError(f"{what}: a {kind} session has at most {hi} participants")
            return
        if who not in state.order:
            raise ProtocolError(f"{what}: {who!r} is not a participant ({', '.join(state.order)})")
        if n - 1 < lo:
            raise ProtocolError(f"{what}: a {kind} session needs at least {lo} participants")
        if who == state.expected:
            raise ProtocolError(f"{what}: it is {who!r}'s turn")
        if who == state.last_speaker_id:
            raise ProtocolError(f"{what}: {who!r} spoke last (the next turn answers it)")

    def fold(self, envelope: Envelope, state: TurnState) -> TurnState:
        et = envelope.event_type
        if et in (EV_TEXT, EV_PACKET):
            return self.advance(envelope, state)
        if et in MEMBERSHIP:
            who = envelope.event_data["agent_id"]
            if et == EV_PARTICIPANT_ADDED:
                return replace(state, order=(*state.order, who))
            return replace(state, order=tuple(p for p in state.order if p != who), hidden=state.hidden - {who})
        return self.fold_other(envelope, state)

    def fold_other(self, envelope: Envelope, state: TurnState) -> TurnState:
        return state

    def advance(self, envelope: Envelope, state: TurnState) -> TurnState:
        return replace(state, last_speaker_id=envelope.sender_id, last_envelope_id=envelope.envelope_id,
                       turn_count=state.turn_count + 1)

    def on_accepted(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> AdapterResult:
        return NO_CHANGE

    def expected_next(self, metadata: SessionMetadata, state: TurnState) -> Optional[ExpectedTurn]:
        if state.expected is None:
            return None
        return ExpectedTurn(state.expected, state.last_envelope_id)

    def turn_count(self, state: TurnState) -> int:
        return state.turn_count

    def turn_key(self, state: TurnState) -> tuple[Optional[str], int]:
        """`(expected_next(...).agent_id or None, turn_count(state))`, read from the state in one call
        (the fold asks it after every envelope of an active session). A subclass that answers
        `expected_next` or `turn_count` its own way has none (`__init_subclass__`): the fold asks those."""
        return state.expected, state.turn_count

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "turn_key" not in cls.__dict__ and ("expected_next" in cls.__dict__ or "turn_count" in cls.__dict__):
            cls.turn_key = None  # type: ignore[assignment]  # the fold asks (expected_speaker(), turn_count())

    def extract_turn_input(self, envelope: Envelope) -> Optional[str]:
        return text_of(envelope) or None

    def build_round_envelope(self, metadata: SessionMetadata, sender_id: str, rnd: dict[str, Any]) -> Optional[Envelope]:
        return round_to_envelope(metadata, sender_id, rnd)

    def render_envelope(self, envelope: Envelope) -> Optional[str]:
        return render_substantive(envelope)
