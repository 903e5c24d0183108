"""A session as the hub holds it: metadata, adapter state, and the bookkeeping folded from its
log. `LiveSession.apply` is the one fold used both for live sends and for hydrate, so a
hydrated session is exactly the session that was running."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_PARTICIPANT_ADDED, EV_SESSION_ACK,
                                       EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_SESSION_OPENED, MEMBERSHIP,
                                       SUBSTANTIVE, Envelope)
from turnflow.runtime.session import NO_ACKS, SessionMetadata, SessionState, iso_z
from turnflow.runtime.transcript import Transcript

if TYPE_CHECKING:
    from turnflow.runtime.adapters.protocol import SessionAdapter

_NONE_FIRED: frozenset[str] = frozenset()  # shared until a session's first violation (one object fewer per session)
# the states as module constants: `SessionState.ACTIVE` is a descriptor lookup on the enum class (~60 ns)
_ACTIVE, _CLOSED, _EXPIRED = SessionState.ACTIVE, SessionState.CLOSED, SessionState.EXPIRED


class LiveSession:
    __slots__ = ("metadata", "adapter", "state", "last_seq", "envelope_count", "fired",
                 "turn_started_at", "turn_epoch", "_turn_key", "last_substantive_at", "pending_close", "corrupt",
                 "transcript", "writing", "substantive", "last_at")

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
        self.substantive = 0  # substantive envelopes folded (the turn count of an adapter without one)
        self.last_at: Optional[float] = None  # the time of the last envelope folded

    @property
    def session_id(self) -> str:
        return self.metadata.session_id

    def expected_speaker(self) -> Optional[str]:
        """The adapter's `expected_next(metadata, state)`; an adapter written to the contract alone
        (without it) is asked nothing: its state's `expected_next_speaker`, if any, else None (any order)."""
        ask = getattr(self.adapter, "expected_next", None)
        if ask is None:
            e = getattr(self.state, "expected_next_speaker", None)
            return e if isinstance(e, str) else None
        e = ask(self.metadata, self.state)
        return e.agent_id if e is not None else None

    def turn_count(self) -> int:
        """The adapter's `turn_count(state)`; without it, the state's `turn_count`, else the number of
        substantive envelopes accepted so far."""
        count = getattr(self.adapter, "turn_count", None)
        if count is not None:
            return int(count(self.state))
        n = getattr(self.state, "turn_count", None)
        return n if isinstance(n, int) and not isinstance(n, bool) else self.substantive

    def apply(self, env: Envelope) -> None:
        """Fold one accepted envelope: lifecycle bookkeeping, then the adapter's fold."""
        md = self.metadata
        et = env.event_type
        self.last_seq = env.seq
        self.last_at = env.created_at
        self.envelope_count += 1
        self.state = self.adapter.fold(env, self.state)
        if et in SUBSTANTIVE:
            self.substantive += 1
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
            md.state = _ACTIVE
            md.activated_at = env.created_at
        elif et == EV_SESSION_CLOSED or et == EV_SESSION_EXPIRED:
            md.state = _CLOSED if et == EV_SESSION_CLOSED else _EXPIRED
            md.close_reason = str(env.event_data.get("reason", ""))
            md.closed_at = env.created_at
            self.pending_close = None
            self.transcript = None  # nobody takes a turn any more: a later view reads the log once
        elif et in MEMBERSHIP:  # the adapter folded the roster change; the metadata follows it
            md.change_roster(et == EV_PARTICIPANT_ADDED, env.event_data)
        elif et == EV_EXPECTATION_VIOLATED:
            key = env.event_data.get("key")
            if isinstance(key, str):
                fired = self.fired
                if isinstance(fired, frozenset):  # only _NONE_FIRED is one
                    fired = self.fired = set()
                fired.add(key)
        if md.state is _ACTIVE:
            turn_key = getattr(self.adapter, "turn_key", None)  # the same pair, without allocating an ExpectedTurn
            key = turn_key(self.state) if turn_key is not None else (self.expected_speaker(), self.turn_count())
            if key != self._turn_key:  # a new turn begins (someone spoke, or the turn moved on)
                self._turn_key = key
                self.turn_epoch += 1
                self.turn_started_at = env.created_at

    def restart_turn_clocks(self, now: float) -> None:
        """The session is continued (`run_session(session_id=...)`, a batch taking an interrupted
        task): the turn in progress is asked again from its start, now, so the time nobody held the
        session — a stopped batch, a worker gone, a wall-clock step between two processes — is not
        counted as time its speaker took (`turn_within`, `reply_within`) or as silence
        (`max_silence`). Kept in memory only: the log is unchanged. (The TTL: runner._continue_clocks.)"""
        if self.turn_started_at is not None:
            self.turn_started_at = now
        if self.last_substantive_at is not None or self.metadata.activated_at is not None:
            self.last_substantive_at = now

    def shift_turn_clocks(self, delta: float) -> None:
        """Move the times the expectations count from by `delta` seconds (a hub started again: the
        gap since the store's last write is not time the session's speaker took)."""
        if self.turn_started_at is not None:
            self.turn_started_at += delta
        since = self.last_substantive_at if self.last_substantive_at is not None else self.metadata.activated_at
        if since is not None:
            self.last_substantive_at = since + delta

    def info(self) -> dict[str, Any]:
        """The session for users: `created_at` as ISO-8601 UTC text ending in `Z` (the metadata keeps
        epoch seconds). `Hub.info` adds `adapter_capabilities` (stored beside the session)."""
        md = self.metadata
        return {"session_id": md.session_id, "kind": md.kind, "state": md.state.value,
                "close_reason": md.close_reason or None, "turn_count": self.turn_count(),
                "expected_next": self.expected_speaker() if not md.state.terminal else None,
                "envelope_count": self.envelope_count, "created_at": iso_z(md.created_at)}
