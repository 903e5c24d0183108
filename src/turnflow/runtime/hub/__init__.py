"""The asyncio hub: sessions, their lifecycle (docs/runtime.md, "Lifecycle"), the write-ahead log and the sweepers.

Every change is an envelope written to the store *before* it is folded or delivered:
`post` = check → adapter.validate_send → stamp → stage in this tick's group → the group's one
`store.commit_group` (group_commit.py, store/contract.py: the hub's only write path) → fold →
on_accepted → deliver → (close). A refused send raises `ProtocolError` and changes nothing. A close asked by the
adapter puts the session in CLOSING (so nothing else is accepted) until its envelope has
been delivered, then the hub logs `session.closed` and the session is CLOSED: the hub
always completes that step, on hydrate too.

`Hub` is the facade of its parts, each a module of this package: `lifecycle.py` (open, ack,
reject, close, expire), `commit.py` (staging, the tick's group commit, settle), `hydrate.py`,
`bus.py` (listeners, delivery) and `sweeper.py`; `post`, lookups and telemetry stay here.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Awaitable, Callable, Generator, Iterable, Iterator, Optional, Sequence, Union

from turnflow.runtime.adapters import builtin_adapters
from turnflow.runtime.adapters.protocol import SessionAdapter
from turnflow.runtime.adapters.contract import ContractAdapter, needs_defaults, needs_membership
from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_SESSION_OPENED, LIFECYCLE, MEMBERSHIP, SUBSTANTIVE,
                                       Envelope, telemetry_event_ok)
from turnflow.runtime.clock import STEADY
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import (Participant, SessionMetadata, SessionRecord, SessionState, adapter_capabilities,
                                      check_session_id)
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.group_commit import GroupCommit
from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import Corrupt, checksum, decode_session, end_row, telemetry_row
from turnflow.runtime.transcript import Transcript

from turnflow.runtime.hub.bus import Bus, Listener, TelemetryListener
from turnflow.runtime.hub.commit import HUB_SENDER, Commits
from turnflow.runtime.hub.hydrate import HydrateReport, end_record, from_end_record, hydrate
from turnflow.runtime.hub.lifecycle import Lifecycle
from turnflow.runtime.hub.sweeper import Sweeper

__all__ = ["HUB_SENDER", "Hub", "HydrateReport", "Listener"]

_ACTIVE = SessionState.ACTIVE  # (a module constant: `SessionState.ACTIVE` is a descriptor lookup, ~60 ns)
# ended sessions a hub that lets them go (`keep_ended=False`) keeps, the last that ended or were read
# back: AG2's client reads the record of the channel it saw close, and many sessions close at once
# (with 64, 500 consulting sessions at once cost the served hub 9 % more CPU: docs/benchmarks.md)
ENDED_KEPT = 1024
# ended sessions whose end record (`CommitUnits.ends`) waits to be written: handed to the group
# commit together once this many have ended (and before a listing, and at `aclose`); a crash loses
# at most these, filled again by the next listing that meets them (as in an older store)
ENDS_BATCH = 256
# a listing (`iter_sessions_of`) hands back what it found and lets the event loop run after about
# this much work: a session built from its end record counts 1, one read back from its log 4
# (~15 µs and ~70 µs: about 2 ms between yields, with the caller's own work on each session)
LIST_WORK = 64
# ... a session whose stored records are larger counts 1 more per this many bytes of them (a
# workflow's knobs are bounded by the frame size alone: 1 MiB of them takes ~10 ms to decode), and a
# listing asks the store for the records of `LIST_FIRST` sessions first, then as many as make
# ~`LIST_WORK` at the last ones' cost (so it holds ~1 MiB of records at once, not 64 MiB)
LIST_RECORD_BYTES = 16 << 10
LIST_FIRST = 8
# sessions named per store query beyond the `limit` asked for (each query its own: no cursor held
# across a yield): a session that named the agent once but not now is skipped, rarely more
LIST_SLACK = 64


def _record_cost(row: Any) -> int:
    """The work of building a session from its stored creation and end records (`LIST_WORK`)."""
    return 1 + (len(row[1]) + len(row[3])) // LIST_RECORD_BYTES


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


def _check_labels(labels: Any) -> None:
    if labels is not None and not isinstance(labels, dict):
        raise ProtocolError(f"labels must be an object, got {type(labels).__name__}")


class Hub:
    """Create with `await Hub.open(store, clock=...)`; `clock()` returns epoch seconds (by default
    `clock.STEADY`: the wall clock at start plus monotonic time, so a wall-clock step never makes a
    deadline pass).

    `keep_ended` (default True): `sessions` holds every session the hub has had. With False
    (`turnflow serve`), a session that has ended (closed or expired: its last envelope committed,
    folded and delivered) leaves `sessions`, and `open` hydrates only the sessions that have not
    ended: memory is bounded by the live sessions, not by the history. Every lookup (`metadata`,
    `info`, `get_session`, `read`, `view`, ...) answers for an ended session as before, reading it
    back from the store (the last `ENDED_KEPT` read are kept); nothing can be written to it."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = STEADY,
                 adapters: Optional[dict[tuple[str, int], SessionAdapter]] = None, keep_ended: bool = True) -> None:
        self.store = store
        self.clock = clock
        self.adapters = adapters if adapters is not None else builtin_adapters()
        self._as_written: set[int] = set()  # ids of the adapters that need no `ContractAdapter`
        self.sessions: dict[str, LiveSession] = {}  # creation order
        self.keep_ended = keep_ended
        self._ended: OrderedDict[str, LiveSession] = OrderedDict()  # (keep_ended=False) read back, LRU
        # (keep_ended=False) ended sessions whose end record is not written yet: (metadata, membership)
        self._unwritten_ends: list[tuple[SessionMetadata, bool]] = []
        self.report = HydrateReport()
        # the parts (bus, commits, sweeper); their lists and methods the busy paths use are bound
        # here, so a post reaches them with no more lookups than when they were the hub's own
        bus = self._bus = Bus()
        self.listeners = bus.listeners
        self._session_listeners = bus.session_listeners
        self.telemetry_listeners = bus.telemetry_listeners
        self._deliver = bus.deliver
        commits = self._commits = Commits(self, clock)
        self._stage = commits.stage
        self._idle = commits.idle
        self._append = commits.append
        self._append_hub = commits.append_hub
        self._seq_ready = commits.seq_ready
        life = self._life = Lifecycle(self)
        self._open = life.open
        self._close = life.close_now
        self._finish_close = life.finish_close
        self._expire = life.expire
        self._sweep = Sweeper(self)
        self._watched = self._sweep.watched

    @classmethod
    async def open(cls, store: Store, *, only: Optional[str] = None, **kw: Any) -> "Hub":
        """A hub on `store`, hydrated (`hydrate(only=...)`), with the closes and opens its log
        left half-done completed."""
        hub = cls(store, **kw)
        hub.report = hub.hydrate(only=only)
        for sid in hub.report.completed_closes:
            live = hub.sessions[sid]
            await hub._finish_close(live, live.pending_close or "workflow_terminated")
        for sid, live in list(hub.sessions.items()):  # every invite was acked, but the process died before session.opened
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

    # -- hydrate (hydrate.py) ----------------------------------------------------------------
    def hydrate(self, only: Optional[str] = None) -> HydrateReport:
        """Rebuild every session by streaming its envelopes through initial_state + fold —
        with `only`, that one session alone, read by itself (`store.load`: a worker taking it
        over, `inspect --session`), never the whole store. Terminal sessions stay terminal. A
        corrupt record is reported (session, seq) and neither it nor anything after it in that
        session is folded. (A hub that must hold none of a store's sessions is not hydrated.)
        With `keep_ended=False`, the sessions that ended stay in the store (read when asked for)."""
        self.sessions, report = hydrate(self.store, self._complete, only, ended=self.keep_ended or only is not None)
        self._watched.clear()
        self._watched.update(self.sessions)
        self._close_the_gap()
        return report

    def _close_the_gap(self) -> None:
        """The hydrated sessions' turn clocks translated so that the store's last write (of a session
        held now) is now: what a turn had taken before the last hub stopped still counts, the gap
        until this one started does not — downtime, a VM restored from a snapshot, a wall-clock step
        between the two processes, either way. The TTL is not moved (a session's lifetime)."""
        last = max((live.last_at for live in self.sessions.values() if live.last_at is not None), default=None)
        if last is None:
            return
        delta = self.clock() - last
        if delta:
            for live in self.sessions.values():
                if not live.metadata.state.terminal:
                    live.shift_turn_clocks(delta)

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop sessions whose creation record the store did not write."""
        for sid in session_ids:
            self.sessions.pop(sid, None)
            self._watched.pop(sid, None)

    def ended(self, live: LiveSession) -> None:
        """A session's ending envelope has been committed, folded and delivered: with
        `keep_ended=False` it leaves `sessions` (and the store drops what it kept of it), kept
        among the last few ended ones read (`ENDED_KEPT`)."""
        sid = live.session_id
        if self.keep_ended or not live.metadata.state.terminal or self.sessions.get(sid) is not live:
            return
        del self.sessions[sid]
        self._watched.pop(sid, None)
        self.store.forget(sid)
        self._keep_ended(live)
        self._note_end(live)

    def _note_end(self, live: LiveSession) -> None:
        """Keep the session's end to be written (`flush_ends`, every `ENDS_BATCH`): nothing is
        encoded now (a terminal session's metadata does not change)."""
        ends = self._unwritten_ends
        ends.append((live.metadata, getattr(live.adapter, "membership", True)))
        if len(ends) >= ENDS_BATCH:
            self.flush_ends()

    def flush_ends(self) -> Optional[GroupCommit]:
        """Hand the end records of the sessions that ended since the last flush to this tick's group
        commit (`CommitUnits.ends`: what a listing reads instead of their logs); the group, or None
        when there were none. Not waited for: a group that fails loses them, and a listing reads such
        sessions back from their logs and hands their records over again."""
        ends, self._unwritten_ends = self._unwritten_ends, []
        if not ends:
            return None
        commits = self._commits
        group = commits.group or commits.new_group()
        group.units.ends += [end_row(md.session_id, end_record(md, membership)) for md, membership in ends]
        return group

    def _keep_ended(self, live: LiveSession) -> None:
        kept = self._ended
        kept[live.session_id] = live
        kept.move_to_end(live.session_id)
        while len(kept) > ENDED_KEPT:
            kept.popitem(last=False)

    def _read_back(self, session_id: str, keep: bool = True) -> Optional[LiveSession]:
        """An ended session this hub does not hold (`keep_ended=False`), rebuilt from the store
        as hydrate rebuilds it; None for an unknown id, or a session that has not ended (not
        this hub's: a hub holds every session of its store that has not ended). `keep=False`:
        not kept among the last read (a listing's)."""
        live = self._ended.get(session_id)
        if live is not None:
            self._ended.move_to_end(session_id)
            return live
        sessions, _ = hydrate(self.store, self._complete, session_id, keep=False)
        live = sessions.get(session_id)
        if live is None or not live.metadata.state.terminal:
            return None
        if keep:
            self._keep_ended(live)
        return live

    def sessions_of(self, agent_ids: Iterable[str], limit: int) -> list[SessionMetadata]:
        """The first `limit` sessions (creation order), ended ones included, with one of
        `agent_ids` on their roster now (`iter_sessions_of`, in one go)."""
        return [md for found in self.iter_sessions_of(agent_ids, limit) for md in found]

    def iter_sessions_of(self, agent_ids: Iterable[str], limit: int,
                         hold: Optional[Callable[[int], None]] = None) -> Generator[list[SessionMetadata], None, None]:
        """`sessions_of` in parts: each is what was found since the previous one, after about
        `LIST_WORK` of work; a caller on the event loop lets it run between parts (no store cursor
        is held meanwhile). With `keep_ended=False` the store names the candidates a page at a
        time (`store.naming_page`, with each one's creation and end records): an ended session is
        built from those two records (`from_end_record`), its log not read; one without an end
        record (a store written before they existed, or one a crash kept from being written) is
        read back from its log and its end record written, for the next listing. `hold(n)` is told
        the bytes of the stored records of each batch read, before they are decoded (it may raise:
        the listing stops there)."""
        mine = frozenset(agent_ids)
        if limit <= 0 or not mine:
            return
        if self.keep_ended:
            yield [live.metadata for live in list(self.sessions.values()) if mine & live.metadata.pset][:limit]
            return
        page_of = self.store.naming_page
        self.flush_ends()
        names = sorted(mine)
        page = page_of(names, 0, limit + LIST_SLACK)
        if page is None:  # (a store opened read-only that keeps no end records)
            yield self._sessions_of_by_log(mine, limit)
            return
        found: list[SessionMetadata] = []
        count, work, step = 0, 0, LIST_FIRST
        seen: set[str] = set()
        try:
            while True:
                at = 0
                while at < len(page):
                    batch = [sid for _n, sid in page[at:at + step]]
                    at += len(batch)
                    seen.update(batch)
                    batch_work = 0
                    for md, cost in self._batch_metadata(batch, hold):
                        batch_work += cost
                        if md is not None and mine & md.pset:
                            found.append(md)
                            count += 1
                            if count == limit:
                                yield found
                                return
                    work += batch_work
                    # (the next batch as many sessions as make ~LIST_WORK of work at this one's cost:
                    # large records, fewer at once; starting small, doubling while they are not)
                    step = max(1, min(LIST_WORK, 2 * len(batch), len(batch) * LIST_WORK // max(batch_work, 1)))
                    if work >= LIST_WORK:
                        yield found
                        found, work = [], 0
                if len(page) < limit + LIST_SLACK:
                    break
                page = page_of(names, page[-1][0], limit + LIST_SLACK) or []
            # sessions opened in this tick, their creation not committed yet: the newest
            found += [live.metadata for sid, live in list(self.sessions.items())
                      if sid not in seen and mine & live.metadata.pset][:limit - count]
            yield found
        finally:
            self.flush_ends()  # (the end records this listing made: the next one reads them)

    def _batch_metadata(self, batch: list[str], hold: Optional[Callable[[int], None]] = None,
                        ) -> Generator[tuple[Optional[SessionMetadata], int], None, None]:
        """Each session of `batch` (ids, in naming order) as its metadata (None: unreadable) and the
        work it took, lazily: held in memory (1), built from its creation and end records (1), or
        read back from its log, its end record then written for the next listing (4)."""
        held = {sid: live for sid in batch if (live := self.sessions.get(sid)) is not None}
        records = self._batch_records([sid for sid in batch if sid not in held], hold)
        for sid in batch:
            live = held.get(sid)
            row = records.get(sid)
            if live is None and row is not None and (live := self._ended.get(sid)) is not None and row[3] is None:
                self._note_end(live)  # (one of the last read, its end record not written)
            md = live.metadata if live is not None else self._from_end(*row) if row is not None else None
            if md is None and live is None:
                live = self._read_back(sid, keep=False)
                if live is not None:
                    md = live.metadata
                    self._note_end(live)
                yield md, 4
            else:
                yield md, 1 if live is not None or row is None else _record_cost(row)

    def _batch_records(self, sids: list[str], hold: Optional[Callable[[int], None]]) -> dict[str, Any]:
        """The stored creation and end records of `sids` by id, one query (none for none); their
        bytes told to `hold` before anything is decoded."""
        if not sids:
            return {}
        records = {row[0]: row for row in self.store.end_records(sids)}
        if hold is not None and records:
            hold(sum(len(row[1]) + len(row[3] or "") for row in records.values() if type(row[1]) is str))
        return records

    def _from_end(self, sid: str, text: Any, crc: Any, end: Any, end_crc: Any) -> Optional[SessionMetadata]:
        """An ended session's metadata from its stored creation and end records (None: no end
        record, or one that fails its checksum)."""
        if end is None or checksum(sid, -1, end) != end_crc:
            return None
        rec = decode_session(sid, text, crc)
        return None if isinstance(rec, Corrupt) else from_end_record(rec, end, self._complete)

    def _sessions_of_by_log(self, mine: frozenset[str], limit: int) -> list[SessionMetadata]:
        """(A store without end records: every ended candidate read back from its log.)"""
        found: list[SessionMetadata] = []
        seen: set[str] = set()
        names = self.store.sessions_naming(sorted(mine))
        try:
            for sid in names:  # (every session whose creation is committed, in creation order)
                seen.add(sid)
                live = self.sessions.get(sid) or self._read_back(sid)
                if live is not None and mine & live.metadata.pset:
                    found.append(live.metadata)
                    if len(found) == limit:
                        return found
        finally:
            close = getattr(names, "close", None)
            if close is not None:
                close()
        # sessions opened in this tick, their creation not committed yet: the newest
        found += [live.metadata for sid, live in list(self.sessions.items()) if sid not in seen and mine & live.metadata.pset]
        return found[:limit]

    # -- lookups --------------------------------------------------------------------------------
    def _live(self, session_id: Any) -> LiveSession:
        check_session_id(session_id)
        live = self.sessions.get(session_id)
        if live is None:
            live = None if self.keep_ended else self._read_back(session_id)
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
            projected: Sequence[dict[str, Any]] = policy.project(envs, agent_id, render)
            return projected
        tr = live.transcript
        if tr is None:  # first view of this session (since hydrate): built once from the log
            tr = live.transcript = Transcript([e for e in self.store.read_range(session_id, 1, live.last_seq)
                                              if isinstance(e, Envelope) and e.event_type in SUBSTANTIVE])
        view: Sequence[dict[str, Any]] = policy.project_log(tr.log_for(agent_id, render, getattr(policy, "named", False)))
        return view

    def subscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        """`await listener(envelope, metadata)` for every envelope the hub delivers, or — with
        `session_id` — only for that session's (`Bus.subscribe`)."""
        self._bus.subscribe(listener, session_id)

    def unsubscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        self._bus.unsubscribe(listener, session_id)

    def subscribe_telemetry(self, fn: TelemetryListener) -> None:
        """`fn(session_id, record)` is called (synchronously) for every telemetry record as it is stored."""
        self._bus.subscribe_telemetry(fn)

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

    def ack(self, session_id: str, agent_id: str) -> Awaitable[None]:
        """Accept `agent_id`'s invite (`Lifecycle.ack`); the last ack opens the session."""
        return self._life.ack(session_id, agent_id)

    def reject(self, session_id: str, agent_id: str, reason: str = "") -> Awaitable[None]:
        """Decline `agent_id`'s invite: the session closes (`Lifecycle.reject`)."""
        return self._life.reject(session_id, agent_id, reason)

    async def post(self, env: Envelope) -> Envelope:
        """Validate, log, fold and deliver one envelope from a participant; returns it stamped."""
        if not self._seq_ready(1):  # a database server away: wait off the loop
            await self._commits.numbers()
        sid = env.session_id
        live = self.sessions.get(sid) if type(sid) is str else None  # a known id is a valid one
        if live is None:
            live = self._live(sid)
        md = live.metadata
        if live.writing is not None:
            await self._idle(live)
        if md.state != _ACTIVE:
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
        if not telemetry_event_ok(event):
            import warnings

            warnings.warn(f"dropped malformed telemetry event from {agent_id!r}: {event!r}", stacklevel=3)
            return None
        return self.store_telemetry(live.session_id, {"agent_id": agent_id, "at": self.clock(), **event})

    def store_telemetry(self, session_id: str, record: dict[str, Any]) -> GroupCommit:
        """Stage one telemetry record as given in this tick's group commit (the one write path)
        and hand it to the telemetry subscribers, live; returns the group."""
        row = telemetry_row(session_id, record)  # not JSON: TypeError/ValueError, nothing staged
        commits = self._commits
        group = commits.group or commits.new_group()
        group.telemetry.append(row)
        self._bus.telemetry(session_id, record)
        return group

    def close(self, session_id: str, reason: str = "explicit_close") -> Awaitable[None]:
        """Close the session (`Lifecycle.close`): `session.closed` with `reason`, then CLOSED."""
        return self._life.close(session_id, reason)

    # -- sweepers (sweeper.py) -----------------------------------------------------------------
    async def sweep(self, now: Optional[float] = None) -> list[Envelope]:
        """One pass of the TTL and expectation sweepers; returns the envelopes it wrote."""
        return await self._sweep.sweep(now)

    def start_sweeper(self, interval: float = 1.0) -> None:
        self._sweep.start(interval)

    async def stop_sweeper(self) -> None:
        await self._sweep.stop()

    @property
    def sweeping(self) -> bool:
        """Whether this hub's sweeper loop runs (`start_sweeper`)."""
        return self._sweep.task is not None

    async def aclose(self) -> None:
        await self.stop_sweeper()
        group = self.flush_ends()
        if group is not None:  # (written before the store closes; a failure is the next listing's to mend)
            await group.committed()
        self.store.close()
