"""`PostgresStore`: the write-ahead log on PostgreSQL, shared by any number of hubs (processes,
machines). Needs the optional extra `turnflow[postgres]` (psycopg 3 and psycopg_pool).

Same log, same records and the same durability promise as `SQLiteStore`: every envelope is
one row holding its JSON record and a CRC-32 over `session_id`, `seq` and the record, and
it is committed before the hub folds or delivers it. What differs:

- **Durability** (`durability=`, as for SQLite): "process" by default, "full" on request (see
  the class).
- **Group commit.** `append` serialises the envelope at once (a value that is not JSON is
  refused before anything is queued) and returns an awaitable; one committer thread takes
  every envelope queued meanwhile — from all the sessions this process drives — and writes
  them in one transaction. The hub awaits the commit before it folds, so many concurrent
  sessions share each commit (and its fsync) instead of paying one each.
- **Several writers.** Global sequence numbers (the envelope ids) come from a PostgreSQL
  sequence in blocks of `GSEQ_BLOCK`, so they are unique across processes and increase within
  a process; a session's log is ordered by its own `seq`, and `(session_id, seq)` is unique.
  When the store belongs to a batch worker (`worker` set), each commit also checks — in the
  same transaction, holding a share lock on the task rows — that this worker still holds the
  lease of every session it writes: a worker whose task was taken over can never append to it
  again, so two writers never interleave one session's log (docs/scale.md).
- Schema: tables `turnflow_schema` (the schema version), `turnflow_sessions`,
  `turnflow_envelopes`, `turnflow_telemetry` and `turnflow_tasks` (batch runs). All SQL is
  parameterised.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from typing import Any, Iterator, Optional, Union

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.errors import StoreError
from turnflow.runtime.session import check_session_id
from turnflow.runtime.store import Corrupt, _crc, decode_envelope, decode_session
from turnflow.runtime.tasks import LeaseLost

SCHEMA_VERSION = 1
GSEQ_BLOCK = 1000
_LOCK_KEY = 0x7475726E666C6F77  # "turnflow": serialises schema creation between workers starting together

_DDL = [
    "CREATE TABLE IF NOT EXISTS turnflow_schema (version integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS turnflow_sessions (
        n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id text NOT NULL UNIQUE,
        task_id text UNIQUE,
        record text NOT NULL,
        crc bigint NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS turnflow_envelopes (
        n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        gseq bigint NOT NULL UNIQUE,
        session_id text NOT NULL,
        seq integer NOT NULL,
        event_type text NOT NULL,
        record text NOT NULL,
        crc bigint NOT NULL,
        UNIQUE (session_id, seq))""",
    f"CREATE SEQUENCE IF NOT EXISTS turnflow_gseq INCREMENT BY {GSEQ_BLOCK} START WITH 1",
    """CREATE TABLE IF NOT EXISTS turnflow_telemetry (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id text NOT NULL,
        record text NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS turnflow_telemetry_by_session ON turnflow_telemetry (session_id, id)",
    """CREATE TABLE IF NOT EXISTS turnflow_tasks (
        id text PRIMARY KEY,
        ord bigint NOT NULL,
        task text,
        context text NOT NULL,
        spec_hash text NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
        worker text,
        lease_until timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        session_id text,
        result text)""",
    "CREATE INDEX IF NOT EXISTS turnflow_tasks_by_state ON turnflow_tasks (state, ord)",
    "CREATE INDEX IF NOT EXISTS turnflow_tasks_by_session ON turnflow_tasks (session_id)",
]

_UNNEST = ("SELECT * FROM unnest(%s::bigint[], %s::text[], %s::integer[], %s::text[], %s::text[], %s::bigint[]) "
           "AS v (gseq, session_id, seq, event_type, record, crc)")
_INSERT_ENVS = ("INSERT INTO turnflow_envelopes (gseq, session_id, seq, event_type, record, crc) "
                + _UNNEST + " RETURNING gseq")
# only the rows of sessions whose task this worker holds; the task rows are share-locked
_INSERT_ENVS_HELD = ("INSERT INTO turnflow_envelopes (gseq, session_id, seq, event_type, record, crc) "
                     "SELECT v.gseq, v.session_id, v.seq, v.event_type, v.record, v.crc FROM (" + _UNNEST + ") v "
                     "JOIN turnflow_tasks t ON t.session_id = v.session_id AND t.worker = %s "
                     "FOR SHARE OF t RETURNING gseq")
_INSERT_SESSION = "INSERT INTO turnflow_sessions (session_id, task_id, record, crc) VALUES (%s, %s, %s, %s)"
_INSERT_BOUND_SESSION = ("WITH b AS (UPDATE turnflow_tasks SET session_id = %s WHERE id = %s AND worker = %s "
                         "AND state = 'running' AND session_id IS NULL RETURNING id) "
                         "INSERT INTO turnflow_sessions (session_id, task_id, record, crc) "
                         "SELECT %s, b.id, %s, %s FROM b RETURNING session_id")
_INSERT_TEL = "INSERT INTO turnflow_telemetry (session_id, record) VALUES (%s, %s)"
_INSERT_TELS_HELD = ("INSERT INTO turnflow_telemetry (session_id, record) SELECT v.session_id, v.record "
                     "FROM unnest(%s::text[], %s::text[]) AS v (session_id, record) "
                     "WHERE NOT EXISTS (SELECT 1 FROM turnflow_tasks t WHERE t.session_id = v.session_id "
                     "AND t.worker IS DISTINCT FROM %s)")


_TABLES = ("turnflow_sessions", "turnflow_envelopes", "turnflow_telemetry", "turnflow_tasks")


def _set_read_only(conn: Any) -> None:
    """Every later transaction of this connection is READ ONLY: the server refuses any write."""
    conn.execute("SELECT set_config('default_transaction_read_only', 'on', false)")


def _import_psycopg():
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise StoreError("a postgresql:// store needs psycopg 3 and psycopg_pool: "
                         "pip install 'turnflow[postgres]'") from None
    return psycopg, psycopg_pool


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("://")
    if "@" not in tail:
        return url
    cred, _, host = tail.rpartition("@")
    user = cred.split(":", 1)[0]
    return f"{head}{sep}{user}:***@{host}" if ":" in cred else url


class _Pending:
    """One queued write: an envelope row (with the future its hub awaits) or a telemetry row."""

    __slots__ = ("kind", "row", "session_id", "future", "loop", "env")

    def __init__(self, kind: str, row: tuple, session_id: str, future: Optional[asyncio.Future],
                 loop: Optional[asyncio.AbstractEventLoop], env: Optional[Envelope] = None) -> None:
        self.kind, self.row, self.session_id, self.future, self.loop = kind, row, session_id, future, loop
        self.env = env  # an envelope row's envelope: remembered in this process's log copy once committed


class PostgresStore:
    """`PostgresStore("postgresql://user@host/db", worker=None, durability="process", pool_size=4)`.

    `worker` names the batch worker this store writes for (docs/scale.md); leave it None for a
    single session run, where no lease is checked. `durability` mirrors `SQLiteStore`'s:
    "process" (`synchronous_commit=off`): a commit is in the server before `post` returns, so a
    crash or `kill -9` of the worker loses nothing it was told was written; a crash of the
    database server or its machine may lose the last commits (PostgreSQL keeps the log a
    consistent prefix). "full" (`synchronous_commit=on`): every returned post is on the
    server's disk too (one WAL flush per group commit).

    `read_only=True` (what `turnflow inspect` uses) writes nothing: every connection runs with
    `default_transaction_read_only=on`, so the server itself refuses any write; the schema is
    checked, never created, and a database that is not a turnflow store of this schema version
    is refused (`StoreError`) untouched."""

    engine = "postgresql"

    def __init__(self, url: str, *, worker: Optional[str] = None, durability: str = "process",
                 pool_size: int = 4, connect_timeout: float = 10.0, read_only: bool = False) -> None:
        if durability not in ("process", "full"):
            raise StoreError(f"durability must be 'process' or 'full', got {durability!r}")
        psycopg, psycopg_pool = _import_psycopg()
        self.durability = durability
        self._psycopg = psycopg
        self.url = url
        self.path = redact(url)
        self.worker = worker
        self.read_only = read_only
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout))) as conn:
                if read_only:
                    _set_read_only(conn)
                    self._check_schema(conn)
                else:
                    self._ensure_schema(conn)
        except psycopg.Error as exc:
            raise StoreError(f"{self.path}: cannot open as a turnflow store: {_first_line(exc)}") from None
        sync = "off" if durability == "process" else "on"

        def configure(conn: Any) -> None:
            conn.execute("SELECT set_config('synchronous_commit', %s, false)", (sync,))
            if read_only:
                _set_read_only(conn)

        self.pool = psycopg_pool.ConnectionPool(url, min_size=1, max_size=max(2, pool_size), open=False,
                                                kwargs={"autocommit": True}, configure=configure)
        try:
            self.pool.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout:
            raise StoreError(f"{self.path}: cannot connect within {connect_timeout:g} s") from None
        self._gseq_next = 0
        self._gseq_end = 0  # exclusive: the reserved block is [next, end)
        self._gseq_lock = threading.Lock()
        self._queue: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._committer: Optional[threading.Thread] = None
        self._inflight = 0  # queued or being written
        self._kick_pending = False  # a wake-up of the committer is scheduled on the event loop
        self.commits = 0  # transactions written by the committer (a group commit counts once)
        self.batch_failures: list[str] = []  # why whole batches failed (their items were retried one by one)
        self._cache: dict[str, list[Envelope]] = {}  # committed logs of the sessions this process writes

    # -- schema ---------------------------------------------------------------------------------
    def _ensure_schema(self, conn: Any) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for stmt in _DDL:
                conn.execute(stmt)
            rows = conn.execute("SELECT version FROM turnflow_schema").fetchall()
            if not rows:
                conn.execute("INSERT INTO turnflow_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
            elif len(rows) != 1 or rows[0][0] != SCHEMA_VERSION:
                raise StoreError(f"{self.path}: unsupported store schema version "
                                 f"{', '.join(str(r[0]) for r in rows)} (expected {SCHEMA_VERSION})")

    def _check_schema(self, conn: Any) -> None:
        """Read-only: `StoreError` unless the database holds every turnflow table and this
        schema version (`to_regclass` follows the search path, as the DDL does)."""
        if conn.execute("SELECT to_regclass('turnflow_schema')").fetchone()[0] is None:
            raise StoreError(f"{self.path}: not a turnflow store (it has no turnflow_schema table)")
        rows = conn.execute("SELECT version FROM turnflow_schema").fetchall()
        if len(rows) != 1 or rows[0][0] != SCHEMA_VERSION:
            found = ", ".join(str(r[0]) for r in rows) or "none"
            raise StoreError(f"{self.path}: unsupported store schema version {found} (expected {SCHEMA_VERSION})")
        for table in _TABLES:
            if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
                raise StoreError(f"{self.path}: not a turnflow store (it has no table {table})")

    # -- global sequence ------------------------------------------------------------------------
    def next_global_seq(self) -> int:
        """A number no other writer of this database will get (blocks of GSEQ_BLOCK from a sequence)."""
        with self._gseq_lock:
            if self._gseq_next >= self._gseq_end:
                with self.pool.connection() as conn:
                    start = conn.execute("SELECT nextval('turnflow_gseq')").fetchone()[0]
                self._gseq_next, self._gseq_end = start, start + GSEQ_BLOCK
            value = self._gseq_next
            self._gseq_next += 1
            return value

    def last_global_seq(self) -> int:
        with self.pool.connection() as conn:
            row = conn.execute("SELECT MAX(gseq) FROM turnflow_envelopes").fetchone()
        return row[0] or 0

    # -- writing --------------------------------------------------------------------------------
    def create_session(self, record: dict) -> Optional[asyncio.Future]:
        """Store the creation record (through the group commit, like an envelope). A record whose
        labels carry a `task_id` binds the session to that task in the same statement; for a
        worker that no longer holds the task's lease (or a task that already has a session)
        nothing is written and `LeaseLost` is raised to the awaiting hub."""
        sid = check_session_id(record["session_id"])
        text = json.dumps(record, sort_keys=True, separators=(",", ":"))
        labels = record.get("labels") or {}
        task_id = labels.get("task_id") if isinstance(labels, dict) else None
        row = (sid, None if task_id is None else str(task_id), text, _crc(sid, 0, text))
        self._cache[sid] = []
        return self._enqueue(_Pending("session", row, sid, None, None))

    def append(self, envelope: Envelope, global_seq: int) -> Optional[asyncio.Future]:
        """Queue one envelope for the next group commit. Returns a future the hub awaits (it
        resolves once the transaction holding the envelope has committed); without a running
        event loop the envelope is committed before `append` returns."""
        text = json.dumps(envelope.to_record(), separators=(",", ":"))  # not JSON: raises here, nothing queued
        row = (global_seq, envelope.session_id, envelope.seq, envelope.event_type, text,
               _crc(envelope.session_id, envelope.seq, text))
        fut = self._enqueue(_Pending("env", row, envelope.session_id, None, None, envelope))
        if fut is None:
            self._remember(envelope)
        return fut  # once committed, _settle_all remembers the envelope before it resolves this

    def _enqueue(self, item: _Pending) -> Optional[asyncio.Future]:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            self._write([item], raise_errors=True)
            return None
        item.loop = loop
        item.future = loop.create_future()
        self._submit(item)
        return item.future

    def _remember(self, env: Envelope) -> None:
        log = self._cache.get(env.session_id)
        if log is not None and env.seq == len(log) + 1:
            log.append(env)
        else:
            self._cache.pop(env.session_id, None)

    def forget(self, session_id: str) -> None:
        """Drop this process's copy of a session's log (the batch runner calls it when a task ends)."""
        self._cache.pop(session_id, None)

    def append_telemetry(self, session_id: str, event: dict) -> None:
        """Telemetry rides along with the next group commit (it is not under the envelope promise)."""
        check_session_id(session_id)
        row = (session_id, json.dumps(event, sort_keys=True))
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._write([_Pending("tel", row, session_id, None, None)], raise_errors=True)
            return
        self._submit(_Pending("tel", row, session_id, None, None))

    def _submit(self, item: _Pending) -> None:
        with self._cond:
            if self._closing:
                raise StoreError(f"{self.path}: the store is closed")
            if self._committer is None:
                self._committer = threading.Thread(target=self._run_committer, name="turnflow-pg-commit",
                                                   daemon=True)
                self._committer.start()
            self._queue.append(item)
            self._inflight += 1
            if item.loop is None:
                self._cond.notify_all()
                return
            if self._kick_pending:
                return
            self._kick_pending = True
        # wake the committer at the end of this event-loop tick, not per item: every envelope the
        # tick staged goes into one transaction, and the committer thread takes the GIL once
        item.loop.call_soon(self._kick)

    def _kick(self) -> None:
        with self._cond:
            self._kick_pending = False
            self._cond.notify_all()

    def _run_committer(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                batch = list(self._queue)
                self._queue.clear()
            try:
                self._write(batch, raise_errors=False)
            finally:
                with self._cond:
                    self._inflight -= len(batch)
                    self._cond.notify_all()

    def _write(self, batch: list[_Pending], *, raise_errors: bool) -> None:
        """Commit a batch in one transaction. Envelopes of sessions whose lease this worker lost
        are refused (their futures fail); if the transaction fails as a whole, every item is
        retried in a transaction of its own so one bad envelope fails only its own post."""
        psycopg = self._psycopg
        errors: dict[int, BaseException] = {}
        try:
            errors = self._commit(batch)
        except psycopg.Error as exc:
            if len(batch) == 1:
                errors = {0: StoreError(f"session {batch[0].session_id}: cannot append: {_first_line(exc)}")}
            else:
                self.batch_failures.append(_first_line(exc))
                for i, item in enumerate(batch):
                    try:
                        for refusal in self._commit([item]).values():
                            if not self._already_written(item):
                                errors[i] = refusal
                    except psycopg.Error as one:
                        if not self._already_written(item):
                            errors[i] = StoreError(f"session {item.session_id}: cannot append: {_first_line(one)}")
        except Exception as exc:  # pragma: no cover - pool closed, connection lost: fail every waiter
            errors = {i: StoreError(f"{self.path}: {_first_line(exc)}") for i in range(len(batch))}
        # one hand-off per event loop, not one per envelope: each call_soon_threadsafe wakes the loop
        settle: dict[asyncio.AbstractEventLoop, list] = {}
        for i, item in enumerate(batch):
            problem = errors.get(i)
            if raise_errors and problem is not None:
                raise problem
            if item.future is not None and item.loop is not None:
                settle.setdefault(item.loop, []).append((item.future, problem, item.env))
        for loop, outcomes in settle.items():
            try:
                loop.call_soon_threadsafe(self._settle_all, outcomes)
            except RuntimeError:  # pragma: no cover - the loop is gone
                pass

    def _already_written(self, item: _Pending) -> bool:
        """Whether a retried item is in the database already (its batch committed, then failed
        on the way back): then the retry is a success, not a refusal."""
        try:
            with self.pool.connection() as conn:
                if item.kind == "session":
                    row = conn.execute("SELECT 1 FROM turnflow_sessions WHERE session_id = %s", (item.row[0],))
                elif item.kind == "env":
                    row = conn.execute("SELECT 1 FROM turnflow_envelopes WHERE gseq = %s AND session_id = %s",
                                       (item.row[0], item.row[1]))
                else:
                    return False
                return row.fetchone() is not None
        except self._psycopg.Error:
            return False

    @staticmethod
    def _commit_refusal(item: _Pending) -> "LeaseLost":
        return LeaseLost(f"session {item.session_id}: this worker lost the task's lease "
                          "(another worker took it over); the envelope was not written")

    def _commit(self, batch: list[_Pending]) -> dict[int, BaseException]:
        """One transaction, pipelined (one round trip): the session records, then every envelope
        in a single INSERT whose rows are kept only where this worker holds the session's task
        (the task rows are share-locked, so no claim can take them over before this commits),
        then the telemetry rows. Returns the items refused for a lost lease."""
        sessions = [(i, it) for i, it in enumerate(batch) if it.kind == "session"]
        envs = [(i, it) for i, it in enumerate(batch) if it.kind == "env"]
        tels = [it.row for it in batch if it.kind == "tel"]
        refused: dict[int, BaseException] = {}
        with self.pool.connection() as conn:
            with conn.pipeline(), conn.transaction():
                s_curs = []
                for _, it in sessions:
                    sid, task_id, text, crc = it.row
                    if task_id is not None and self.worker is not None:
                        s_curs.append(conn.execute(_INSERT_BOUND_SESSION, (sid, task_id, self.worker, sid, text, crc)))
                    else:
                        s_curs.append(conn.execute(_INSERT_SESSION + " RETURNING session_id", it.row))
                e_cur = None
                if envs:
                    cols = [list(c) for c in zip(*(it.row for _, it in envs))]  # lists adapt to arrays
                    if self.worker is not None:
                        e_cur = conn.execute(_INSERT_ENVS_HELD, (*cols, self.worker))
                    else:
                        e_cur = conn.execute(_INSERT_ENVS, cols)
                if tels:
                    cols = [list(c) for c in zip(*tels)]
                    if self.worker is not None:  # a worker that lost the task does not write into it
                        conn.execute(_INSERT_TELS_HELD, (*cols, self.worker))
                    else:
                        conn.cursor().executemany(_INSERT_TEL, tels)
            for (i, it), cur in zip(sessions, s_curs):
                if cur.fetchone() is None:
                    refused[i] = LeaseLost(f"task {it.row[1]!r}: this worker no longer holds its lease "
                                           "(or it already has a session); the session was not created")
            if e_cur is not None:
                written = {r[0] for r in e_cur.fetchall()}
                for i, it in envs:
                    if it.row[0] not in written:
                        refused[i] = self._commit_refusal(it)
        self.commits += 1
        return refused

    # -- reading --------------------------------------------------------------------------------
    def sessions(self) -> Iterator[Union[dict, Corrupt]]:
        with self.pool.connection() as conn, conn.transaction():
            with conn.cursor(name="turnflow_sessions_scan") as cur:
                cur.itersize = 512
                cur.execute("SELECT session_id, record, crc FROM turnflow_sessions ORDER BY n")
                for sid, text, crc in cur:
                    yield decode_session(sid, text, crc)

    def session_record(self, session_id: str) -> Optional[Union[dict, Corrupt]]:
        check_session_id(session_id)
        with self.pool.connection() as conn:
            row = conn.execute("SELECT session_id, record, crc FROM turnflow_sessions WHERE session_id = %s",
                               (session_id,)).fetchone()
        return None if row is None else decode_session(*row)

    def stream(self) -> Iterator[Union[Envelope, Corrupt]]:
        """Every envelope in commit order (each session's in `seq` order), streamed through a
        server-side cursor: memory stays bounded."""
        with self.pool.connection() as conn, conn.transaction():
            with conn.cursor(name="turnflow_envelopes_scan") as cur:
                cur.itersize = 1024
                cur.execute("SELECT session_id, seq, record, crc FROM turnflow_envelopes ORDER BY n")
                for sid, seq, text, crc in cur:
                    yield decode_envelope(sid, seq, text, crc)

    def read_range(self, session_id: str, start: int = 1, end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]:
        check_session_id(session_id)
        log = self._cache.get(session_id)
        if log is not None:  # this process wrote (or loaded) every committed envelope of the session
            return iter(log[max(start, 1) - 1:end])
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT session_id, seq, record, crc FROM turnflow_envelopes WHERE session_id = %s "
                                "AND seq >= %s AND seq <= %s ORDER BY seq",
                                (session_id, start, end if end is not None else 2 ** 31 - 1)).fetchall()
        return iter([decode_envelope(*r) for r in rows])

    def load(self, session_id: str) -> list[Union[Envelope, Corrupt]]:
        """Read a session's whole log from the database and keep it as this process's copy (a
        worker taking the session over)."""
        self._cache.pop(session_id, None)
        items = list(self.read_range(session_id))
        if all(isinstance(e, Envelope) for e in items):
            self._cache[session_id] = items  # type: ignore[assignment]
        return items

    def telemetry(self, session_id: str) -> list[dict]:
        check_session_id(session_id)
        self.flush()
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT record FROM turnflow_telemetry WHERE session_id = %s ORDER BY id",
                                (session_id,)).fetchall()
        return [json.loads(t) for (t,) in rows]

    def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        with self._cond:
            self._cond.notify_all()  # queued items whose end-of-tick wake-up has not run yet
            while self._inflight:
                self._cond.wait()

    def _settle_all(self, outcomes: list) -> None:
        """On the event loop: record each committed envelope in this process's log copy, in
        commit order, then resolve the futures the hub awaits (a refused item's raises)."""
        for fut, exc, env in outcomes:
            if exc is None and env is not None:
                self._remember(env)
            if fut.done():
                continue
            if exc is None:
                fut.set_result(None)
            else:
                fut.set_exception(exc)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            committer = self._committer
        if committer is not None:
            committer.join(timeout=30)
        try:
            self.pool.close()
        except Exception:  # pragma: no cover
            pass




def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
