"""The asyncio hub: sessions, their lifecycle (docs/runtime.md, "Lifecycle"), the write-ahead log and the sweepers.

Every change is an envelope written to the store *before* it is folded or delivered:
`post` = check → adapter.validate_send → stamp → stage in this tick's group → the group's one
`store.commit_group` (group_commit.py, store/contract.py: the hub's only write path) → fold →
on_accepted → deliver → (close). A refused send raises `ProtocolError` and changes nothing. A close asked by the
adapter puts the session in CLOSING (so nothing else is accepted) until its envelope has
been delivered, then the hub logs `session.closed` and the session is CLOSED: the hub
always completes that step, on hydrate too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Iterator, Optional, Sequence, Union

from turnflow.runtime import expectations as _exp
from turnflow.runtime.adapters import builtin_adapters
from turnflow.runtime.adapters.base import SessionAdapter
from turnflow.runtime.adapters.contract import ContractAdapter, needs_defaults, needs_membership
from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_SESSION_ACK, EV_SESSION_CLOSED,
                                       EV_SESSION_EXPIRED, EV_SESSION_INVITE, EV_SESSION_OPENED,
                                       EV_SESSION_REJECT, LIFECYCLE, MEMBERSHIP, SUBSTANTIVE, Envelope,
                                       envelope_id_for)
from turnflow.runtime.clock import STEADY
from turnflow.runtime.errors import ProtocolError, RuntimeErrorBase, StoreError
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import (Expectation, Participant, SessionMetadata, SessionRecord, SessionState,
                                      adapter_capabilities, check_agent_id, check_session_id, new_session_id,
                                      shared_knobs)
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.group_commit import GroupCommit
from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import Corrupt, Refusals, envelope_row, session_row, telemetry_row
from turnflow.runtime.transcript import Transcript

Listener = Callable[[Envelope, SessionMetadata], Awaitable[None]]
HUB_SENDER = "hub"


def _audience_ok(audience: Any, pset: frozenset[str]) -> bool:
    """A posted audience is a list of participant ids. (A function of its own: a generator
    expression inside `post` would turn the names it uses into cells, one object more per post.)"""
    return isinstance(audience, list) and all(type(a) is str and a in pset for a in audience)


def _check_posted_type(et: str, live: LiveSession) -> None:
    """A participant may not post what the hub writes; a roster change only where the adapter
    allows it (conversation, discussion: `membership`)."""
    if et in LIFECYCLE or et == EV_EXPECTATION_VIOLATED:
        raise ProtocolError(f"{et!r} envelopes are written by the hub, not posted")
    if et in MEMBERSHIP and not live.adapter.membership:
        raise ProtocolError(f"{et!r} refused: the participants of a {live.metadata.kind} session are fixed by its flow")


@dataclass
class HydrateReport:
    sessions: int = 0
    envelopes: int = 0
    problems: list[Corrupt] = field(default_factory=list)
    completed_closes: list[str] = field(default_factory=list)
    completed_opens: list[str] = field(default_factory=list)


def _check_labels(labels: Any) -> None:
    if labels is not None and not isinstance(labels, dict):
        raise ProtocolError(f"labels must be an object, got {type(labels).__name__}")


def _expectations(declared: Sequence[Expectation], defaults: Iterable[Expectation]) -> list[Expectation]:
    """A new session's expectations: the declared ones, then each default not declared by name."""
    names = {e.name for e in declared}
    return [*declared, *(e for e in defaults if e.name not in names)]


def _sweepable(live: LiveSession) -> bool:
    """Whether the sweepers look at a session: not ended, not closing, its log not corrupt."""
    state = live.metadata.state
    return not state.terminal and state != SessionState.CLOSING and live.corrupt is None


