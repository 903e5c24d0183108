"""consulting: exactly two participants, an initiator and a respondent; the initiator speaks
once, the respondent replies once, and the session closes with `consulting_complete`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Optional

from turnflow.runtime.adapters.protocol import NO_CHANGE, AdapterResult
from turnflow.runtime.adapters.simple import SimpleAdapter, TurnState
from turnflow.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata

if TYPE_CHECKING:
    from turnflow.runtime.views import FullTranscript


def _role(metadata: SessionMetadata, role: str) -> Optional[str]:
    return next((p.agent_id for p in metadata.participants if p.role == role), None)


def _pair(metadata: SessionMetadata) -> tuple[Optional[str], Optional[str]]:
    """(the first initiator, the first respondent), each None when there is none: one pass."""
    initiator = respondent = None
    for p in metadata.participants:
        if p.role == "initiator":
            if initiator is None:
                initiator = p.agent_id
        elif p.role == "respondent" and respondent is None:
            respondent = p.agent_id
    return initiator, respondent


@dataclass(frozen=True, slots=True)
class ConsultingState(TurnState):
    """The consulting session's state, with the contract's two flags (read from the turn count)."""

    @property
    def initiator_sent(self) -> bool:
        return self.turn_count >= 1

    @property
    def respondent_replied(self) -> bool:
        return self.turn_count >= 2

    def snapshot(self) -> dict[str, Any]:
        return {**TurnState.snapshot(self), "initiator_sent": self.initiator_sent,
                "respondent_replied": self.respondent_replied}


class ConsultingAdapter(SimpleAdapter):
    manifest = SessionManifest(
        type="consulting", version=1, min_participants=2, max_participants=2, roles=("initiator", "respondent"),
        knobs_schema={}, default_view="full_transcript",
        default_expectations=(Expectation("acks_within", 30.0, "auto_close"),
                              Expectation("reply_within", 600.0, "auto_close")))
    knobs: dict[str, Any] = {}

    def validate_create(self, metadata: SessionMetadata) -> None:
        super().validate_create(metadata)
        initiator, respondent = _pair(metadata)
        if initiator is None or respondent is None:
            raise ProtocolError("consulting session needs one initiator and one respondent")
        if metadata.creator_id != initiator:
            raise ProtocolError(f"consulting session: the creator {metadata.creator_id!r} must be the initiator")

    def first_speaker(self, metadata: SessionMetadata) -> Optional[str]:
        return _role(metadata, "initiator")

    def initial_state(self, metadata: SessionMetadata) -> TurnState:
        # order = (initiator, respondent): the whole script of a consultation
        initiator, respondent = _pair(metadata)
        if initiator is None or respondent is None:  # (`validate_create` refused such a session)
            raise ProtocolError(f"consulting session needs one {'initiator' if initiator is None else 'respondent'}")
        return ConsultingState(order=(initiator, respondent), expected=initiator)

    def advance(self, envelope: Envelope, state: TurnState) -> TurnState:
        n = state.turn_count + 1
        if type(state) is ConsultingState:  # `replace`, field by field (a third of its cost)
            return ConsultingState(state.order, state.order[1] if n == 1 else None, envelope.sender_id,
                                   envelope.envelope_id, n, state.hidden, n >= 2)
        return replace(state, last_speaker_id=envelope.sender_id, last_envelope_id=envelope.envelope_id,
                       turn_count=n, expected=state.order[1] if n == 1 else None, done=n >= 2)

    def on_accepted(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> AdapterResult:
        if envelope.event_type in (EV_TEXT, EV_PACKET) and state.done:
            return AdapterResult(next_state="closed", auto_close_reason="consulting_complete")
        return NO_CHANGE

    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> FullTranscript:
        from turnflow.runtime.views import FullTranscript

        return FullTranscript()
