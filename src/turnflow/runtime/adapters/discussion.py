"""discussion: two or more participants in strict round robin starting with the creator
(knob `ordering: round_robin`, the only ordering). It never closes by itself.

`hide`: an `expectation.violated` envelope with action `hide` for a participant makes the
round robin skip it until it speaks again; a hidden participant may speak out of turn
(that is how it rejoins), which does not move the turn pointer."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional

from turnflow.runtime.adapters.simple import SimpleAdapter, TurnState
from turnflow.runtime.envelope import EV_EXPECTATION_VIOLATED, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Expectation, SessionManifest, SessionMetadata

if TYPE_CHECKING:
    from turnflow.runtime.views import WindowedSummary


def _ordering(v: Any) -> None:
    if v != "round_robin":
        raise ProtocolError(f"discussion session: knob `ordering` must be 'round_robin', got {v!r}")


def _next(order: tuple[str, ...], after: str, hidden: frozenset[Any]) -> str:
    i = order.index(after) if after in order else -1
    for k in range(1, len(order) + 1):
        cand = order[(i + k) % len(order)]
        if cand not in hidden:
            return cand
    return order[(i + 1) % len(order)]  # everyone hidden: plain round robin


class DiscussionAdapter(SimpleAdapter):
    manifest = SessionManifest(
        type="discussion", version=1, min_participants=2, max_participants=None,
        roles=("initiator", "respondent", "participant"), knobs_schema={"ordering": "round_robin"},
        default_view="named_windowed_summary", default_expectations=(Expectation("turn_within", 120.0, "warn"),
                                                               Expectation("turn_within", 600.0, "hide")))
    knobs = {"ordering": _ordering}
    membership = True  # participant.added / .removed change the roster; the round robin follows it

    def first_speaker(self, metadata: SessionMetadata) -> Optional[str]:
        return metadata.creator_id

    def check_turn(self, metadata: SessionMetadata, envelope: Envelope, state: TurnState) -> None:
        if envelope.sender_id in state.hidden:
            return
        super().check_turn(metadata, envelope, state)

    def advance(self, envelope: Envelope, state: TurnState) -> TurnState:
        sender = envelope.sender_id
        hidden = state.hidden - {sender} if sender in state.hidden else state.hidden
        expected = state.expected
        if sender == state.expected:
            expected = _next(state.order, sender, hidden)
        return replace(state, last_speaker_id=sender, last_envelope_id=envelope.envelope_id,
                       turn_count=state.turn_count + 1, hidden=hidden, expected=expected)

    def fold_other(self, envelope: Envelope, state: TurnState) -> TurnState:
        d = envelope.event_data
        if envelope.event_type == EV_EXPECTATION_VIOLATED and d.get("action") == "hide":
            who = d.get("agent_id")
            if isinstance(who, str) and who in state.order and who not in state.hidden:
                hidden = state.hidden | {who}
                expected = _next(state.order, who, hidden) if state.expected == who else state.expected
                return replace(state, hidden=hidden, expected=expected)
        return state

    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> WindowedSummary:
        # named, as AG2's: in a party of three or more a message must say who wrote it
        from turnflow.runtime.views import NamedWindowedSummary

        return NamedWindowedSummary(max(2 * len(metadata.participants), 4))
