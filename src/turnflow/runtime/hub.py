"""The asyncio hub: sessions, their lifecycle (docs/runtime.md, "Lifecycle"), the write-ahead log and the sweepers.

Every change is an envelope appended to the store *before* it is folded or delivered:
`post` = check → adapter.validate_send → stamp → append → fold → on_accepted → deliver →
(close). A refused send raises `ProtocolError` and changes nothing. A close asked by the
adapter puts the session in CLOSING (so nothing else is accepted) until its envelope has
been delivered, then the hub logs `session.closed` and the session is CLOSED: the hub
always completes that step, on hydrate too.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Iterator, Optional, Sequence, Union, cast

from turnflow.runtime import expectations as _exp
from turnflow.runtime.adapters import builtin_adapters
from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_SESSION_ACK, EV_SESSION_CLOSED,
                                       EV_SESSION_EXPIRED, EV_SESSION_INVITE, EV_SESSION_OPENED,
                                       EV_SESSION_REJECT, LIFECYCLE, SUBSTANTIVE, Envelope,
                                       envelope_id_for)
from turnflow.runtime.errors import ProtocolError, RuntimeErrorBase, StoreError
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import (Expectation, Participant, SessionMetadata, SessionState, check_agent_id,
                                      check_name, check_session_id, new_session_id, shared_knobs,
                                      shared_participant)
from turnflow.runtime.store import Corrupt, GroupCommitStore, Store
from turnflow.runtime.transcript import Transcript

Listener = Callable[[Envelope, SessionMetadata], Awaitable[None]]
HUB_SENDER = "hub"


def spec_opener(spec: dict) -> Optional[str]:
    """Who opens a session from a spec: the `initiator`, else the workflow's start speaker,
    else the first participant."""
    parts = spec.get("participants") or []
    for p in parts:
        if isinstance(p, dict) and p.get("role") == "initiator":
            return p.get("agent_id")
    knobs = spec.get("knobs")
    graph = knobs.get("graph") if isinstance(knobs, dict) else None
    if isinstance(graph, dict) and isinstance(graph.get("initial_speaker"), str):
        return graph["initial_speaker"]
    return parts[0].get("agent_id") if parts and isinstance(parts[0], dict) else None


class _GroupCommit(asyncio.Future):
    """The commit of one event-loop tick's envelopes, awaited by all their posters. It cannot be
    cancelled: a poster cancelled while waiting is cancelled once the group has committed (the
    write and the fold happen either way), and the other posters are not affected."""

    refused: Optional[dict] = None  # {session_id: exception}: sessions whose part the store refused
    soon = False  # committed by a callback scheduled before any of its posters resumes (SQLite)

    def cancel(self, msg: Any = None) -> bool:
        return False

    # Awaiting the group: when it is committed by a callback that the event loop runs before any
    # waiter resumes (`soon`), a waiter gives up one loop iteration (a bare yield, like
    # `asyncio.sleep(0)`) instead of registering a wake-up callback on the future: 10,000 waiting
    # posters then cost the loop and the cyclic GC two objects each (the task's step and its
    # handle) instead of four (the wake-up method, its callback entry, the handle and its args).
    # Otherwise (a commit off the event loop) it is awaited like any future.
    def __await__(self) -> Any:
        return self

    __iter__ = __await__

    def __next__(self) -> Any:
        if self.done():
            raise StopIteration(self.result())
        if self.soon:
            return None  # resume after the next loop iteration (the commit runs before it)
        self._asyncio_future_blocking = True
        return self


def _check_refused(written: asyncio.Future, session_id: str) -> None:
    """After awaiting a group: raise the store's refusal of this session's part of it."""
    refused = getattr(written, "refused", None)
    if refused is not None:
        problem = refused.get(session_id)
        if problem is not None:
            raise problem


def _audience_ok(audience: Any, pset: frozenset) -> bool:
    """A posted audience is a list of participant ids. (A function of its own: a generator
    expression inside `post` would turn the names it uses into cells, one object more per post.)"""
    return isinstance(audience, list) and all(type(a) is str and a in pset for a in audience)


@dataclass
class HydrateReport:
    sessions: int = 0
    envelopes: int = 0
    problems: list[Corrupt] = field(default_factory=list)
    completed_closes: list[str] = field(default_factory=list)
    completed_opens: list[str] = field(default_factory=list)


def _check_participant_fields(p: dict) -> None:
    """A participant object's field types (a spec is user input): ProtocolError, never TypeError."""
    role, order, desc, tools = p.get("role", "participant"), p.get("order", 0), p.get("description"), p.get("tools")
    if not isinstance(role, str):
        raise ProtocolError(f"participant role must be a string, got {type(role).__name__}")
    if isinstance(order, bool) or not isinstance(order, int):
        raise ProtocolError(f"participant order must be an integer, got {type(order).__name__}")
    if desc is not None and not isinstance(desc, str):
        raise ProtocolError(f"participant description must be a string, got {type(desc).__name__}")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        raise ProtocolError("participant tools must be a list of tool names")


