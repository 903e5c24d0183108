"""`ContractAdapter`: a session adapter written to the contract's required members alone, with
the documented defaults for the optional ones (docs/contracts.md §1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol

from turnflow.runtime.adapters.protocol import render_substantive, round_to_envelope, text_of
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.session import SessionMetadata
from turnflow.runtime.views import FullTranscript

if TYPE_CHECKING:
    from turnflow.runtime.live import LiveSession

#: the protocol's optional methods, and what an adapter without them gets (`ContractAdapter`)
DEFAULTED = ("default_view_policy", "extract_turn_input", "build_round_envelope", "render_envelope")


class SessionHost(Protocol):
    """What a `ContractAdapter` reads of the hub that wraps it (and hands, as the contract's sixth
    `build_round_envelope` argument, to the adapter's own): its live sessions by id."""

    @property
    def sessions(self) -> Mapping[str, LiveSession]: ...


class ContractAdapter:
    """An adapter written to the contract's required members alone (`manifest`, `initial_state`,
    `fold`, `validate_create`, `validate_send`, `on_accepted`), with the documented defaults for
    the optional ones: `default_view_policy` — the full transcript; `render_envelope` — the
    default rendering (`render_substantive`); `extract_turn_input` — an envelope's text (None for
    none); `build_round_envelope` — a round as a packet, None for a silent round (nothing posted).
    `expected_next` / `turn_count` left out: the state's `expected_next_speaker` (else any order)
    and `turn_count` (else the substantive envelopes accepted), read by `LiveSession`;
    `membership` — the adapter's own, else False (the roster is fixed).

    An adapter that has every optional method but no `membership` is wrapped too, with
    `silent_rounds=False`: it then behaves exactly as its own methods say, with a fixed roster."""

    def __init__(self, inner: Any, hub: Optional[SessionHost] = None, *, silent_rounds: bool = True) -> None:
        self.inner = inner
        self.manifest = inner.manifest
        self.hub = hub
        # a None from build_round_envelope is a silent round: nothing posted, not an error
        self.silent_rounds = silent_rounds
        self.membership: bool = bool(getattr(inner, "membership", False))

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
        """The adapter's own, called with the contract's six arguments when it takes them:
        `(metadata, sender_id, reply, events, state, hub)` — `reply` a `RoundReply` (`body`, and
        the round's routing and context changes), `events` the turn's telemetry events (stored
        already; empty here), `state` the session's adapter state."""
        own = getattr(self.inner, "build_round_envelope", None)
        if own is None:
            return round_to_envelope(metadata, sender_id, rnd)
        if takes_contract_arguments(own):
            live = self.hub.sessions.get(metadata.session_id) if self.hub is not None else None
            built: Optional[Envelope] = own(metadata, sender_id, RoundReply(rnd), [],
                                            live.state if live is not None else None, self.hub)
        else:
            built = own(metadata, sender_id, rnd)
        return built


class RoundReply:
    """One agent round as the contract's `reply`: `body` (the text) and the round itself (`round`)."""

    def __init__(self, rnd: dict[str, Any]) -> None:
        self.round = dict(rnd)
        self.body: str = rnd.get("body") or ""


def takes_contract_arguments(fn: Any) -> bool:
    """`fn` takes the contract's six `build_round_envelope` arguments (five besides `self`)."""
    import inspect

    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) == 6


def needs_defaults(adapter: Any) -> bool:
    """An adapter missing one of the optional methods, or whose `build_round_envelope` takes the
    contract's six arguments (the hub wraps it in a `ContractAdapter`). (One missing only
    `membership` is wrapped as well, without silent rounds: `needs_membership`.)"""
    if isinstance(adapter, ContractAdapter):
        return False
    if not all(hasattr(adapter, m) for m in DEFAULTED):
        return True
    return takes_contract_arguments(adapter.build_round_envelope)


def needs_membership(adapter: Any) -> bool:
    """An adapter that does not say whether its roster may change (`membership`): the hub wraps it
    once in a `ContractAdapter(..., silent_rounds=False)`, which reads it as False."""
    return not isinstance(adapter, ContractAdapter) and not hasattr(adapter, "membership")
