"""Batch runs: one session per task of a task list, up to `concurrency` at a time in one
process, on a store that may be shared by other workers (docs/scale.md).

A `BatchWorker` claims tasks from the store's task list (runtime/task_queue.py), runs each
with `run_session` on one hub, renews its leases while it works and records each task's
result. A claimed task that was started before — by this store's previous run, stopped with
Ctrl-C, or by a worker that died — keeps its session: the worker hydrates that session alone
and continues it from where its log stops (**continue, not restart**: nothing a session
already logged is run again). A task whose result is recorded is never run again.

The batch hub never hydrates the whole store: sessions are taken one at a time, so a worker's
memory is bounded by its concurrency, and it never writes to a session it does not hold.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from turnflow.runtime.envelope import SUBSTANTIVE, Envelope
from turnflow.runtime.clock import reconnect_seconds
from turnflow.runtime.errors import AdapterError, EndpointUnavailable, ProtocolError, StoreError, StoreFailed
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import RunResult, run_session
from turnflow.runtime.session import SessionMetadata
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.store.contract import Store
from turnflow.runtime.task_queue import TaskQueue
from turnflow.runtime.tasks import Claim, LeaseLost, spec_for


@dataclass
class TaskOutcome:
    """One task's result, as stored in the task list and printed by `--format json`."""

    id: str
    status: str  # done | failed
    session_id: Optional[str]
    state: Optional[str]
    close_reason: Optional[str]
    turns: int
    error: Optional[str] = None
    resumed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "session_id": self.session_id, "state": self.state,
                "close_reason": self.close_reason, "turns": self.turns, "error": self.error,
                "resumed": self.resumed}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TaskOutcome":
        return cls(d.get("id", ""), d.get("status", "failed"), d.get("session_id"), d.get("state"),
                   d.get("close_reason"), int(d.get("turns") or 0), d.get("error"), bool(d.get("resumed")))


@dataclass
class Progress:
    done: int = 0
    failed: int = 0
    running: int = 0
    lost: int = 0
    posts: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self, total: int) -> str:
        secs = max(time.monotonic() - self.started, 1e-9)
        return (f"done {self.done + self.failed}/{total}  running {self.running}  failed {self.failed}  "
                f"turns/s {self.posts / secs:.1f}")