class Hub:
    """Create with `await Hub.open(store, clock=...)`; `clock()` returns epoch seconds (by default
    `clock.STEADY`: the wall clock at start plus monotonic time, so a wall-clock step never makes a
    deadline pass)."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = STEADY,
                 adapters: Optional[dict[tuple[str, int], SessionAdapter]] = None) -> None:
        self.store = store
        self.clock = clock
        self.adapters = adapters if adapters is not None else builtin_adapters()
        self._as_written: set[int] = set()  # ids of the adapters that need no `ContractAdapter`
        self.sessions: dict[str, LiveSession] = {}  # creation order
        # the sessions the sweepers still look at (creation order): an ended one leaves at the next
        # pass, so a pass walks the open sessions, not every session the hub ever held
        self._watched: dict[str, LiveSession] = {}
        self.listeners: list[Listener] = []
        self._session_listeners: dict[str, list[Listener]] = {}  # listeners of one session's envelopes
        self.telemetry_listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._group: Optional[GroupCommit] = None  # the group commit of this event-loop tick
        self._sweeper: Optional[asyncio.Task[None]] = None
        self.report = HydrateReport()

    @classmethod
    async def open(cls, store: Store, *, only: Optional[str] = None, **kw: Any) -> "Hub":
        """A hub on `store`, hydrated (`hydrate(only=...)`), with the closes and opens its log
        left half-done completed."""
        hub = cls(store, **kw)
        hub.report = hub.hydrate(only=only)
        for sid in hub.report.completed_closes:
            live = hub.sessions[sid]
            await hub._finish_close(live, live.pending_close or "workflow_terminated")
        for sid, live in hub.sessions.items():  # every invite was acked, but the process died before session.opened
            md = live.metadata
            if md.state == SessionState.INVITED and not md.pending_acks and live.corrupt is None:
                opened = await hub._append_hub(live, EV_SESSION_OPENED, {})
                if opened is not None:
                    await hub._deliver(opened, md)
                hub.report.completed_opens.append(sid)
        return hub

    def adopt(self, live: LiveSession) -> None:
        """Hold a session hydrated elsewhere (a batch worker's claimed one): read, written and swept
        like the hub's own."""
        self.sessions[live.session_id] = live
        self._watched[live.session_id] = live

    # -- hydrate --------------------------------------------------------------------------------
    def hydrate(self, only: Optional[str] = None) -> HydrateReport:
        """Rebuild every session by streaming its envelopes through initial_state + fold —
        with `only`, that one session alone, read by itself (`store.load`: a worker taking it
        over, `inspect --session`), never the whole store. Terminal sessions stay terminal. A
        corrupt record is reported (session, seq) and neither it nor anything after it in that
        session is folded. (A hub that must hold none of a store's sessions is not hydrated.)"""
        report = HydrateReport()
        self.sessions = {}
        if only is None:  # (both streamed: read as they are iterated)
            records: Iterable[Union[dict[str, Any], Corrupt]] = self.store.sessions()
            items: Iterable[Union[Envelope, Corrupt]] = self.store.stream()
        else:
            record = self.store.session_record(only)
            records = () if record is None else (record,)
            items = self.store.load(only)
        for rec in records:
            live = self._hydrate_session(rec, report)
            if live is not None:
                self.sessions[live.session_id] = live
                report.sessions += 1
        for item in items:
            self._hydrate_record(item, report)
        self._watched = dict(self.sessions)
        report.completed_closes = [sid for sid, live in self.sessions.items()
                                   if live.pending_close is not None and live.corrupt is None
                                   and not live.metadata.state.terminal]
        return report

    def _hydrate_session(self, rec: Union[dict[str, Any], Corrupt], report: HydrateReport) -> Optional[LiveSession]:
        """A session from its creation record, before any envelope; None (reported) when it cannot be."""
        if isinstance(rec, Corrupt):
            report.problems.append(rec)
            return None
        try:
            md = SessionMetadata.from_creation_record(rec)
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase) as exc:
            report.problems.append(Corrupt(str(rec.get("session_id")), 0,
                                           f"session record has the wrong shape: {type(exc).__name__}"))
            return None
        adapter = self._complete((md.manifest.type, md.manifest.version))
        if adapter is None:
            report.problems.append(Corrupt(md.session_id, 0, f"no adapter for {md.manifest.type!r} "
                                                             f"v{md.manifest.version}"))
            return None
        md.expires_at = md.created_at + md.ttl_seconds if md.ttl_seconds else None
        try:
            state = adapter.initial_state(md)
        except ProtocolError as exc:
            report.problems.append(Corrupt(md.session_id, 0, f"session record is invalid: {exc}"))
            return None
        return LiveSession(md, adapter, state)

    def _hydrate_record(self, item: Union[Envelope, Corrupt], report: HydrateReport) -> None:
        """Fold one logged envelope into its session, or stop that session at a bad record."""
        live = self.sessions.get(item.session_id)
        if isinstance(item, Corrupt):
            if live is not None and live.corrupt is None:
                live.corrupt = str(item)
            report.problems.append(item)
            return
        if live is None or live.corrupt is not None:
            return
        if item.seq != live.last_seq + 1:
            live.corrupt = f"session {item.session_id} seq {live.last_seq + 1}: missing record"
            report.problems.append(Corrupt(item.session_id, live.last_seq + 1, "missing record (gap)"))
            return
        try:
            live.apply(item)
            if item.event_type in SUBSTANTIVE and not live.metadata.state.terminal:
                res = live.adapter.on_accepted(live.metadata, item, live.state)
                if res.close_reason is not None:
                    live.pending_close = res.close_reason
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase) as exc:
            # a record with a good checksum that the session cannot fold: stop this session here
            live.corrupt = f"session {item.session_id} seq {item.seq}: record does not fold"
            report.problems.append(Corrupt(item.session_id, item.seq,
                                           f"record does not fold ({type(exc).__name__}: {str(exc)[:120]})"))
            return
        report.envelopes += 1

    # -- lookups --------------------------------------------------------------------------------
    def _live(self, session_id: Any) -> LiveSession:
        check_session_id(session_id)
        live = self.sessions.get(session_id)
        if live is None:
            raise ProtocolError(f"unknown session id {session_id!r}")
        return live

    def metadata(self, session_id: str) -> SessionMetadata:
        return self._live(session_id).metadata

    def adapter_state(self, session_id: str) -> Any:
        """The session's adapter state (an immutable value: the next fold builds a new one)."""
        return self._live(session_id).state

    def info(self, session_id: str) -> dict[str, Any]:
        """`LiveSession.info()` plus `adapter_capabilities`: each agent's handshake (raw, effective,
        behavior), from the handshake records stored beside the session."""
        live = self._live(session_id)
        return {**live.info(), "adapter_capabilities": adapter_capabilities(self.store.telemetry(session_id))}

    def expected_next(self, session_id: str) -> Optional[str]:
        live = self._live(session_id)
        return None if live.metadata.state.terminal else live.expected_speaker()

    def read(self, session_id: str, start: int = 1, end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]:
        self._live(session_id)
        return self.store.read_range(session_id, start, end)

    async def get_session(self, session_id: str) -> SessionRecord:
        """The session's record (`SessionRecord`: `created_at` as ISO-8601 UTC text ending in `Z`,
        the roster now, `adapter_capabilities`); `ProtocolError` for an unknown id. The hub's own
        `metadata(id)` keeps epoch seconds."""
        live = self._live(session_id)
        return SessionRecord.of(live.metadata, live.info(), adapter_capabilities(self.store.telemetry(session_id)))

    def view(self, session_id: str, agent_id: Optional[str], policy: Any = None) -> Sequence[dict[str, Any]]:
        live = self._live(session_id)
        policy = policy or live.adapter.default_view_policy(live.metadata, agent_id)
        render = live.adapter.render_envelope
        if not hasattr(policy, "project_log"):  # a policy of the user's own: give it the log
            envs = (e for e in self.store.read_range(session_id) if isinstance(e, Envelope))
            return policy.project(envs, agent_id, render)
        tr = live.transcript
        if tr is None:  # first view of this session (since hydrate): built once from the log
            tr = live.transcript = Transcript([e for e in self.store.read_range(session_id, 1, live.last_seq)
                                              if isinstance(e, Envelope) and e.event_type in SUBSTANTIVE])
        return policy.project_log(tr.log_for(agent_id, render, getattr(policy, "named", False)))

    def subscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        """`await listener(envelope, metadata)` for every envelope the hub delivers, or — with
        `session_id` — only for that session's (a runner watching its own session: delivery then
        costs the same however many sessions the hub runs)."""
        if session_id is None:
            self.listeners.append(listener)
        else:
            self._session_listeners.setdefault(session_id, []).append(listener)

    def unsubscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        own = self.listeners if session_id is None else self._session_listeners.get(session_id)
        if own is not None and listener in own:
            own.remove(listener)
            if session_id is not None and not own:
                del self._session_listeners[session_id]

    def subscribe_telemetry(self, fn: Callable[[str, dict[str, Any]], None]) -> None:
        """`fn(session_id, record)` is called (synchronously) for every telemetry record as it is stored."""
        self.telemetry_listeners.append(fn)

    # -- writing: one path, the tick's group commit (group_commit.py) -----------------------------

    async def _idle(self, live: LiveSession) -> None:
        """Wait until no envelope of this session is waiting for its commit (so checks see the
        folded state and envelopes of one session are written and folded in order)."""
        while live.writing is not None:
            await live.writing.committed()

    async def _append(self, live: LiveSession, env: Envelope, accept: bool = False) -> Envelope:
        """Stamp, log and fold one envelope (call `_idle` first, then check, with no await between)."""
        group = self._stage(live, env, accept)
        await group.committed()  # cancelling the poster here takes effect after the commit and the fold
        group.outcome(env.session_id)
        return env

    def _stage(self, live: LiveSession, env: Envelope, accept: bool, ahead: int = 0) -> GroupCommit:
        """Stamp one envelope and add it to this event-loop tick's group; returns the group. The
        group is committed at the end of the tick, then each envelope is folded in log order.
        `accept`: a participant's envelope, also given to the adapter's `on_accepted`. `ahead`: how
        many envelopes of this session are already staged in this group (open_session's invites)."""
        gseq = self.store.next_global_seq()
        env.envelope_id = envelope_id_for(gseq)
        env.seq = live.last_seq + 1 + ahead
        env.created_at = self.clock()
        try:
            row = envelope_row(env, gseq)
        except (TypeError, ValueError) as exc:  # not JSON: refused, nothing staged
            raise ProtocolError(f"envelope data must be JSON values: {exc}") from None
        group = self._group or self._new_group()
        group.rows.append(row)  # parallel lists, not tuples: fewer objects for the GC to track
        group.envelopes.append(env)
        group.lives.append(live)
        group.accepts.append(accept)
        live.writing = group
        return group

    def _new_group(self) -> GroupCommit:
        """This tick's group, its commit scheduled for the end of the tick."""
        group = self._group = GroupCommit()
        asyncio.get_running_loop().call_soon(self._commit)
        return group

    def _commit(self) -> None:
        group = self._group
        assert group is not None  # scheduled by `_new_group`
        self._group = None
        try:
            written = self.store.commit_group(group.units)
        except Exception as exc:  # the store could not even take the group (closed)
            self._settle(group, None, exc)
            return
        if written.done():  # committed on the loop (SQLite)
            self._written(group, written)
        else:
            written.add_done_callback(lambda f: self._written(group, f))

    def _written(self, group: GroupCommit, written: "asyncio.Future[Refusals]") -> None:
        if written.cancelled():
            self._settle(group, None, StoreError("the write was cancelled"))
        elif written.exception() is not None:
            self._settle(group, None, written.exception())
        else:
            self._settle(group, written.result() or None, None)

    def _settle(self, group: GroupCommit, refused: Optional[Refusals], error: Optional[BaseException]) -> None:
        """Fold each envelope of the group in log order, except those of the sessions the store
        refused (a batch worker that lost a task's lease); on an error nothing was written and
        nothing is folded. Sessions whose creation record was not written are dropped."""
        if error is not None:
            group.error = error if isinstance(error, StoreError) else StoreError(f"commit failed: {error}")
            refused = {sid: group.error for sid in group.new}
        group.refused = refused
        if refused:
            for sid in group.new:
                if sid in refused:
                    self.sessions.pop(sid, None)
                    self._watched.pop(sid, None)
        for live, env, accept in zip(group.lives, group.envelopes, group.accepts):
            live.writing = None
            if group.error is None and not (refused and env.session_id in refused):
                self._fold(live, env, accept)
        group.settle()

    def _fold(self, live: LiveSession, env: Envelope, accept: bool) -> None:
        try:
            live.apply(env)
            if accept and env.event_type in SUBSTANTIVE:
                result = live.adapter.on_accepted(live.metadata, env, live.state)
                if result.close_reason is not None:
                    live.metadata.state = SessionState.CLOSING
                    live.pending_close = result.close_reason
        except Exception as exc:  # an adapter bug: this session refuses further sends, the others go on
            live.corrupt = f"session {live.session_id} seq {env.seq}: fold failed: {type(exc).__name__}: {exc}"

    async def _append_hub(self, live: LiveSession, event_type: str, data: dict[str, Any],
                          audience: Optional[list[str]] = None, sender: Optional[str] = None) -> Optional[Envelope]:
        """A hub-written envelope; None (nothing written) when the session became terminal meanwhile."""
        if live.writing is not None:
            await self._idle(live)
        if live.metadata.state.terminal:
            return None
        env = Envelope(live.session_id, sender or HUB_SENDER, audience, event_type, data)
        return await self._append(live, env)

    async def _deliver(self, env: Envelope, md: SessionMetadata) -> None:
        for listener in self.listeners:
            await listener(env, md)
        own = self._session_listeners.get(env.session_id)
        if own:
            for listener in tuple(own):
                await listener(env, md)

    def _listening(self) -> bool:
        return bool(self.listeners or self._session_listeners)

    async def open_session(self, kind: str, participants: Iterable[Union[Participant, dict[str, Any], str]], *,
                           creator_id: Optional[str] = None, knobs: Optional[dict[str, Any]] = None, name: str = "",
                           expectations: Optional[list[Any]] = None, ttl_seconds: Optional[float] = None,
                           labels: Optional[dict[str, Any]] = None, tools: Optional[list[dict[str, Any]]] = None,
                           version: int = 1, extra: Optional[dict[str, Any]] = None) -> SessionMetadata:
        """Validate, create (INVITED) and post one invite per target; nothing is stored when invalid.
        The creation record and the invites are one group commit (one wait per open). `extra`:
        kept in the record and handed back, never acted on (`SessionMetadata.extra`). The opener
        is `creator_id`, else the initiator, else the first participant."""
        adapter = self._adapter_for(kind, version)
        spec = SessionSpec.of(kind, participants, knobs=knobs, name=name, expectations=expectations,
                              ttl_seconds=ttl_seconds, tools=tools)
        _check_labels(labels)
        if creator_id is None:
            creator_id = next((p.agent_id for p in spec.participants if p.role == "initiator"),
                              spec.participants[0].agent_id if spec.participants else "")
        return await self._open(adapter, spec, creator_id, labels, extra)

    async def open_spec(self, spec: Union[SessionSpec, dict[str, Any]], *, labels: Optional[dict[str, Any]] = None,
                        version: int = 1, extra: Optional[dict[str, Any]] = None) -> SessionMetadata:
        """Open a session from a compiled session spec (docs/compiler.md): a `SessionSpec`, or its
        JSON object (parsed here). Its opener opens it (`SessionSpec.opener`)."""
        spec = SessionSpec.parse(spec)
        adapter = self._adapter_for(spec.kind, version)
        _check_labels(labels)
        opener = spec.opener  # (a workflow's graph is read here, once: the adapter compiles that model)
        if opener is None:
            opener = spec.participants[0].agent_id if spec.participants else ""
        return await self._open(adapter, spec, opener, labels, extra)

    async def _open(self, adapter: SessionAdapter, spec: SessionSpec, creator_id: str,
                    labels: Optional[dict[str, Any]], extra: Optional[dict[str, Any]]) -> SessionMetadata:
        check_agent_id(creator_id)
        ttl_seconds = spec.ttl_seconds
        exps = _expectations(spec.expectations, adapter.manifest.default_expectations)
        now = self.clock()
        md = SessionMetadata(session_id=new_session_id(), manifest=adapter.manifest, creator_id=creator_id,
                             participants=spec.participants, knobs=shared_knobs(spec.knobs), created_at=now,
                             name=spec.name, expectations=exps, ttl_seconds=ttl_seconds, labels=dict(labels or {}),
                             tools=spec.tools, extra=extra)
        adapter.validate_create(md)
        live = LiveSession(md, adapter, adapter.initial_state(md))
        md.expires_at = now + ttl_seconds if ttl_seconds else None
        md.pending_acks = set(md.participant_ids) - {creator_id}
        record = session_row(md.creation_record())
        group = self._group or self._new_group()
        group.sessions.append(record)
        group.new.append(md.session_id)
        self.sessions[md.session_id] = live
        self._watched[md.session_id] = live
        invites = [Envelope(md.session_id, creator_id, [target], EV_SESSION_INVITE, {})
                   for target in md.participant_ids if target != creator_id]
        for staged, invite in enumerate(invites):
            self._stage(live, invite, False, staged)
        if not md.pending_acks:  # pragma: no cover - every kind has two or more participants
            self._stage(live, Envelope(md.session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False, len(invites))
        await asyncio.sleep(0)  # `await group.committed()`, inlined: one coroutine fewer per waiting open
        if not group.settled:
            await group.committed()
        group.outcome(md.session_id)
        await self._deliver_invites(invites, md)
        return md

    async def _deliver_invites(self, invites: list[Envelope], md: SessionMetadata) -> None:
        """The invites of a new session, handed to the hub's listeners (the invited participants
        learn of the session that way)."""
        if self.listeners:
            for env in invites:
                await self._deliver(env, md)

    def _adapter_for(self, kind: Any, version: Any) -> SessionAdapter:
        if not isinstance(kind, str) or isinstance(version, bool) or not isinstance(version, int):
            raise ProtocolError(f"session kind must be a string, got {type(kind).__name__}")
        adapter = self._complete((kind, version))
        if adapter is None:
            known = ", ".join(sorted(t for t, _ in self.adapters))
            raise ProtocolError(f"unknown session kind {kind!r} (known: {known})")
        return adapter

    def _complete(self, key: tuple[Any, Any]) -> Optional[SessionAdapter]:
        """The adapter registered under `key`; one written to the contract (its required methods
        only, or the contract's `build_round_envelope` signature) is wrapped once in a
        `ContractAdapter`, which supplies the documented defaults."""
        adapter = self.adapters.get(key)
        if adapter is None or id(adapter) in self._as_written:
            return adapter
        if needs_defaults(adapter):
            adapter = self.adapters[key] = ContractAdapter(adapter, self)
        elif needs_membership(adapter):  # says nothing of its roster: a fixed one, and nothing else changes
            adapter = self.adapters[key] = ContractAdapter(adapter, self, silent_rounds=False)
        self._as_written.add(id(adapter))
        return adapter

    async def ack(self, session_id: str, agent_id: str) -> None:
        live = self._live(session_id)
        md = live.metadata
        if live.writing is not None:
            await self._idle(live)
        if md.state != SessionState.INVITED:
            raise ProtocolError(f"session {session_id!r} is {md.state.value}, not waiting for acks")
        if agent_id not in md.pending_acks:
            raise ProtocolError(f"session {session_id!r} has no pending invite for {agent_id!r}")
        env = Envelope(session_id, agent_id, [md.creator_id], EV_SESSION_ACK, {})
        listening = bool(self.listeners or self._session_listeners)
        group = self._stage(live, env, False)
        if not listening and len(md.pending_acks) == 1:
            # the last ack: `session.opened` goes into the same group (one commit and one wait, not
            # two); with listeners it is written after they have heard the ack, as it always was
            self._stage(live, Envelope(session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False, 1)
        await asyncio.sleep(0)  # `await group.committed()`, inlined: one coroutine fewer per waiting ack
        if not group.settled:
            await group.committed()
        group.outcome(session_id)
        if listening:
            await self._deliver(env, md)
        if not md.pending_acks and md.state == SessionState.INVITED:
            opened = await self._append_hub(live, EV_SESSION_OPENED, {})
            if opened is not None and (self.listeners or self._session_listeners):
                await self._deliver(opened, md)

    async def reject(self, session_id: str, agent_id: str, reason: str = "") -> None:
        live = self._live(session_id)
        md = live.metadata
        await self._idle(live)
        if md.state != SessionState.INVITED or agent_id not in md.pending_acks:
            raise ProtocolError(f"session {session_id!r} has no pending invite for {agent_id!r}")
        env = await self._append(live, Envelope(session_id, agent_id, [md.creator_id], EV_SESSION_REJECT,
                                                {"reason": reason}))
        await self._deliver(env, md)
        await self._close(live, "invite_rejected")

    async def post(self, env: Envelope) -> Envelope:
        """Validate, log, fold and deliver one envelope from a participant; returns it stamped."""
        sid = env.session_id
        live = self.sessions.get(sid) if type(sid) is str else None  # a known id is a valid one
        if live is None:
            live = self._live(sid)
        md = live.metadata
        if live.writing is not None:
            await self._idle(live)
        if md.state != SessionState.ACTIVE:
            raise ProtocolError(f"session {md.session_id!r} is {md.state.value}"
                                + (f" ({md.close_reason})" if md.close_reason else "") + ": send refused")
        if live.corrupt is not None:
            raise ProtocolError(f"session {md.session_id!r} has a corrupt log ({live.corrupt}): send refused")
        pset = md.pset
        if env.sender_id not in pset:
            raise ProtocolError(f"{env.sender_id!r} is not a participant of session {md.session_id!r}")
        et = env.event_type
        if et not in SUBSTANTIVE:
            _check_posted_type(et, live)
        if not isinstance(env.event_data, dict):
            raise ProtocolError("event_data must be an object")
        if env.audience is not None and not _audience_ok(env.audience, pset):
            raise ProtocolError(f"audience must be null or a list of participants, got {env.audience!r}")
        live.adapter.validate_send(md, env, live.state)
        group = self._stage(live, env, True)
        try:
            # `await group.committed()`, inlined on the busiest path: one coroutine fewer per waiting post
            await asyncio.sleep(0)
            if not group.settled:
                await group.committed()
            group.outcome(sid)
        except asyncio.CancelledError:  # the poster went away after its envelope was written
            if live.pending_close is not None and env.seq <= live.last_seq:
                asyncio.get_running_loop().create_task(self._finish_close(live, live.pending_close))
            raise
        if self.listeners or self._session_listeners:
            await self._deliver(env, md)
        if live.pending_close is not None:
            await self._finish_close(live, live.pending_close)
        return env

    async def emit_telemetry(self, session_id: str, agent_id: str, event: Any) -> bool:
        """Store a telemetry event beside the session's envelopes, returning once it is committed
        (`StoreError` when its group was not); a malformed one is dropped (False)."""
        group = self._telemetry_event(session_id, agent_id, event)
        if group is None:
            return False
        await group.committed()
        if group.error is not None:
            raise group.error
        return True

    def record_telemetry(self, session_id: str, agent_id: str, event: Any) -> bool:
        """`emit_telemetry` for synchronous callers (the hub's event-loop thread only): staged in
        this tick's group commit, not waited for."""
        return self._telemetry_event(session_id, agent_id, event) is not None

    def _telemetry_event(self, session_id: str, agent_id: str, event: Any) -> Optional[GroupCommit]:
        live = self._live(session_id)
        ok = (isinstance(event, dict) and event.get("event") in ("env_action", "tool_response", "progress", "error",
                                                                          "thought", "task", "tool_call", "tool_result")
              and set(event) <= {"event", "payload", "reason", "step", "timestamp", "metadata"})
        if not ok:
            import warnings

            warnings.warn(f"dropped malformed telemetry event from {agent_id!r}: {event!r}", stacklevel=3)
            return None
        return self.store_telemetry(live.session_id, {"agent_id": agent_id, "at": self.clock(), **event})

    def store_telemetry(self, session_id: str, record: dict[str, Any]) -> GroupCommit:
        """Stage one telemetry record as given in this tick's group commit (the one write path)
        and hand it to the telemetry subscribers, live; returns the group."""
        row = telemetry_row(session_id, record)  # not JSON: TypeError/ValueError, nothing staged
        group = self._group or self._new_group()
        group.telemetry.append(row)
        for fn in self.telemetry_listeners:
            fn(session_id, record)
        return group

    async def close(self, session_id: str, reason: str = "explicit_close") -> None:
        live = self._live(session_id)
        if live.metadata.state.terminal or live.metadata.state == SessionState.CLOSING:
            raise ProtocolError(f"session {session_id!r} is already {live.metadata.state.value}")
        if not isinstance(reason, str) or not reason:
            raise ProtocolError(f"close reason must be a non-empty string, got {reason!r}")
        await self._close(live, reason)

    async def _close(self, live: LiveSession, reason: str) -> None:
        await self._idle(live)
        if live.metadata.state.terminal:
            return
        live.metadata.state = SessionState.CLOSING
        live.pending_close = reason
        await self._finish_close(live, reason)

    async def _finish_close(self, live: LiveSession, reason: str) -> Optional[Envelope]:
        md = live.metadata
        env = await self._append_hub(live, EV_SESSION_CLOSED, {"reason": reason}, sender=md.creator_id)
        if env is not None and (self.listeners or self._session_listeners):
            await self._deliver(env, md)
        return env

    async def _expire(self, live: LiveSession) -> Optional[Envelope]:
        md = live.metadata
        env = await self._append_hub(live, EV_SESSION_EXPIRED, {"reason": "ttl_expired"}, sender=md.creator_id)
        if env is not None:
            await self._deliver(env, md)
        return env

    # -- sweepers -------------------------------------------------------------------------------
    async def sweep(self, now: Optional[float] = None) -> list[Envelope]:
        """One pass of the TTL and expectation sweepers; returns the envelopes it wrote."""
        now = self.clock() if now is None else now
        written: list[Envelope] = []
        for live in list(self._watched.values()):
            if not _sweepable(live):
                if live.metadata.state.terminal or live.corrupt is not None:  # for good: not looked at again
                    del self._watched[live.session_id]
                continue
            if live.writing is not None:
                await self._idle(live)
                if not _sweepable(live):  # the wait may have closed it
                    continue
            md = live.metadata
            if md.expires_at is not None and now >= md.expires_at:
                env = await self._expire(live)
                if env is not None:
                    written.append(env)
                continue
            for i, exp in enumerate(md.expectations):
                if not _sweepable(live) or not await self._check_expectation(live, i, exp, now, written):
                    break
        return written

    async def _check_expectation(self, live: LiveSession, i: int, exp: Expectation, now: float,
                                 written: list[Envelope]) -> bool:
        """Log (and act on) expectation `i` of the session when it is violated now and has not
        fired for this turn yet; False when the session can take no more (nothing was written)."""
        v = _exp.evaluate(live, i, exp, now)
        if v is None or v[0] in live.fired:
            return True
        key, agent = v
        md = live.metadata
        data = {"name": exp.name, "action": exp.on_violation, "seconds": exp.to_dict()["params"]["seconds"],
                "agent_id": agent, "key": key}
        audience: Optional[list[str]] = [] if exp.on_violation == "audit" else None
        env = await self._append_hub(live, EV_EXPECTATION_VIOLATED, data, audience=audience)
        if env is None:
            return False
        written.append(env)
        await self._deliver(env, md)
        if exp.on_violation == "auto_close":
            before = live.last_seq
            await self._close(live, f"expectation_violated:{exp.name}")
            if live.last_seq > before:
                written.extend(e for e in self.store.read_range(live.session_id, before + 1, live.last_seq)
                               if isinstance(e, Envelope))
        return True

    def start_sweeper(self, interval: float = 1.0) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.sweep()

        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(loop())

    async def stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            try:
                await self._sweeper
            except asyncio.CancelledError:
                pass
            self._sweeper = None

    async def aclose(self) -> None:
        await self.stop_sweeper()
        self.store.close()
