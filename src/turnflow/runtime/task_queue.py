"""The shared task list of a batch run, kept in the store beside the log (docs/scale.md).

One row per task: `pending → running (a worker holds it under a lease) → done | failed`.
A worker *claims* pending tasks, and running tasks whose lease expired (their worker died),
in one statement (PostgreSQL: `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent workers
never get the same task); it renews its leases while it works; it *finishes* a task only
while it still holds it. A task that was started before keeps its session: the claim says
which, and the worker hydrates it and goes on. Lease times are the database's clock on
PostgreSQL (workers on several machines agree) and the local clock on SQLite (one machine).

`PostgresTaskQueue` runs on a `PostgresStore`; `SQLiteTaskQueue` on a `SQLiteStore`, for one
process (SQLite's single writer). Both expire at once the leases of workers on this host
whose process is gone, so a re-run after `kill -9` does not wait for the lease to run out; on
SQLite, whose writer holds the store's lock, the leases of every other process (any host, any
clock) are expired at once.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Optional, Protocol, cast

from turnflow.runtime.clock import STEADY
from turnflow.runtime.errors import StoreDamaged, StoreError, StoreFailed
from turnflow.runtime.store.contract import POSTGRESQL
from turnflow.runtime.store.postgres_leases import NOTIFY_CHANNEL
from turnflow.runtime.tasks import TASK_ROW_COLUMNS, TASK_STATES, Claim, Task, decode_context, task_row_damage

if TYPE_CHECKING:
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.store.contract import Store
    from turnflow.runtime.store.postgres import PostgresStore

STATES = TASK_STATES


class TaskQueue(Protocol):
    """What a batch worker asks of a task list (both engines implement all of it)."""

    blocking: bool  # whether its calls wait for the network: the worker then makes them off the event loop

    def load(self, tasks: list[Task], spec_hash: str) -> int: ...
    def claim(self, worker: str, n: int, lease: float) -> list[Claim]: ...
    def renew(self, worker: str, lease: float) -> set[str]: ...
    def finish(self, worker: str, task_id: str, state: str, result: dict[str, Any]) -> bool: ...
    async def finish_grouped(self, worker: str, task_id: str, state: str, result: dict[str, Any],
                             session_id: Optional[str]) -> bool: ...
    def release_task(self, worker: str, task_id: str) -> bool: ...
    def release(self, worker: str) -> int: ...
    def counts(self) -> dict[str, int]: ...
    def unfinished(self) -> bool: ...
    async def wait_for_change(self, timeout: float) -> None: ...
    def results(self, ids: list[str]) -> dict[str, tuple[str, Optional[dict[str, Any]]]]: ...
    def close(self) -> None: ...

# A claim takes the first `n` tasks by file order among the pending ones and the running ones whose
# lease lapsed. Each kind is its own index range on (state, ord), so a claim costs O(n), not a scan
# and sort of the whole list (an `OR` of the two did that: quadratic over a long batch).
# PostgreSQL: rows another worker is claiming right now are skipped (SKIP LOCKED), never waited for.
_CLAIM_PG = """WITH lapsed AS (SELECT id, ord FROM turnflow_tasks WHERE state = 'running'
                AND lease_until < clock_timestamp() ORDER BY ord LIMIT %(n)s FOR UPDATE SKIP LOCKED),
pending AS (SELECT id, ord FROM turnflow_tasks WHERE state = 'pending' ORDER BY ord LIMIT %(n)s FOR UPDATE SKIP LOCKED),
c AS (SELECT id FROM (SELECT * FROM lapsed UNION ALL SELECT * FROM pending) u ORDER BY ord LIMIT %(n)s)
UPDATE turnflow_tasks t SET state = 'running', worker = %(w)s,
       lease_until = clock_timestamp() + make_interval(secs => %(lease)s), attempts = t.attempts + 1
FROM c WHERE t.id = c.id RETURNING t.ord, t.id, t.task, t.context, t.session_id, t.attempts"""


def new_worker_id() -> str:
    """`host:pid:random` — unique, and tells a worker on this host whose process is gone."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _other_process(workers: Iterable[str]) -> list[str]:
    """The worker ids (`host:pid:random`) of processes other than this one."""
    mine = f"{socket.gethostname()}:{os.getpid()}:"
    out = []
    for w in workers:
        parts = (w or "").rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and not w.startswith(mine):
            out.append(w)
    return out


