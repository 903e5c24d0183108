"""`ContractAdapter`: a session adapter written to the contract's required members alone, with
the documented defaults for the optional ones (docs/contracts.md §1)."""

from __future__ import annotations

from typing import Any, Optional

from turnflow.runtime.adapters.base import render_substantive, round_to_envelope, text_of
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.session import SessionMetadata
from turnflow.runtime.views import FullTranscript

#: the protocol's optional methods, and what an adapter without them gets (`ContractAdapter`)
DEFAULTED = ("default_view_policy", "extract_turn_input", "build_round_envelope", "render_envelope")


class ContractAdapter:
    """An adapter written to the contract's required members alone (`manifest`, `initial_state`,
    `fold`, `validate_create`, `validate_send`, `on_accepted`), with the documented defaults for
    the optional ones: `default_view_policy` — the full transcript; `render_envelope` — the
    default rendering (`render_substantive`); `extract_turn_input` — an envelope's text (None for
    none); `build_round_envelope` — a round as a packet, None for a silent round (nothing posted).
    `expected_next` / `turn_count` left out: the state's `expected_next_speaker` (else any order)
    and `turn_count` (else the substantive envelopes accepted), read by `LiveSession`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.manifest = inner.manifest

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> Any:
        own = getattr(self.inner, "default_view_policy", None)
        if own is not None:
            return own(metadata, participant_id)
        return FullTranscript()

    def render_envelope(self, envelope: Envelope) -> Optional[str]:
        own = getattr(self.inner, "render_envelope", None)
        return own(envelope) if own is not None else render_substantive(envelope)

    def extract_turn_input(self, envelope: Envelope) -> Optional[str]:
        own = getattr(self.inner, "extract_turn_input", None)
        return own(envelope) if own is not None else (text_of(envelope) or None)

    def build_round_envelope(self, metadata: SessionMetadata, sender_id: str, rnd: dict[str, Any]) -> Optional[Envelope]:
        own = getattr(self.inner, "build_round_envelope", None)
        return own(metadata, sender_id, rnd) if own is not None else round_to_envelope(metadata, sender_id, rnd)
