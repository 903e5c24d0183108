"""Session lifecycle (docs/runtime.md, "Lifecycle"): open (INVITED, one invite per target),
ack (the last one opens the session: ACTIVE), reject, close (CLOSING until `session.closed` is
delivered, then CLOSED) and expire. Writes go through the hub's commit part, deliveries through its bus."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from turnflow.runtime.adapters.protocol import SessionAdapter
from turnflow.runtime.envelope import (EV_SESSION_ACK, EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_SESSION_INVITE,
                                       EV_SESSION_OPENED, EV_SESSION_REJECT, Envelope)
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.hub.commit import HUB_SENDER
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import (Expectation, SessionMetadata, SessionState, check_agent_id, new_session_id,
                                      shared_knobs)
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.store.records import session_row_of

_INVITED = SessionState.INVITED  # (a module constant: `SessionState.INVITED` is a descriptor lookup, ~60 ns)

if TYPE_CHECKING:
    from turnflow.runtime.hub import Hub


def _expectations(declared: Sequence[Expectation], defaults: Iterable[Expectation]) -> list[Expectation]:
    """A new session's expectations: the declared ones, then each default not declared by name."""
    names = {e.name for e in declared}
    return [*declared, *(e for e in defaults if e.name not in names)]


class Lifecycle:
    """The lifecycle steps of one hub's sessions."""

    __slots__ = ("hub",)

    def __init__(self, hub: "Hub") -> None:
        self.hub = hub

    async def open(self, adapter: SessionAdapter, spec: SessionSpec, creator_id: str,
                   labels: Optional[dict[str, Any]], extra: Optional[dict[str, Any]]) -> SessionMetadata:
        """Create the session (INVITED) and one invite per target: its creation record and the
        invites are one group commit; nothing is stored when the adapter refuses it."""
        hub = self.hub
        if not hub._seq_ready(len(spec.participants)):  # the invites, an opening
            await hub._commits.numbers(len(spec.participants))  # (a database server away: waited off the loop)
        check_agent_id(creator_id)
        ttl_seconds = spec.ttl_seconds
        exps = _expectations(spec.expectations, adapter.manifest.default_expectations)
        now = hub.clock()
        md = SessionMetadata(session_id=new_session_id(), manifest=adapter.manifest, creator_id=creator_id,
                             participants=spec.participants, knobs=shared_knobs(spec.knobs), created_at=now,
                             name=spec.name, expectations=exps, ttl_seconds=ttl_seconds, labels=dict(labels or {}),
                             tools=spec.tools, extra=extra)
        adapter.validate_create(md)
        live = LiveSession(md, adapter, adapter.initial_state(md))
        md.expires_at = now + ttl_seconds if ttl_seconds else None
        md.pending_acks = set(md.participant_ids) - {creator_id}
        record = session_row_of(md)  # = session_row(md.creation_record())
        commits = hub._commits
        group = commits.group or commits.new_group()
        group.sessions.append(record)
        group.new.append(md.session_id)
        hub.sessions[md.session_id] = live
        hub._watched[md.session_id] = live
        invites = [Envelope(md.session_id, creator_id, [target], EV_SESSION_INVITE, {})
                   for target in md.participant_ids if target != creator_id]
        for staged, invite in enumerate(invites):
            hub._stage(live, invite, False, staged)
        if not md.pending_acks:  # pragma: no cover - every kind has two or more participants
            hub._stage(live, Envelope(md.session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False, len(invites))
        await asyncio.sleep(0)  # `await group.committed()`, inlined: one coroutine fewer per waiting open
        if not group.settled:
            await group.committed()
        group.outcome(md.session_id)
        await self.deliver_invites(invites, md)
        return md

    async def deliver_invites(self, invites: list[Envelope], md: SessionMetadata) -> None:
        """The invites of a new session, handed to the hub's listeners (the invited participants
        learn of the session that way)."""
        hub = self.hub
        if hub.listeners:
            for env in invites:
                await hub._deliver(env, md)

    async def ack(self, session_id: str, agent_id: str) -> None:
        """Log `agent_id`'s ack; the last one opens the session (`session.opened`: ACTIVE)."""
        hub = self.hub
        if not hub._seq_ready(2):  # a database server away: wait off the loop
            await hub._commits.numbers(2)
        live = hub._live(session_id)
        md = live.metadata
        if live.writing is not None:
            await hub._idle(live)
        if md.state != _INVITED:
            raise ProtocolError(f"session {session_id!r} is {md.state.value}, not waiting for acks")
        if agent_id not in md.pending_acks:
            raise ProtocolError(f"session {session_id!r} has no pending invite for {agent_id!r}")
        env = Envelope(session_id, agent_id, [md.creator_id], EV_SESSION_ACK, {})
        listening = bool(hub.listeners or hub._session_listeners)
        group = hub._stage(live, env, False)
        if not listening and len(md.pending_acks) == 1:
            # the last ack: `session.opened` goes into the same group (one commit and one wait, not
            # two); with listeners it is written after they have heard the ack, as it always was
            hub._stage(live, Envelope(session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False, 1)
        await asyncio.sleep(0)  # `await group.committed()`, inlined: one coroutine fewer per waiting ack
        if not group.settled:
            await group.committed()
        group.outcome(session_id)
        if listening:
            await hub._deliver(env, md)
        if not md.pending_acks and md.state == _INVITED:
            opened = await hub._append_hub(live, EV_SESSION_OPENED, {})
            if opened is not None and (hub.listeners or hub._session_listeners):
                await hub._deliver(opened, md)

    async def reject(self, session_id: str, agent_id: str, reason: str = "") -> None:
        """Log `agent_id`'s reject, deliver it, and close the session (`invite_rejected`)."""
        hub = self.hub
        if not hub._seq_ready(1):  # a database server away: wait off the loop
            await hub._commits.numbers(1)
        live = hub._live(session_id)
        md = live.metadata
        await hub._idle(live)
        if md.state != SessionState.INVITED or agent_id not in md.pending_acks:
            raise ProtocolError(f"session {session_id!r} has no pending invite for {agent_id!r}")
        env = await hub._append(live, Envelope(session_id, agent_id, [md.creator_id], EV_SESSION_REJECT,
                                                {"reason": reason}))
        await hub._deliver(env, md)
        await self.close_now(live, "invite_rejected")

    async def close(self, session_id: str, reason: str = "explicit_close") -> None:
        """A close asked from outside: refused for an ended or closing session, or an empty reason."""
        hub = self.hub
        live = hub._live(session_id)
        if live.metadata.state.terminal or live.metadata.state == SessionState.CLOSING:
            raise ProtocolError(f"session {session_id!r} is already {live.metadata.state.value}")
        if not isinstance(reason, str) or not reason:
            raise ProtocolError(f"close reason must be a non-empty string, got {reason!r}")
        await self.close_now(live, reason)

    async def close_now(self, live: LiveSession, reason: str) -> None:
        """CLOSING (nothing else accepted), then `session.closed` written and delivered."""
        await self.hub._idle(live)
        if live.metadata.state.terminal:
            return
        live.metadata.state = SessionState.CLOSING
        live.pending_close = reason
        await self.finish_close(live, reason)

    async def finish_close(self, live: LiveSession, reason: str) -> Optional[Envelope]:
        """Write and deliver `session.closed` (None: the session had ended meanwhile)."""
        hub = self.hub
        md = live.metadata
        try:
            env = await hub._append_hub(live, EV_SESSION_CLOSED, {"reason": reason}, sender=md.creator_id)
            if env is not None and (hub.listeners or hub._session_listeners):
                await hub._deliver(env, md)
        finally:
            hub.ended(live)  # (once it has ended: a hub that does not keep ended sessions lets it go)
        return env

    async def expire(self, live: LiveSession) -> Optional[Envelope]:
        """Write and deliver `session.expired` (the TTL sweeper)."""
        hub = self.hub
        md = live.metadata
        try:
            env = await hub._append_hub(live, EV_SESSION_EXPIRED, {"reason": "ttl_expired"}, sender=md.creator_id)
            if env is not None:
                await hub._deliver(env, md)
        finally:
            hub.ended(live)
        return env