class Hub:
    """Create with `await Hub.open(store, clock=...)`; `clock()` returns seconds (time.time by default)."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time,
                 adapters: Optional[dict] = None) -> None:
        self.store = store
        self.clock = clock
        self.adapters = adapters if adapters is not None else builtin_adapters()
        self.sessions: dict[str, LiveSession] = {}  # creation order
        self.listeners: list[Listener] = []
        self._session_listeners: dict[str, list[Listener]] = {}  # listeners of one session's envelopes
        self.telemetry_listeners: list[Callable[[str, dict], None]] = []
        self._gseq = store.last_global_seq()
        # what the store can do, looked up once (a store's methods do not change while a hub uses it)
        self._store_stage: Optional[Callable[[Envelope, int], None]] = getattr(store, "stage", None)
        self._store_alloc: Optional[Callable[[], int]] = getattr(store, "next_global_seq", None)
        # a store that commits off the event loop (PostgreSQL): groups fold when its future resolves
        self._store_commit_async: Optional[Callable[[], Any]] = getattr(store, "commit_async", None)
        self._group: Optional["_GroupCommit"] = None  # the group commit of this event-loop tick
        self._staged_lives: list = []
        self._staged_envs: list = []
        self._staged_accept: list = []
        self._staged_new: list = []  # ids of sessions whose creation record is in this tick's group
        self._sweeper: Optional[asyncio.Task] = None
        self.report = HydrateReport()

    @classmethod
    async def open(cls, store: Store, **kw: Any) -> "Hub":
        hub = cls(store, **kw)
        hub.report = hub.hydrate()
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

    # -- hydrate --------------------------------------------------------------------------------
    def hydrate(self) -> HydrateReport:
        """Rebuild every session by streaming its envelopes through initial_state + fold.
        Terminal sessions stay terminal. A corrupt record is reported (session, seq) and
        neither it nor anything after it in that session is folded."""
        report = HydrateReport()
        self.sessions = {}
        for rec in self.store.sessions():
            if isinstance(rec, Corrupt):
                report.problems.append(rec)
                continue
            try:
                md = SessionMetadata.from_creation_record(rec)
            except (KeyError, TypeError, ValueError, AttributeError, RuntimeErrorBase) as exc:
                report.problems.append(Corrupt(str(rec.get("session_id")), 0,
                                               f"session record has the wrong shape: {type(exc).__name__}"))
                continue
            adapter = self.adapters.get((md.manifest.type, md.manifest.version))
            if adapter is None:
                report.problems.append(Corrupt(md.session_id, 0, f"no adapter for {md.manifest.type!r} "
                                                                 f"v{md.manifest.version}"))
                continue
            md.expires_at = md.created_at + md.ttl_seconds if md.ttl_seconds else None
            try:
                state = adapter.initial_state(md)
            except ProtocolError as exc:
                report.problems.append(Corrupt(md.session_id, 0, f"session record is invalid: {exc}"))
                continue
            self.sessions[md.session_id] = LiveSession(md, adapter, state)
            report.sessions += 1
        for item in self.store.stream():
            live = self.sessions.get(item.session_id)
            if isinstance(item, Corrupt):
                if live is not None and live.corrupt is None:
                    live.corrupt = str(item)
                report.problems.append(item)
                continue
            if live is None or live.corrupt is not None:
                continue
            if item.seq != live.last_seq + 1:
                live.corrupt = f"session {item.session_id} seq {live.last_seq + 1}: missing record"
                report.problems.append(Corrupt(item.session_id, live.last_seq + 1, "missing record (gap)"))
                continue
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
                continue
            report.envelopes += 1
        report.completed_closes = [sid for sid, live in self.sessions.items()
                                   if live.pending_close is not None and live.corrupt is None
                                   and not live.metadata.state.terminal]
        return report

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
        """The session's adapter state. The object handed out never changes: the session's next
        fold builds a new one instead of updating it in place."""
        live = self._live(session_id)
        live.state_out = True
        return live.state

    def info(self, session_id: str) -> dict:
        return self._live(session_id).info()

    def expected_next(self, session_id: str) -> Optional[str]:
        live = self._live(session_id)
        return None if live.metadata.state.terminal else live.expected_speaker()

    def read(self, session_id: str, start: int = 1, end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]:
        self._live(session_id)
        return self.store.read_range(session_id, start, end)

    async def get_session(self, session_id: str) -> SessionMetadata:
        """The session's metadata (the contract's name for `metadata`); `ProtocolError` for an
        unknown id."""
        return self.metadata(session_id)

    def view(self, session_id: str, agent_id: Optional[str], policy: Any = None) -> Sequence[dict]:
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

    def subscribe_telemetry(self, fn: Callable[[str, dict], None]) -> None:
        """`fn(session_id, record)` is called (synchronously) for every telemetry record as it is stored."""
        self.telemetry_listeners.append(fn)

    # -- writing --------------------------------------------------------------------------------

    async def _idle(self, live: LiveSession) -> None:
        """Wait until no envelope of this session is waiting for its commit (so checks see the
        folded state and envelopes of one session are written and folded in order)."""
        while live.writing is not None:
            try:
                await live.writing
            except asyncio.CancelledError:
                raise
            except Exception:  # that write failed; its poster gets the error
                pass

    async def _append(self, live: LiveSession, env: Envelope, accept: bool = False) -> Envelope:
        """Stamp, log and fold one envelope (call `_idle` first, then check, with no await between)."""
        group = self._stage(live, env, accept)
        if group is not None:
            await group  # cancelling the poster here takes effect after the commit and the fold
            _check_refused(group, env.session_id)
        return env

    def _stage(self, live: LiveSession, env: Envelope, accept: bool, ahead: int = 0) -> Optional[asyncio.Future]:
        """Stamp one envelope and stage it in this event-loop tick's group; returns the group's
        future (None when the store has no group commit: then it is written and folded already).
        The group is committed at the end of the tick (one commit, one fsync for every envelope
        staged meanwhile), then each envelope is folded in log order and its poster resumes.
        `accept`: a participant's envelope, also given to the adapter's `on_accepted`. `ahead`: how
        many envelopes of this session are already staged in this group (open_session's invites)."""
        # stamp it (a store shared by several hubs, PostgreSQL, allocates the global sequence itself)
        alloc = self._store_alloc
        gseq = self._gseq = alloc() if alloc is not None else self._gseq + 1
        env.envelope_id = envelope_id_for(gseq)
        env.seq = live.last_seq + 1 + ahead
        env.created_at = self.clock()
        stage = self._store_stage
        pending = None
        try:
            if stage is not None:
                stage(env, gseq)
            else:  # a store without hub-driven group commit: it writes the envelope itself
                pending = self.store.append(env, gseq)
        except (TypeError, ValueError) as exc:  # not JSON: refused, nothing written
            self._gseq -= 1
            raise ProtocolError(f"envelope data must be JSON values: {exc}") from None
        except BaseException:
            self._gseq -= 1
            raise
        if stage is None:
            if pending is None:  # written (one transaction per envelope)
                self._fold(live, env, accept)
                return None
            # a store that groups commits itself (PostgresStore): fold once its commit is done
            return self._fold_when_written(live, env, accept, pending)
        group = self._group or self._group_future()
        self._staged_lives.append(live)  # parallel lists, not tuples: fewer objects for the GC to track
        self._staged_envs.append(env)
        self._staged_accept.append(accept)
        live.writing = group
        return group

    def _group_future(self) -> "_GroupCommit":
        """This tick's group commit (created, and its commit scheduled, by the first stager)."""
        group = self._group
        if group is None:
            loop = asyncio.get_running_loop()
            group = self._group = _GroupCommit(loop=loop)
            group.soon = self._store_commit_async is None
            loop.call_soon(self._commit_group)
        return group

    def _commit_group(self) -> None:
        assert self._group is not None  # scheduled by the stager that created the group
        group, lives, envs, accepts = self._group, self._staged_lives, self._staged_envs, self._staged_accept
        self._group, self._staged_lives, self._staged_envs, self._staged_accept = None, [], [], []
        new, self._staged_new = self._staged_new, []
        store = self.store
        commit_async = self._store_commit_async
        try:
            # a store that commits off the event loop (PostgreSQL) returns a future: fold when it resolves
            pending = None
            if commit_async is not None:
                pending = commit_async()
            else:
                cast(GroupCommitStore, store).commit()
        except BaseException as exc:
            try:
                cast(GroupCommitStore, store).rollback()
            finally:
                self._group_failed(group, lives, new, exc)
            return
        if pending is None:
            self._fold_group(group, lives, envs, accepts, None, new)
            return

        def written(f: asyncio.Future) -> None:
            problem = StoreError("the write was cancelled") if f.cancelled() else f.exception()
            if problem is not None:
                self._group_failed(group, lives, new, problem)
            else:
                self._fold_group(group, lives, envs, accepts, f.result() or None, new)

        pending.add_done_callback(written)

    def _group_failed(self, group: "_GroupCommit", lives: list, new: list, exc: BaseException) -> None:
        """Nothing of the group was written: every poster re-raises the error."""
        if self._store_alloc is None:
            self._gseq = self.store.last_global_seq()  # the next envelope reuses the numbers
        for live in lives:
            live.writing = None
        for sid in new:  # sessions whose creation record was in the group: never created
            self.sessions.pop(sid, None)
        group.set_exception(StoreError(f"commit failed: {exc}") if not isinstance(exc, StoreError) else exc)
        group.exception()  # retrieved: every poster re-raises it

    def _fold_group(self, group: "_GroupCommit", lives: list, envs: list, accepts: list,
                    refused: Optional[dict], new: list) -> None:
        """The group is committed: fold each envelope in log order, except those of the sessions the
        store refused (a batch worker that lost a task's lease: their posters get the refusal)."""
        if refused:
            group.refused = refused
            for sid in new:
                if sid in refused:
                    self.sessions.pop(sid, None)
        for live, env, accept in zip(lives, envs, accepts):
            live.writing = None
            if refused and env.session_id in refused:
                continue
            try:  # (`_fold`, inlined: once per envelope)
                live.apply(env)
                if accept and env.event_type in SUBSTANTIVE:
                    result = live.adapter.on_accepted(live.metadata, env, live.state)
                    if result.close_reason is not None:
                        live.metadata.state = SessionState.CLOSING
                        live.pending_close = result.close_reason
            except Exception as exc:  # an adapter bug: this session refuses further sends, the others go on
                live.corrupt = f"session {live.session_id} seq {env.seq}: fold failed: {type(exc).__name__}: {exc}"
        group.set_result(None)

    def _fold_when_written(self, live: LiveSession, env: Envelope, accept: bool, pending: Any) -> asyncio.Future:
        """A future that resolves once the store committed `env` and the hub folded it. The fold
        happens even if the poster stopped waiting: a committed envelope is always folded."""
        written = asyncio.get_running_loop().create_future()

        def done(f: Any) -> None:
            if live.writing is written:
                live.writing = None
            problem = None if f.cancelled() else f.exception()
            if f.cancelled() or problem is not None:
                if not written.done():
                    written.set_exception(problem or StoreError("the write was cancelled"))
                return
            try:
                self._fold(live, env, accept)
            except Exception as exc:  # an adapter bug: this session refuses further sends
                live.corrupt = f"session {live.session_id} seq {env.seq}: fold failed: {type(exc).__name__}: {exc}"
            if not written.done():
                written.set_result(None)

        pending.add_done_callback(done)
        live.writing = written
        return written

    def _fold(self, live: LiveSession, env: Envelope, accept: bool) -> None:
        live.apply(env)
        if accept and env.event_type in SUBSTANTIVE:
            result = live.adapter.on_accepted(live.metadata, env, live.state)
            if result.close_reason is not None:
                live.metadata.state = SessionState.CLOSING
                live.pending_close = result.close_reason

    async def _append_hub(self, live: LiveSession, event_type: str, data: dict, audience: Optional[list] = None,
                          sender: Optional[str] = None) -> Optional[Envelope]:
        """A hub-written envelope; None (nothing written) when the session became terminal meanwhile."""
        if live.writing is not None:
            await self._idle(live)
        if live.metadata.state.terminal:
            return None
        env = Envelope(live.session_id, sender or HUB_SENDER, audience, event_type, data)
        group = self._stage(live, env, False)  # (what `_append` does, without one more coroutine)
        if group is not None:
            await group
            _check_refused(group, env.session_id)
        return env

    async def _deliver(self, env: Envelope, md: SessionMetadata) -> None:
        for listener in self.listeners:
            await listener(env, md)
        own = self._session_listeners.get(env.session_id)
        if own:
            for listener in tuple(own):
                await listener(env, md)

    async def open_session(self, kind: str, participants: Iterable[Union[Participant, dict, str]], *,
                           creator_id: Optional[str] = None, knobs: Optional[dict] = None, name: str = "",
                           expectations: Optional[list] = None, ttl_seconds: Optional[float] = None,
                           labels: Optional[dict] = None, tools: Optional[list] = None,
                           version: int = 1) -> SessionMetadata:
        """Validate, create (INVITED) and post one invite per target; nothing is stored when invalid."""
        if not isinstance(kind, str) or isinstance(version, bool) or not isinstance(version, int):
            raise ProtocolError(f"session kind must be a string, got {type(kind).__name__}")
        adapter = self.adapters.get((kind, version))
        if adapter is None:
            known = ", ".join(sorted(t for t, _ in self.adapters))
            raise ProtocolError(f"unknown session kind {kind!r} (known: {known})")
        parts = []
        for i, p in enumerate(participants):
            if isinstance(p, str):
                p = Participant(p, "participant", i)
            elif isinstance(p, dict):
                _check_participant_fields(p)
                p = Participant(check_agent_id(p.get("agent_id")), p.get("role", "participant"), p.get("order", i),
                                p.get("description", "") or "", tuple(p.get("tools") or ()))
            check_agent_id(p.agent_id)
            parts.append(shared_participant(p))
        if not isinstance(name, str):
            raise ProtocolError(f"session name must be a string, got {type(name).__name__}")
        if name:
            check_name(name)
        if tools is not None and not isinstance(tools, list):
            raise ProtocolError(f"tools must be a list, got {type(tools).__name__}")
        if labels is not None and not isinstance(labels, dict):
            raise ProtocolError(f"labels must be an object, got {type(labels).__name__}")
        if creator_id is None:
            creator_id = next((p.agent_id for p in parts if p.role == "initiator"), parts[0].agent_id if parts else "")
        check_agent_id(creator_id)
        if ttl_seconds is not None and (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float))
                                        or ttl_seconds <= 0):
            raise ProtocolError(f"ttl_seconds must be a positive number or null, got {ttl_seconds!r}")
        if expectations is not None and not isinstance(expectations, list):
            raise ProtocolError(f"expectations must be a list, got {type(expectations).__name__}")
        declared = [e if isinstance(e, Expectation) else Expectation.from_dict(e) for e in (expectations or [])]
        names = {e.name for e in declared}
        exps = declared + [e for e in adapter.manifest.default_expectations if e.name not in names]
        now = self.clock()
        md = SessionMetadata(session_id=new_session_id(), manifest=adapter.manifest, creator_id=creator_id,
                             participants=parts, knobs=shared_knobs(knobs) if knobs is not None else {}, created_at=now,
                             name=name, expectations=exps, ttl_seconds=ttl_seconds, labels=dict(labels or {}),
                             tools=list(tools or []))
        adapter.validate_create(md)
        state = adapter.initial_state(md)
        md.expires_at = now + ttl_seconds if ttl_seconds else None
        md.pending_acks = set(md.participant_ids) - {creator_id}
        live = LiveSession(md, adapter, state)
        if getattr(self.store, "stage_session", None) is not None and getattr(self.store, "stage", None) is not None:
            # hub-driven group commit: the record is written in the transaction of the invites, and
            # the invites are staged together (one commit and one wait per open, not one per invite)
            self.store.stage_session(md.creation_record())  # type: ignore[attr-defined]
            self._group_future()
            self._staged_new.append(md.session_id)
            self.sessions[md.session_id] = live
            group, staged, invites = None, 0, []
            for target in md.participant_ids:
                if target != creator_id:
                    invites.append(Envelope(md.session_id, creator_id, [target], EV_SESSION_INVITE, {}))
                    group = self._stage(live, invites[-1], False, staged)
                    staged += 1
            if not md.pending_acks:  # pragma: no cover - every kind has two or more participants
                group = self._stage(live, Envelope(md.session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False,
                                    staged)
            if group is not None:
                await group
                _check_refused(group, md.session_id)
            await self._deliver_invites(invites, md)
            return md
        pending = self.store.create_session(md.creation_record())
        if pending is not None:  # a store that commits in groups itself (PostgresStore)
            await pending
        self.sessions[md.session_id] = live
        sent = []
        for target in md.participant_ids:
            if target != creator_id:
                sent.append(await self._append_hub(live, EV_SESSION_INVITE, {}, audience=[target], sender=creator_id))
        if not md.pending_acks:  # pragma: no cover - every kind has two or more participants
            await self._append_hub(live, EV_SESSION_OPENED, {})
        await self._deliver_invites([e for e in sent if e is not None], md)
        return md

    async def _deliver_invites(self, invites: list, md: SessionMetadata) -> None:
        """The invites of a new session, handed to the hub's listeners (the invited participants
        learn of the session that way)."""
        if self.listeners:
            for env in invites:
                await self._deliver(env, md)

    async def open_spec(self, spec: dict, *, labels: Optional[dict] = None) -> SessionMetadata:
        """Open a session from a compiled session spec (docs/compiler.md)."""
        if not isinstance(spec, dict):
            raise ProtocolError(f"a session spec must be an object, got {type(spec).__name__}")
        for key in ("kind", "participants"):
            if key not in spec:
                raise ProtocolError(f"session spec is missing {key!r}")
        parts = spec["participants"]
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise ProtocolError("session spec: `participants` must be a list of objects")
        return await self.open_session(spec["kind"], parts, creator_id=spec_opener(spec),
                                       knobs=spec.get("knobs") or {}, name=spec.get("name") or "",
                                       expectations=spec.get("expectations") or [],
                                       ttl_seconds=spec.get("ttl_seconds"), labels=labels,
                                       tools=spec.get("tools") or [])

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
        group = self._stage(live, env, False)  # (`_append`, inlined: one coroutine fewer per ack)
        if group is not None and not listening and len(md.pending_acks) == 1 and self._store_stage is not None:
            # the last ack: `session.opened` goes into the same group (one commit and one wait, not
            # two); with listeners it is written after they have heard the ack, as it always was
            group = self._stage(live, Envelope(session_id, HUB_SENDER, None, EV_SESSION_OPENED, {}), False, 1)
        if group is not None:
            await group
            _check_refused(group, session_id)
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
        if et in LIFECYCLE or et == EV_EXPECTATION_VIOLATED:
            raise ProtocolError(f"{et!r} envelopes are written by the hub, not posted")
        if not isinstance(env.event_data, dict):
            raise ProtocolError("event_data must be an object")
        if env.audience is not None and not _audience_ok(env.audience, pset):
            raise ProtocolError(f"audience must be null or a list of participants, got {env.audience!r}")
        live.adapter.validate_send(md, env, live.state)
        group = self._stage(live, env, True)
        try:
            if group is not None:
                await group
                _check_refused(group, sid)
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
        """Store a telemetry event beside the session's envelopes; a malformed one is dropped (False)."""
        return self.record_telemetry(session_id, agent_id, event)

    def record_telemetry(self, session_id: str, agent_id: str, event: Any) -> bool:
        """`emit_telemetry` for synchronous callers (the hub's event-loop thread only)."""
        live = self._live(session_id)
        ok = (isinstance(event, dict) and event.get("event") in ("env_action", "tool_response", "progress", "error",
                                                                          "thought", "task")
              and set(event) <= {"event", "payload", "reason", "step", "timestamp", "metadata"})
        if not ok:
            import warnings

            warnings.warn(f"dropped malformed telemetry event from {agent_id!r}: {event!r}", stacklevel=2)
            return False
        self.store_telemetry(live.session_id, {"agent_id": agent_id, "at": self.clock(), **event})
        return True

    def store_telemetry(self, session_id: str, record: dict) -> None:
        """Store one telemetry record as given and hand it to the telemetry subscribers, live."""
        self.store.append_telemetry(session_id, record)
        for fn in self.telemetry_listeners:
            fn(session_id, record)

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
        for live in list(self.sessions.values()):
            md = live.metadata
            if md.state.terminal or md.state == SessionState.CLOSING or live.corrupt is not None:
                continue
            if live.writing is not None:
                await self._idle(live)
                # the await may have changed md.state; mypy keeps the narrowing from above
                if md.state.terminal or md.state == SessionState.CLOSING:  # type: ignore[comparison-overlap]
                    continue
            if md.expires_at is not None and now >= md.expires_at:
                env = await self._expire(live)
                if env is not None:
                    written.append(env)
                continue
            for i, exp in enumerate(md.expectations):
                # the awaits below may have changed md.state; mypy keeps the narrowing from above
                if md.state.terminal or md.state == SessionState.CLOSING:  # type: ignore[comparison-overlap]
                    break
                v = _exp.evaluate(live, i, exp, now)
                if v is None or v[0] in live.fired:
                    continue
                key, agent = v
                data = {"name": exp.name, "action": exp.on_violation, "seconds": exp.to_dict()["params"]["seconds"],
                        "agent_id": agent, "key": key}
                audience: Optional[list] = [] if exp.on_violation == "audit" else None
                env = await self._append_hub(live, EV_EXPECTATION_VIOLATED, data, audience=audience)
                if env is None:
                    break
                written.append(env)
                await self._deliver(env, md)
                if exp.on_violation == "auto_close":
                    before = live.last_seq
                    await self._close(live, f"expectation_violated:{exp.name}")
                    if live.last_seq > before:
                        written.extend(e for e in self.store.read_range(live.session_id, before + 1, live.last_seq)
                                       if isinstance(e, Envelope))
        return written

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