class BatchWorker:
    def __init__(self, store: Store, queue: TaskQueue, spec: Union[SessionSpec, dict[str, Any]],
                 make_agents: Callable[[], dict[str, Any]], *, worker: str,
                 concurrency: int = 8, lease: float = 30.0, on_result: Optional[Callable[[TaskOutcome], None]] = None,
                 on_progress: Optional[Callable[[Progress], None]] = None) -> None:
        self.store = store
        self.queue = queue
        self.spec = SessionSpec.parse(spec)
        self.make_agents = make_agents
        self.worker = worker
        self.concurrency = max(1, concurrency)
        self.lease = lease
        self.on_result = on_result
        self.on_progress = on_progress
        self.hub = Hub(store)  # not hydrated: sessions are taken one at a time (`_adopt`)
        self.hub.subscribe(self._count)
        self.progress = Progress()
        self.outcomes: list[TaskOutcome] = []
        self.poll = max(0.05, min(0.25, lease / 4))  # how often to look again for tasks others may give back
        self._finishing: set[str] = set()
        self._orphans: set[str] = set()  # held in the database, run by nobody here, at the last renewal

    async def _count(self, env: Envelope, md: SessionMetadata) -> None:
        if env.event_type in SUBSTANTIVE:
            self.progress.posts += 1
            # Let the other sessions, the progress line and Ctrl-C in after every turn: with a store
            # that commits synchronously (SQLite) and agents that never wait, a session would
            # otherwise run from its first turn to its last without giving up the event loop.
            await asyncio.sleep(0)

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self.queue.blocking:
            return fn(*args)
        window = reconnect_seconds()
        deadline = time.monotonic() + window
        while True:  # a database server restarting or a killed connection: try again, then give up
            try:
                return await asyncio.to_thread(fn, *args)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise unreachable(self.store.path, window, exc) from None
                await asyncio.sleep(0.2)

    def _tick(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress)

    # -- one task -------------------------------------------------------------------------------
    async def _adopt(self, session_id: str) -> None:
        """Hydrate one session (and complete a close its log asked for) into the batch hub."""
        sub = await Hub.open(self.store, only=session_id, clock=self.hub.clock, adapters=self.hub.adapters)
        if sub.report.problems:
            raise StoreError(str(sub.report.problems[0]))
        live = sub.sessions.get(session_id)
        if live is None:
            raise StoreError(f"session {session_id}: not in the store")
        self.hub.adopt(live)

    async def _run_task(self, claim: Claim, before: Optional[set[asyncio.Task[None]]] = None) -> None:
        if before:
            await asyncio.wait(before)
        resumed = claim.session_id is not None
        sid: Optional[str] = claim.session_id
        try:
            spec = spec_for(self.spec, claim.as_task())
            agents = self.make_agents()
            if claim.session_id is not None:  # resumed
                await self._adopt(claim.session_id)
                result = await run_session(self.hub, spec, agents, claim.task, session_id=claim.session_id,
                                           keep_open=True)
            else:
                result = await run_session(self.hub, spec, agents, claim.task, labels={"task_id": claim.id},
                                           keep_open=True)
            sid = result.session_id
            if result.state not in ("closed", "expired"):
                # the run stopped before the session ended (its close could not be written): the
                # task is not finished; it is continued from its stored log
                raise LeaseLost(f"session {sid} stopped in state {result.state}")
            outcome = _outcome(claim.id, result, resumed)
        except EndpointUnavailable:  # a model endpoint down longer than its agent waits: the batch stops,
            raise  # every task it holds given back, no task recorded failed (the same command continues)
        except (AdapterError, ProtocolError) as exc:  # the session could not even start
            outcome = TaskOutcome(claim.id, "failed", sid, None, None, 0, str(exc), resumed)
        except Exception as exc:
            if not isinstance(exc, LeaseLost) and not is_transient(exc):
                raise
            # LeaseLost (TailLost too: the server lost the session's last commits) or the
            # connection dropped while the session ran: carry on with the other tasks
            self.progress.lost += 1
            # Normally another worker holds the task now. If the database says it is still ours
            # (a write was refused while the lease held), give it back: it is continued from its
            # log by whoever claims it next, instead of staying held by a worker that dropped it.
            await self._call(self.queue.release_task, self.worker, claim.id)
            return
        finally:
            for s in ([sid] if sid else []) + [s for s, live in list(self.hub.sessions.items())
                                               if (live.metadata.labels or {}).get("task_id") == claim.id]:
                self.hub.sessions.pop(s, None)
                self.store.forget(s)
        self._finishing.add(claim.id)  # the renewer must not mistake a task being finished for a lost one
        try:
            # PostgreSQL: written with the next group commit
            finished = await self.queue.finish_grouped(self.worker, claim.id, outcome.status, outcome.to_json(), sid)
        except LeaseLost:  # the task is another worker's now (a long outage): this one carries on
            finished = False
        finally:
            self._finishing.discard(claim.id)
        if not finished:  # not ours any more, or the session's log lost its end in a server crash
            self.progress.lost += 1
            await self._call(self.queue.release_task, self.worker, claim.id)  # continued from its log
            return
        self.outcomes.append(outcome)
        if outcome.status == "done":
            self.progress.done += 1
        else:
            self.progress.failed += 1
        if self.on_result is not None:
            self.on_result(outcome)

    # -- the loop -------------------------------------------------------------------------------
    async def run(self) -> None:
        running: dict[asyncio.Task[None], Claim] = {}
        renewer = asyncio.get_running_loop().create_task(self._renew(running))
        self.hub.start_sweeper(self._sweep_interval())  # one sweeper (TTL, expectations) for every session
        try:
            while True:
                free = self.concurrency - len(running)
                claims = await self._call(self.queue.claim, self.worker, free, self.lease) if free > 0 else []
                for c in claims:
                    # a task claimed again while its earlier run here is still stopping (its lease
                    # was lost and came back, e.g. a server crash rolled the claim back) starts
                    # after that run ended: two runs of one task never share the hub at once
                    before = {t for t, k in running.items() if k.id == c.id}
                    running[asyncio.get_running_loop().create_task(self._run_task(c, before))] = c
                self.progress.running = len(running)
                self._tick()
                if not running:
                    if not await self._call(self.queue.unfinished):
                        return
                    # Tasks the database says this worker holds while it runs none: a server crash
                    # lost the commit that finished or gave them back. Given back at once, to be
                    # continued from their logs (the renewer would take two renewals: 10-20 s at
                    # the default lease, with every worker of the batch waiting for them).
                    if await self._call(self.queue.release, self.worker):
                        continue
                    # other workers hold the rest: wait until they finish (told at once on PostgreSQL)
                    # or die (their leases run out: looked at again every poll interval)
                    await self.queue.wait_for_change(self.poll)
                    continue
                done, _ = await asyncio.wait(running, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    running.pop(t)
                    if t.cancelled():  # the renewer found the task taken over
                        self.progress.lost += 1
                        continue
                    t.result()  # a store failure other than a lost lease ends the batch
                self.progress.running = len(running)
                self._tick()
        except BaseException:
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            await self._call(self.queue.release, self.worker)
            raise
        finally:
            await self.hub.stop_sweeper()
            renewer.cancel()
            try:
                await renewer
            except (asyncio.CancelledError, Exception):
                pass

    def _sweep_interval(self) -> float:
        """A quarter of the flow's shortest deadline (expectations, TTL), 0.05-1 s, as a single run's."""
        deadlines = [e.seconds for e in self.spec.expectations]
        if self.spec.ttl_seconds is not None:
            deadlines.append(float(self.spec.ttl_seconds))
        return max(0.05, min([1.0] + [d / 4 for d in deadlines if d > 0]))

    async def _renew(self, running: dict[asyncio.Task[None], Claim]) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            before = list(running.items())  # only tasks claimed before this renewal can be missing from it
            try:
                held = await self._call(self.queue.renew, self.worker, self.lease)
            except StoreError:
                continue  # try again at the next period; the lease outlives two missed renewals
            except Exception as exc:  # a database error (deadlock victim, connection reset): the same
                if type(exc).__module__.split(".")[0] not in ("psycopg", "psycopg_pool", "sqlite3"):
                    raise
                continue
            for t, c in before:
                if c.id not in held and c.id not in self._finishing and not t.done():
                    t.cancel()  # taken over: stop working on it (its writes would be refused anyway)
            # Tasks the database says this worker holds but no run of it here works on, at two
            # renewals in a row (a database server crash lost the commit that finished or gave
            # them back): give them back, or every worker would wait for them forever.
            mine = {c.id for c in running.values()} | self._finishing
            orphans = {tid for tid in held if tid not in mine}
            for tid in orphans & self._orphans:
                await self._call(self.queue.release_task, self.worker, tid)
            self._orphans = orphans


def unreachable(where: str, window: float, exc: BaseException) -> StoreFailed:
    """The worker gives up on a database away longer than the reconnect window: the store's
    failure (exit 2 naming it), never a task's."""
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return StoreFailed(f"{where}: the database could not be reached for {window:g} s ({detail}); the tasks not "
                       "finished stay to do")


def retrying(fn: Callable[..., Any], *args: Any, where: str = "the store") -> Any:
    """`fn(*args)` from a thread with no event loop (the command's last read of the results),
    tried again like `BatchWorker._call` while the database is away, up to `reconnect_seconds()`;
    then `StoreFailed` naming `where`."""
    window = reconnect_seconds()
    deadline = time.monotonic() + window
    while True:
        try:
            return fn(*args)
        except Exception as exc:
            if not is_transient(exc):
                raise
            if time.monotonic() >= deadline:
                raise unreachable(where, window, exc) from None
            time.sleep(0.2)


def is_transient(exc: BaseException) -> bool:
    """A lost or refused database connection (psycopg's OperationalError, a pool timeout): the
    server restarts or a backend was terminated, and a later attempt may succeed."""
    names = {c.__name__ for c in type(exc).__mro__}
    return type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool") and bool(
        names & {"OperationalError", "PoolTimeout", "TooManyRequests"})


def _outcome(task_id: str, result: RunResult, resumed: bool) -> TaskOutcome:
    return TaskOutcome(task_id, "done" if result.ok else "failed", result.session_id, result.state,
                       result.close_reason, len(result.turns), result.error, resumed)
