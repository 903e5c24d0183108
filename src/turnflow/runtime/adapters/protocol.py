"""The `SessionAdapter` protocol (docs/runtime.md, "The four adapters") and the values adapters return.

An adapter owns one session kind. The hub calls, in order, for every send:
`validate_send(metadata, envelope, state_before)` (raise `ProtocolError` to refuse),
`fold(envelope, state_before) -> state_after` (pure and deterministic: hydrate replays it),
`on_accepted(metadata, envelope, state_after) -> AdapterResult` (ask to close, or not).
Adapter states are treated as immutable values: `fold` returns a new object (or the
same one when nothing changed) and never mutates its input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from turnflow.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import SessionManifest, SessionMetadata


NEXT_STATES = (None, "active", "closing", "closed")


@dataclass(frozen=True, slots=True)
class AdapterResult:
    """What `on_accepted` answers. `close_reason` not None: the adapter asks the hub to close the
    session. The contract's names are accepted too: `auto_close_reason` (the same request) and
    `next_state` — `"active"` (or None) changes nothing; `"closing"` / `"closed"` asks to close,
    with `close_reason` or `auto_close_reason` (default `adapter_closed`). The hub reads
    `close_reason`, which construction fills from the other two."""

    close_reason: Optional[str] = None
    next_state: Optional[str] = None
    auto_close_reason: Optional[str] = None

    def __post_init__(self) -> None:
        if self.next_state not in NEXT_STATES:
            raise ProtocolError(f"on_accepted: next_state must be one of active, closing, closed, got {self.next_state!r}")
        reason = self.close_reason or self.auto_close_reason
        if reason is None and self.next_state in ("closing", "closed"):
            reason = "adapter_closed"
        if self.next_state == "active" and self.close_reason is None:
            reason = None
        object.__setattr__(self, "close_reason", reason)


NO_CHANGE = AdapterResult()


@dataclass(frozen=True, slots=True)
class ExpectedTurn:
    agent_id: str
    triggering_envelope_id: Optional[str] = None


class SessionAdapter(Protocol):
    manifest: SessionManifest

    @property
    def membership(self) -> bool:
        """Whether participants may join or leave while the session runs (`participant.added` /
        `.removed`: conversation, discussion); False where the flow fixes the roster."""
        ...


    def initial_state(self, metadata: SessionMetadata) -> Any: ...
    def validate_create(self, metadata: SessionMetadata) -> None: ...
    def validate_send(self, metadata: SessionMetadata, envelope: Envelope, state: Any) -> None: ...
    def fold(self, envelope: Envelope, state: Any) -> Any: ...
    def on_accepted(self, metadata: SessionMetadata, envelope: Envelope, state: Any) -> AdapterResult: ...
    def expected_next(self, metadata: SessionMetadata, state: Any) -> Optional[ExpectedTurn]: ...
    def turn_count(self, state: Any) -> int: ...
    def default_view_policy(self, metadata: SessionMetadata, participant_id: Optional[str] = None) -> Any: ...
    def extract_turn_input(self, envelope: Envelope) -> Optional[str]: ...
    def build_round_envelope(self, metadata: SessionMetadata, sender_id: str, round: dict[str, Any]) -> Optional[Envelope]: ...
    def render_envelope(self, envelope: Envelope) -> Optional[str]: ...  # None: the envelope is skipped in views


def check_participants(metadata: SessionMetadata, manifest: SessionManifest) -> None:
    """The manifest's participant schema: count, roles, unique ids, unique orders."""
    n = len(metadata.participants)
    kind = manifest.type
    if n < manifest.min_participants or (manifest.max_participants is not None and n > manifest.max_participants):
        want = (f"exactly {manifest.min_participants}" if manifest.min_participants == manifest.max_participants
                else f"at least {manifest.min_participants}")
        raise ProtocolError(f"{kind} session needs {want} participants, got {n}")
    ids = [p.agent_id for p in metadata.participants]
    if len(set(ids)) != n:
        raise ProtocolError(f"{kind} session lists a participant twice: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    for p in metadata.participants:
        if p.role not in manifest.roles:
            raise ProtocolError(f"{kind} session: participant {p.agent_id!r} has role {p.role!r} "
                                f"(allowed: {', '.join(manifest.roles)})")
    if sum(p.role == "initiator" for p in metadata.participants) > 1:
        raise ProtocolError(f"{kind} session: at most one participant may be the initiator")
    if not metadata.is_participant(metadata.creator_id):
        raise ProtocolError(f"{kind} session: the creator {metadata.creator_id!r} is not a participant")


def check_knobs(metadata: SessionMetadata, allowed: dict[str, Any]) -> None:
    """Unknown knob names are refused; `allowed` maps a knob to a validator raising ProtocolError."""
    if not isinstance(metadata.knobs, dict):
        raise ProtocolError(f"{metadata.kind} session: knobs must be an object, got {type(metadata.knobs).__name__}")
    for k, v in metadata.knobs.items():
        if k not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ProtocolError(f"{metadata.kind} session: unknown knob {k!r} (known: {known})")
        allowed[k](v)


def text_of(envelope: Envelope) -> str:
    d = envelope.event_data
    if envelope.event_type == EV_TEXT:
        t = d.get("text", "")
    elif envelope.event_type == EV_PACKET:
        t = d.get("body", "")
    else:
        return ""
    return t if isinstance(t, str) else ""


def render_substantive(envelope: Envelope) -> Optional[str]:
    """Default rendering: a handoff note then the body (as AG2 renders packets); None — skipped
    in every view — for an envelope with nothing to show (a packet that only changes the context,
    an empty text)."""
    if envelope.event_type == EV_PACKET:
        r = envelope.event_data.get("routing") or {}
        parts = []
        if r.get("kind") == "handoff" and (r.get("tool") or r.get("target")):
            via = r.get("tool") or f"handoff to {r.get('target')}"
            parts.append(f"[Handed off via {via}] {r.get('reason') or ''}".rstrip())
        if r.get("kind") == "finish":
            parts.append(f"[Finished] {r.get('reason') or ''}".rstrip())
        body = text_of(envelope)
        if body:
            parts.append(body)
        return "\n".join(parts) or None
    return text_of(envelope) or None


def round_to_envelope(metadata: SessionMetadata, sender_id: str, rnd: dict[str, Any]) -> Optional[Envelope]:
    """One agent round (`{body, kind, tool, reason, target, set, delete, mentions?}`) -> an EV_PACKET, or None
    for a silent round (no body, no routing, no context)."""
    kind = rnd.get("kind") or "text"
    body = rnd.get("body") or ""
    sets, dels = dict(rnd.get("set") or {}), list(rnd.get("delete") or [])
    if kind == "text" and not body and not rnd.get("tool") and not sets and not dels:
        return None
    routing: dict[str, Any] = {"kind": kind}
    for key in ("tool", "reason", "target"):
        if rnd.get(key) is not None:
            routing[key] = rnd[key]
    data: dict[str, Any] = {"routing": routing, "context_updates": {"set": sets, "delete": dels}, "body": body}
    if rnd.get("mentions"):  # send_message(content, mentions=[...]): the participants the round addresses
        data["mentions"] = list(rnd["mentions"])
    return Envelope(metadata.session_id, sender_id, None, EV_PACKET, data)