def _dead_here(workers: Iterable[str]) -> list[str]:
    host = socket.gethostname()
    dead = []
    for w in workers:
        parts = (w or "").rsplit(":", 2)
        if len(parts) != 3 or parts[0] != host or not parts[1].isdigit():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            dead.append(w)
        except (PermissionError, OverflowError):
            continue
    return dead


_UNFINISHED = ("SELECT EXISTS (SELECT 1 FROM turnflow_tasks WHERE state = 'pending') "
               "OR EXISTS (SELECT 1 FROM turnflow_tasks WHERE state = 'running')")
_NOTIFY = f"SELECT pg_notify('{NOTIFY_CHANNEL}', '')"
# A write that changes nothing but makes its transaction's commit write (and, synchronous, flush)
# the WAL: a transaction that only reads, or only takes a transaction id, is never flushed.
_FLUSH = "UPDATE turnflow_schema SET version = version"

DEAD_CHECK_EVERY = 1.0  # seconds between two looks for workers on this host whose process is gone


def _due(queue: Any) -> bool:
    """Whether a claim should look for dead workers again: at most once a second, not at every
    claim (a worker with few sessions claims after every task: one query each for nothing)."""
    now = time.monotonic()
    if queue._dead_checked is not None and now - queue._dead_checked < DEAD_CHECK_EVERY:
        return False
    queue._dead_checked = now
    return True


def _mismatch(t: Task, row: tuple[Any, ...], spec_hash: str) -> Optional[str]:
    task, context, h = row
    if h != spec_hash:
        return f"task {t.id!r} (line {t.line}) was started with another flow on this store; use another store"
    if task != t.task or context != t.context_text():
        return f"task {t.id!r} (line {t.line}) differs from the task this store holds under that id"
    return None


def _store_failures(cls: Any) -> Any:
    """Every method of the SQLite task list raises `StoreFailed` naming the store when SQLite
    fails (a full disk, an I/O error): the store's failure, never the task's, never exit 3."""
    import functools
    import sqlite3

    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(self: Any, *args: Any, **kw: Any) -> Any:
            try:
                return fn(self, *args, **kw)
            except sqlite3.Error as exc:
                raise StoreFailed(f"{self.store.path}: the task list could not be updated: {exc}") from None
        return call

    for name in ("__init__", "load", "claim", "renew", "finish", "release_task", "release", "counts",
                 "unfinished", "results"):
        setattr(cls, name, wrap(getattr(cls, name)))
    return cls


