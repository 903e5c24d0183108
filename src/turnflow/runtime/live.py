"""A session as the hub holds it: metadata, adapter state, and the bookkeeping folded from its
log. `LiveSession.apply` is the one fold used both for live sends and for hydrate, so a
hydrated session is exactly the session that was running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_SESSION_ACK, EV_SESSION_CLOSED,
                                       EV_SESSION_EXPIRED, EV_SESSION_OPENED, SUBSTANTIVE, Envelope)
from turnflow.runtime.session import NO_ACKS, SessionMetadata, SessionState
from turnflow.runtime.transcript import Transcript

if TYPE_CHECKING:
    from turnflow.runtime.adapters.base import SessionAdapter

_NONE_FIRED: frozenset[str] = frozenset()  # shared until a session's first violation (one object fewer per session)


class LiveSession:
    __slots__ = ("metadata", "adapter", "state", "last_seq", "envelope_count", "fired",
                 "turn_started_at", "turn_epoch", "_turn_key", "last_substantive_at", "pending_close", "corrupt",
                 "transcript", "writing")

    def __init__(self, metadata: SessionMetadata, adapter: SessionAdapter, state: Any) -> None:
        self.metadata = metadata
        self.adapter = adapter
        self.state = state
        self.last_seq = 0
        self.envelope_count = 0
        self.fired: Union[frozenset[str], set[str]] = _NONE_FIRED  # keys that fired: a set from the first one on
        self.turn_started_at: Optional[float] = None
        self.turn_epoch = 0
        self._turn_key: Any = None
        self.last_substantive_at: Optional[float] = None
        self.pending_close: Optional[str] = None  # the adapter asked to close; session.closed not yet logged
        self.corrupt: Optional[str] = None
        self.transcript: Optional[Transcript] = None  # built on the first view, then kept by apply
        self.writing: Any = None  # a future while an envelope of this session waits for its commit

    @property
    def session_id(self) -> str:
        return self.metadata.session_id

    def expected_speaker(self) -> Optional[str]:
        e = self.adapter.expected_next(self.metadata, self.state)
        return e.agent_id if e is not None else None

    def turn_count(self) -> int:
        return self.adapter.turn_count(self.state)

    def apply(self, env: Envelope) -> None:
        """Fold one accepted envelope: lifecycle bookkeeping, then the adapter's fold."""
        md = self.metadata
        et = env.event_type
        self.last_seq = env.seq
        self.envelope_count += 1
        self.state = self.adapter.fold(env, self.state)
        if et in SUBSTANTIVE:
            self.last_substantive_at = env.created_at
            if self.transcript is not None:
                self.transcript.entries.append(env)
        elif et == EV_SESSION_ACK:
            acks = md.pending_acks
            if acks:  # (NO_ACKS, the shared empty one, once every invite is acked)
                acks.discard(env.sender_id)
                if not acks:
                    md.pending_acks = NO_ACKS
        elif et == EV_SESSION_OPENED:
            md.state = SessionState.ACTIVE
            md.activated_at = env.created_at
        elif et == EV_SESSION_CLOSED or et == EV_SESSION_EXPIRED:
            md.state = SessionState.CLOSED if et == EV_SESSION_CLOSED else SessionState.EXPIRED
            md.close_reason = str(env.event_data.get("reason", ""))
            md.closed_at = env.created_at
            self.pending_close = None
            self.transcript = None  # nobody takes a turn any more: a later view reads the log once
        elif et == EV_EXPECTATION_VIOLATED:
            key = env.event_data.get("key")
            if isinstance(key, str):
                fired = self.fired
                if isinstance(fired, frozenset):  # only _NONE_FIRED is one
                    fired = self.fired = set()
                fired.add(key)
        if md.state is SessionState.ACTIVE:
            turn_key = getattr(self.adapter, "turn_key", None)  # the same pair, without allocating an ExpectedTurn
            key = turn_key(self.state) if turn_key is not None else (self.expected_speaker(), self.turn_count())
            if key != self._turn_key:  # a new turn begins (someone spoke, or the turn moved on)
                self._turn_key = key
                self.turn_epoch += 1
                self.turn_started_at = env.created_at

    def info(self) -> dict[str, Any]:
        md = self.metadata
        return {"session_id": md.session_id, "kind": md.kind, "state": md.state.value,
                "close_reason": md.close_reason or None, "turn_count": self.turn_count(),
                "expected_next": self.expected_speaker() if not md.state.terminal else None,
                "envelope_count": self.envelope_count}