@_store_failures
class SQLiteTaskQueue:
    """The task list in the SQLite store's file (one process at a time)."""

    blocking = False  # local and fast: called on the event loop

    _DDL = """
    CREATE TABLE IF NOT EXISTS turnflow_tasks (
        id TEXT PRIMARY KEY, ord INTEGER NOT NULL, task TEXT, context TEXT NOT NULL, spec_hash TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending', worker TEXT, lease_until REAL,
        attempts INTEGER NOT NULL DEFAULT 0, session_id TEXT, result TEXT);
    CREATE INDEX IF NOT EXISTS turnflow_tasks_by_state ON turnflow_tasks (state, ord);
    """

    def __init__(self, store: "SQLiteStore") -> None:
        self.store = store
        self.db = store.db
        self._dead_checked: Optional[float] = None  # when a claim last looked for dead workers
        self.db.executescript(self._DDL)

    def load(self, tasks: list[Task], spec_hash: str) -> int:
        """Add the tasks this store does not hold yet; refuse ids whose task or flow changed.
        Returns how many were added."""
        have = {}
        for row in self.db.execute(f"SELECT {TASK_ROW_COLUMNS} FROM turnflow_tasks"):
            damage = task_row_damage(row)
            if damage:  # before anything is written
                raise StoreDamaged(f"{self.store.path}: the store is damaged (task {str(row[0])[:40]!r}: {damage}); "
                                   "nothing was written. `turnflow inspect` shows what is still readable")
            have[row[0]] = row[1:4]
        for t in tasks:
            if t.id in have:
                problem = _mismatch(t, have[t.id], spec_hash)
                if problem:
                    raise StoreError(problem)
        base = len(have)
        new = [(t.id, base + i, t.task, t.context_text(), spec_hash)
               for i, t in enumerate(x for x in tasks if x.id not in have)]
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT INTO turnflow_tasks (id, ord, task, context, spec_hash) VALUES (?, ?, ?, ?, ?)",
                                new)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        return len(new)

    def _expire_dead(self, worker: str) -> None:
        """One process writes a SQLite store at a time (sqlite_lock): a task held by a worker of any
        other process is held by nobody — whatever its lease says (written by another clock: another
        machine's, or this one's before a wall-clock step back) and whether or not a process now has
        that pid (reused after a reboot) or that host is this one (a container started again)."""
        others = [r[0] for r in self.db.execute(
            "SELECT DISTINCT worker FROM turnflow_tasks WHERE state = 'running' AND worker != ?", (worker,))]
        for w in _other_process(others):
            self.db.execute("UPDATE turnflow_tasks SET lease_until = 0 WHERE worker = ? AND state = 'running'", (w,))

    def claim(self, worker: str, n: int, lease: float) -> list[Claim]:
        if _due(self):
            self._expire_dead(worker)
        now = STEADY()  # a wall-clock step neither expires nor extends a lease
        rows = self.db.execute(
            "UPDATE turnflow_tasks SET state = 'running', worker = :w, lease_until = :until, attempts = attempts + 1 "
            "WHERE id IN (SELECT id FROM (SELECT * FROM (SELECT id, ord FROM turnflow_tasks WHERE state = 'running' "
            "AND lease_until < :now ORDER BY ord LIMIT :n) UNION ALL SELECT * FROM (SELECT id, ord FROM turnflow_tasks "
            "WHERE state = 'pending' ORDER BY ord LIMIT :n)) ORDER BY ord LIMIT :n) "
            "RETURNING ord, id, task, context, session_id, attempts",
            {"w": worker, "until": now + lease, "now": now, "n": n}).fetchall()
        claims = []
        for _, tid, task, ctx, sid, attempts in sorted(rows):
            if sid is None and attempts > 1:  # interrupted between creating its session and recording it
                sid = self._session_of(tid)
            claims.append(Claim(tid, task, decode_context(ctx), sid, attempts))
        return claims

    def _session_of(self, task_id: str) -> Optional[str]:
        row = self.db.execute("SELECT session_id FROM sessions WHERE json_extract(record, '$.labels.task_id') = ? "
                              "ORDER BY n LIMIT 1", (task_id,)).fetchone()
        return row[0] if row else None

    def renew(self, worker: str, lease: float) -> set[str]:
        rows = self.db.execute("UPDATE turnflow_tasks SET lease_until = ? WHERE worker = ? AND state = 'running' "
                               "RETURNING id", (STEADY() + lease, worker)).fetchall()
        return {r[0] for r in rows}

    def finish(self, worker: str, task_id: str, state: str, result: dict[str, Any]) -> bool:
        cur = self.db.execute("UPDATE turnflow_tasks SET state = ?, result = ?, worker = NULL, lease_until = NULL "
                              "WHERE id = ? AND worker = ? AND state = 'running'",
                              (state, json.dumps(result, sort_keys=True), task_id, worker))
        return cur.rowcount == 1

    async def finish_grouped(self, worker: str, task_id: str, state: str, result: dict[str, Any],
                             session_id: Optional[str]) -> bool:
        """`finish` (one local transaction: nothing to share)."""
        return self.finish(worker, task_id, state, result)

    async def wait_for_change(self, timeout: float) -> None:
        """Wait `timeout` seconds (one process writes a SQLite store: nobody notifies)."""
        import asyncio

        await asyncio.sleep(timeout)

    def close(self) -> None:
        """(Nothing held open.)"""

    def release_task(self, worker: str, task_id: str) -> bool:
        cur = self.db.execute("UPDATE turnflow_tasks SET state = 'pending', worker = NULL, lease_until = NULL "
                              "WHERE id = ? AND worker = ? AND state = 'running'", (task_id, worker))
        return cur.rowcount == 1

    def release(self, worker: str) -> int:
        cur = self.db.execute("UPDATE turnflow_tasks SET state = 'pending', worker = NULL, lease_until = NULL "
                              "WHERE worker = ? AND state = 'running'", (worker,))
        return cur.rowcount

    def counts(self) -> dict[str, int]:
        got = dict(self.db.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state").fetchall())
        return {s: got.get(s, 0) for s in STATES}

    def unfinished(self) -> bool:
        """Whether a task is still pending or running (two index probes, not a count of the list)."""
        return bool(self.db.execute(_UNFINISHED).fetchone()[0])

    def results(self, ids: list[str]) -> dict[str, tuple[str, Optional[dict[str, Any]]]]:
        out: dict[str, tuple[str, Optional[dict[str, Any]]]] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for tid, state, res in self.db.execute(
                    f"SELECT id, state, result FROM turnflow_tasks WHERE id IN ({marks})", chunk):
                out[tid] = (state, json.loads(res) if res else None)
        return out


class PostgresTaskQueue:
    """The task list in PostgreSQL, shared by every worker pointed at the database."""

    blocking = True  # network round trips: called from a thread, off the event loop

    def __init__(self, store: "PostgresStore") -> None:
        self.store = store
        self.pool = store.pool
        self._listener: Any = None  # the connection that LISTENs for finished or released tasks
        self._dead_checked: Optional[float] = None  # when a claim last looked for dead workers

    def load(self, tasks: list[Task], spec_hash: str) -> int:
        with self.pool.connection() as conn, conn.transaction():
            # serialise loaders: workers started together load the same file once
            conn.execute("LOCK TABLE turnflow_tasks IN SHARE ROW EXCLUSIVE MODE")
            have = {r[0]: r[1:] for r in conn.execute("SELECT id, task, context, spec_hash FROM turnflow_tasks")}
            for t in tasks:
                if t.id in have:
                    problem = _mismatch(t, have[t.id], spec_hash)
                    if problem:
                        raise StoreError(problem)
            base = conn.execute("SELECT COALESCE(MAX(ord) + 1, 0) FROM turnflow_tasks").fetchone()[0]
            new = [(t.id, base + i, t.task, t.context_text(), spec_hash)
                   for i, t in enumerate(x for x in tasks if x.id not in have)]
            if new:
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO turnflow_tasks (id, ord, task, context, spec_hash) "
                                    "VALUES (%s, %s, %s, %s, %s)", new)
        return len(new)

    def _expire_dead(self, conn: Any, worker: str) -> None:
        others = [r[0] for r in conn.execute("SELECT DISTINCT worker FROM turnflow_tasks WHERE state = 'running' "
                                             "AND worker <> %s", (worker,))]
        dead = _dead_here(others)
        if dead:
            conn.execute("UPDATE turnflow_tasks SET lease_until = '-infinity' WHERE worker = ANY(%s) "
                         "AND state = 'running'", (dead,))

    def claim(self, worker: str, n: int, lease: float) -> list[Claim]:
        with self.pool.connection() as conn:
            if _due(self):
                self._expire_dead(conn, worker)
            rows = conn.execute(_CLAIM_PG, {"w": worker, "lease": float(lease), "n": n}).fetchall()
        return [Claim(tid, task, decode_context(ctx), sid, attempts)
                for _, tid, task, ctx, sid, attempts in sorted(rows)]

    def renew(self, worker: str, lease: float) -> set[str]:
        with self.pool.connection() as conn:
            rows = conn.execute("UPDATE turnflow_tasks SET lease_until = clock_timestamp() + make_interval(secs => %s) "
                                "WHERE worker = %s AND state = 'running' RETURNING id", (float(lease), worker)).fetchall()
        return {r[0] for r in rows}

    def finish(self, worker: str, task_id: str, state: str, result: dict[str, Any]) -> bool:
        with self.pool.connection() as conn:
            cur = conn.execute("UPDATE turnflow_tasks SET state = %s, result = %s, worker = NULL, lease_until = NULL "
                               "WHERE id = %s AND worker = %s AND state = 'running'",
                               (state, json.dumps(result, sort_keys=True), task_id, worker))
            conn.execute(_NOTIFY)
            changed: int = cur.rowcount
            return changed == 1

    async def finish_grouped(self, worker: str, task_id: str, state: str, result: dict[str, Any],
                             session_id: Optional[str]) -> bool:
        """`finish`, written with the store's next group commit instead of a transaction of its own
        (a batch worker finishing many tasks a second shares its statements)."""
        import asyncio

        if self.store.worker == worker:
            return await self.store.finish_task(task_id, state, result, session_id)
        return await asyncio.to_thread(self.finish, worker, task_id, state, result)

    def release_task(self, worker: str, task_id: str) -> bool:
        with self.pool.connection() as conn:
            cur = conn.execute("UPDATE turnflow_tasks SET state = 'pending', worker = NULL, lease_until = NULL "
                               "WHERE id = %s AND worker = %s AND state = 'running'", (task_id, worker))
            conn.execute(_NOTIFY)
            changed: int = cur.rowcount
            return changed == 1

    def release(self, worker: str) -> int:
        with self.pool.connection() as conn:
            cur = conn.execute("UPDATE turnflow_tasks SET state = 'pending', worker = NULL, lease_until = NULL "
                               "WHERE worker = %s AND state = 'running'", (worker,))
            released: int = cur.rowcount
            if released:  # an idle worker asks at every poll: the others are woken only for a change
                conn.execute(_NOTIFY)
            return released

    def counts(self) -> dict[str, int]:
        with self.pool.connection() as conn:
            got = dict(conn.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state").fetchall())
        return {s: got.get(s, 0) for s in STATES}

    def unfinished(self) -> bool:
        """Whether a task is still pending or running. "No" only once every commit this read saw
        is on the server's disk: at durability "process" (`synchronous_commit=off`) a finish is
        visible before it is durable, and a server crash right after could still lose it and put
        its task back to running — after every worker had left on the word of this read. A
        synchronous commit of a write flushes the WAL up to it, so every commit read before it;
        if the server goes away first, the error is transient and the caller asks again."""
        with self.pool.connection() as conn:
            if conn.execute(_UNFINISHED).fetchone()[0]:
                return True
            with conn.transaction():
                conn.execute("SET LOCAL synchronous_commit = on")
                conn.execute(_FLUSH)
            return False

    async def wait_for_change(self, timeout: float) -> None:
        """`block_until_change` off the event loop."""
        import asyncio

        await asyncio.to_thread(self.block_until_change, timeout)

    def block_until_change(self, timeout: float) -> None:
        """Block until another worker finishes or gives back a task (a NOTIFY on `turnflow_tasks`),
        or `timeout` seconds: a worker with nothing left to claim exits as soon as the last task
        is done, instead of up to a poll interval later. The first call only starts listening and
        returns at once (the caller then looks at the list again: nothing is missed meanwhile)."""
        psycopg = self.store._psycopg
        if self._listener is None:
            try:
                self._listener = psycopg.connect(self.store.url, autocommit=True)
                self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
            except psycopg.OperationalError:  # the server is away (restarting): wait, then look again
                self.close()
                time.sleep(timeout)
            return
        try:
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                pass
        except psycopg.OperationalError:  # the server went away: listen again next time
            self.close()

    def close(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            finally:
                self._listener = None

    def results(self, ids: list[str]) -> dict[str, tuple[str, Optional[dict[str, Any]]]]:
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT id, state, result FROM turnflow_tasks WHERE id = ANY(%s)", (ids,)).fetchall()
        return {tid: (state, json.loads(res) if res else None) for tid, state, res in rows}


def task_queue_for(store: Store) -> TaskQueue:
    """The task list kept in `store`, in its engine's dialect."""
    if store.dialect is POSTGRESQL:
        return PostgresTaskQueue(cast("PostgresStore", store))
    return SQLiteTaskQueue(cast("SQLiteStore", store))
