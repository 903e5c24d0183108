"""`PostgresStore`: the write-ahead log on PostgreSQL, shared by any number of hubs (processes,
machines). Needs the optional extra `turnflow[postgres]` (psycopg 3 and psycopg_pool).

Same log, same records and the same durability promise as `SQLiteStore`: every envelope is
one row holding its JSON record and a CRC-32 over `session_id`, `seq` and the record, and
it is committed before the hub folds or delivers it. What differs:

- **Durability** (`durability=`, as for SQLite): "process" by default, "full" on request (see
  the class).
- **Group commit.** As with SQLite, the hub hands one event-loop tick's envelopes, new
  sessions and telemetry to `commit_group` (contract.py), which queues them for one committer thread,
  which writes everything queued meanwhile — several ticks' groups, telemetry, the results of
  finished batch tasks — in ONE statement (its own transaction, one round trip) and resolves
  each group's future on the hub's event loop. The hub folds a group only then, so a post
  returns after its envelope is committed; many concurrent sessions share each commit.
- **Several writers.** Global sequence numbers (the envelope ids) come from a PostgreSQL
  sequence in blocks of `GSEQ_BLOCK`, so they are unique across processes and increase within
  a process; a session's log is ordered by its own `seq`, and `(session_id, seq)` is unique.
  When the store belongs to a batch worker (`worker` set), it composes that worker's
  `TaskLeases` (postgres_leases.py) and each commit also checks — in the same statement,
  share-locking the task rows — that this worker still holds the lease of
  every session it writes: a worker whose task was taken over can never append to it again,
  so two writers never interleave one session's log (docs/scale.md). Sessions refused so are
  named in the group's result; their posters get `LeaseLost`, the others are not affected.
- Schema: tables `turnflow_schema` (the schema version), `turnflow_sessions`,
  `turnflow_envelopes`, `turnflow_telemetry` and `turnflow_tasks` (batch runs). All SQL is
  parameterised.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections import deque
from types import ModuleType
from typing import Any, Container, Iterator, Optional, Sequence, TypeGuard, Union

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.clock import reconnect_seconds
from turnflow.runtime.errors import StoreError, StoreFailed
from turnflow.runtime.session import check_session_id
from turnflow.runtime.store.contract import POSTGRESQL, Dialect
from turnflow.runtime.store.postgres_leases import TaskLeases
from turnflow.runtime.store.records import (CommitUnits, Corrupt, EndRow, EnvelopeRow, LogSummary, Refusals, SessionEnds, SessionRow,
                                            TelemetryRow, decode_envelope, decode_session, json_text)
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
    # the envelopes that add a participant (filling `turnflow_session_agents` on an older store)
    "CREATE INDEX IF NOT EXISTS turnflow_envelopes_membership ON turnflow_envelopes (session_id) "
    "WHERE event_type = 'participant.added'",
    # who has been on each session's roster (`sessions_naming`), written by the group commit with
    # the creation record and each envelope adding a participant; made and filled when an older store
    # is opened for writing (its schema version is unchanged; a store without it is read by a scan)
    "CREATE TABLE IF NOT EXISTS turnflow_session_agents (agent_id text NOT NULL, session_id text NOT NULL, "
    "PRIMARY KEY (agent_id, session_id))",
    "CREATE INDEX IF NOT EXISTS turnflow_session_agents_by_session ON turnflow_session_agents (session_id)",
    # each ended session's end record (what listing its channel reads instead of its log), written by
    # the group commit once the session left the hub's memory; filled lazily by the listings that meet
    # an older one
    "CREATE TABLE IF NOT EXISTS turnflow_session_ends (session_id text PRIMARY KEY, record text NOT NULL, "
    "crc bigint NOT NULL)",
]

# One statement per group commit (autocommit: the statement is its transaction, one round trip).
# Rows travel as one JSON array per kind (`json_to_recordset`): far cheaper to encode and to
# decode than one array parameter per column. The CTEs run on one snapshot: `s_ok` creates the
# session records, `e_ok` writes the envelopes in allocation order (their `n` is commit order),
# `tel` the telemetry. A batch worker's store adds the lease checks of `TaskLeases` (postgres_leases.py).
_S_IN = "json_to_recordset(%(s)s::json) AS x (sid text, task text, rec text, crc bigint)"
_E_IN = "json_to_recordset(%(e)s::json) AS v (g bigint, sid text, seq integer, ev text, rec text, crc bigint)"
_T_IN = "json_to_recordset(%(t)s::json) AS x (sid text, rec text)"
_N_IN = "json_to_recordset(%(n)s::json) AS x (sid text, rec text, crc bigint)"


# a creation record's participants (x.rec), an empty array where it has none
_ROSTER = ("CASE WHEN json_typeof(x.rec::json -> 'participants') = 'array' THEN x.rec::json -> 'participants' "
           "ELSE '[]'::json END")


@functools.lru_cache(maxsize=None)
def commit_sql(held: bool, sessions: bool, envelopes: bool, telemetry: bool, finishes: bool, ends: bool = False) -> str:
    """The statement of one group commit, holding only the parts for the kinds of rows it carries
    (most carry envelopes alone: a smaller plan to start, ~25 % less server time at 8 rows).
    `held`: a batch worker's store, whose writes `TaskLeases` checks (and which records finishes)."""
    leases = TaskLeases if held else None
    ctes, out = [], []
    if sessions:
        ctes.append(f"s_in AS (SELECT * FROM {_S_IN})")
        ctes += leases.session_ctes() if leases else []
        ctes.append("s_ok AS (INSERT INTO turnflow_sessions (session_id, task_id, record, crc) "
                    f"SELECT x.sid, x.task, x.rec, x.crc FROM s_in x{leases.session_filter() if leases else ''} "
                    "RETURNING session_id)")
        ctes.append(f"s_agents AS (INSERT INTO turnflow_session_agents (agent_id, session_id) SELECT p ->> 'agent_id', "
                    f"x.sid FROM s_in x CROSS JOIN LATERAL json_array_elements({_ROSTER}) p "
                    "WHERE x.sid IN (SELECT session_id FROM s_ok) AND json_typeof(p -> 'agent_id') = 'string' "
                    "ON CONFLICT DO NOTHING)")
        out.append("SELECT 0, session_id FROM s_ok")
    if envelopes:
        # THE INVARIANT (no hole, whatever dies when): a session's rows are written only when they
        # continue its stored log — the statement's rows of that session are contiguous and the
        # first is seq 1 of a stored (or just created) session or follows a stored envelope.
        # PostgreSQL keeps its WAL a prefix, so after a server crash that lost the last commits
        # (`synchronous_commit=off`, or a commit whose answer never came), a writer whose memory is
        # ahead of the log is refused (`TailLost`) instead of leaving a gap: its task goes back to
        # the list and is continued from the log as it is.
        # (a batch worker's seq 1 needs no session lookup: `held` below requires the task bound to
        # the session, and the binding is written in the statement that creates the session)
        first = "TRUE" if leases else ("EXISTS (SELECT 1 FROM turnflow_sessions s WHERE s.session_id = f.sid)"
                                     + (" OR f.sid IN (SELECT session_id FROM s_ok)" if sessions else ""))
        ctes.append(f"e_in AS (SELECT * FROM {_E_IN})")
        ctes.append("e_next AS (SELECT f.sid FROM (SELECT sid, MIN(seq) AS lo, MAX(seq) AS hi, COUNT(*) AS n "
                    "FROM e_in GROUP BY sid) f WHERE f.n = f.hi - f.lo + 1 AND (EXISTS (SELECT 1 FROM "
                    f"turnflow_envelopes p WHERE p.session_id = f.sid AND p.seq = f.lo - 1) OR f.lo = 1 AND ({first})))")
        ctes += leases.envelope_ctes() if leases else []
        where = " WHERE v.sid IN (SELECT sid FROM e_next)"
        if leases:  # and only into sessions whose task this worker holds
            where += " AND (" + leases.envelope_filter(sessions).removeprefix(" WHERE ") + ")"
        ctes.append("e_ok AS (INSERT INTO turnflow_envelopes (gseq, session_id, seq, event_type, record, crc) "
                    f"SELECT v.g, v.sid, v.seq, v.ev, v.rec, v.crc FROM e_in v{where} ORDER BY v.g RETURNING gseq)")
        # (the envelopes adding a participant picked first, OFFSET 0: no other record is parsed)
        ctes.append("e_agents AS (INSERT INTO turnflow_session_agents (agent_id, session_id) SELECT "
                    "a.rec::json -> 'event_data' ->> 'agent_id', a.sid FROM (SELECT v.sid, v.rec FROM e_in v "
                    "WHERE v.ev = 'participant.added' AND v.g IN (SELECT gseq FROM e_ok) OFFSET 0) a "
                    "WHERE json_typeof(a.rec::json -> 'event_data' -> 'agent_id') = 'string' ON CONFLICT DO NOTHING)")
        out.append("SELECT 1, gseq::text FROM e_ok")
        out.append("SELECT 3, sid FROM e_next")
    if telemetry:
        check = leases.telemetry_filter() if leases else ""
        ctes.append(f"tel AS (INSERT INTO turnflow_telemetry (session_id, record) SELECT x.sid, x.rec FROM {_T_IN}{check})")
    if ends:  # (ended sessions' end records: one stored already is replaced, a damaged one mended)
        ctes.append(f"n_ends AS (INSERT INTO turnflow_session_ends (session_id, record, crc) SELECT DISTINCT ON (x.sid) "
                    f"x.sid, x.rec, x.crc FROM {_N_IN} ON CONFLICT (session_id) DO UPDATE SET record = EXCLUDED.record, "
                    "crc = EXCLUDED.crc)")
    if finishes and leases:
        ctes += leases.finish_ctes()
        out.append("SELECT 2, id FROM fin")
    main = " UNION ALL ".join(out) if out else "SELECT 0, NULL::text WHERE false"
    return ("WITH " + ",\n".join(ctes) + "\n" + main) if ctes else main


_COMMIT_HELD = commit_sql(True, True, True, True, True)  # every part (the plan test reads it)


# `summary()`: one row per session — its turns, its first ending envelope as one sortable value
# (10-digit seq, event type, '|', reason: MIN picks the first) and whether it was opened — then
# the sessions counted by how they end (that value split again) and by their turns.
_PER_SESSION = """
SELECT s.session_id AS sid,
       COUNT(e.n) FILTER (WHERE e.event_type IN ('text', 'packet')) AS turns,
       MIN(lpad(e.seq::text, 10, '0') || e.event_type || '|' || COALESCE((e.record::jsonb) -> 'event_data' ->> 'reason', ''))
           FILTER (WHERE e.event_type IN ('session.closed', 'session.expired')) AS term,
       COALESCE(MAX(CASE WHEN e.event_type = 'session.opened' THEN 1 ELSE 0 END), 0) AS opened
FROM turnflow_sessions s
LEFT JOIN turnflow_envelopes e ON e.session_id = s.session_id
GROUP BY s.session_id
"""
_ENDS = (f"SELECT substr(term, 11, strpos(term, '|') - 11), substr(term, strpos(term, '|') + 1), opened, COUNT(*) "
         f"FROM ({_PER_SESSION}) per GROUP BY 1, 2, 3")
_TURNS = f"SELECT turns, COUNT(*) FROM ({_PER_SESSION}) per GROUP BY turns ORDER BY turns"


# `sessions_naming`: the sessions whose creation record, or an envelope adding a participant, holds the text
_NAMING = ("SELECT s.session_id FROM turnflow_sessions s WHERE s.session_id IN (SELECT a.session_id FROM "
           "turnflow_session_agents a WHERE a.agent_id = ANY(%(a)s::text[])) ORDER BY s.n")
# `naming_page`: `_NAMING`'s sessions created after one (by number), a page of them; `end_records`:
# the creation and end records of some sessions
_NAMING_PAGE = ("SELECT s.n, s.session_id FROM turnflow_sessions s WHERE s.session_id IN (SELECT a.session_id FROM "
                "turnflow_session_agents a WHERE a.agent_id = ANY(%(a)s::text[])) AND s.n > %(after)s "
                "ORDER BY s.n LIMIT %(count)s")
_END_RECORDS = ("SELECT s.session_id, s.record, s.crc, e.record, e.crc FROM turnflow_sessions s LEFT JOIN "
                "turnflow_session_ends e ON e.session_id = s.session_id WHERE s.session_id = ANY(%(ids)s::text[])")
# (a store opened read-only without that table: the records that hold one of the ids, as records write them)
_HOLDS = "EXISTS (SELECT 1 FROM unnest(%(t)s::text[]) t WHERE strpos(record, t) > 0)"
_NAMING_SCAN = (f"SELECT session_id FROM turnflow_sessions WHERE {_HOLDS} OR session_id IN "
                f"(SELECT session_id FROM turnflow_envelopes WHERE event_type = 'participant.added' AND {_HOLDS}) "
                "ORDER BY n")
# an older store's sessions and roster additions missing from `turnflow_session_agents` (filled at open)
_MISSING_SESSIONS = ("SELECT s.session_id, s.record, s.crc FROM turnflow_sessions s WHERE NOT EXISTS "
                     "(SELECT 1 FROM turnflow_session_agents a WHERE a.session_id = s.session_id)")
_ADDITIONS = "SELECT session_id, seq, record, crc FROM turnflow_envelopes WHERE event_type = 'participant.added'"
# `open_sessions`: the creation records of the sessions whose last envelope is not an ending one
# (one index lookup per session: the logs are not read)
_OPEN = """
SELECT s.session_id, s.record, s.crc FROM turnflow_sessions s
WHERE COALESCE((SELECT e.event_type FROM turnflow_envelopes e WHERE e.session_id = s.session_id
                ORDER BY e.seq DESC LIMIT 1), '') NOT IN ('session.closed', 'session.expired')
ORDER BY s.n
"""

_TABLES = ("turnflow_sessions", "turnflow_envelopes", "turnflow_telemetry", "turnflow_tasks")


def _set_read_only(conn: Any) -> None:
    """Every later transaction of this connection is READ ONLY: the server refuses any write."""
    conn.execute("SELECT set_config('default_transaction_read_only', 'on', false)")


def _import_psycopg() -> tuple[ModuleType, ModuleType]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        from turnflow.extras import pip_install

        raise StoreError(f"a postgresql:// store needs psycopg 3 and psycopg_pool: {pip_install('postgres')}") from None
    return psycopg, psycopg_pool


def redact(url: str) -> str:
    """The URL as messages show it: its password (`user:password@` or `?password=`) and any
    other secret in it masked (`turnflow.masking.mask_url`)."""
    from turnflow.masking import mask_url

    return mask_url(url)


class TailLost(LeaseLost):
    """The session's stored log is shorter than this process's copy (the database server lost
    acknowledged commits, e.g. in a crash at `durability="process"`): nothing was written, and
    the session must be continued from its stored log (a batch worker gives the task back)."""


# (task_id, state, result JSON, session_id or None, its last seq written here or None)
_Finish = tuple[str, str, str, Optional[str], Optional[int]]


class _Unit:
    """One piece of work for the committer: a group (session records, envelopes and telemetry,
    staged by a hub in one event-loop tick), or a task to record as finished. A group's future resolves to {session_id: refusal} (empty when all of
    it was written); a finish's to whether this worker still held the task."""

    __slots__ = ("sessions", "rows", "envs", "tels", "fin", "future", "loop", "ends")

    def __init__(self, sessions: list[SessionRow], rows: list[EnvelopeRow], envs: list[Envelope],
                 tels: list[TelemetryRow], fin: Optional[_Finish], future: Optional[asyncio.Future[Any]],
                 loop: Optional[asyncio.AbstractEventLoop], ends: Optional[list[EndRow]] = None) -> None:
        self.ends = ends if ends is not None else []  # [(session_id, end record text, crc)]
        self.sessions = sessions  # [(session_id, task_id, record text, crc)]
        self.rows = rows  # envelope rows: [(gseq, session_id, seq, event_type, record text, crc)]
        self.envs = envs  # their envelopes, kept in this process's log copy once committed
        self.tels = tels  # [(session_id, record text)]
        self.fin = fin  # (task_id, state, result text, session_id or None, its last seq written here or None)
        self.future, self.loop = future, loop

    def session_ids(self) -> set[str]:
        return {r[0] for r in self.sessions} | {r[1] for r in self.rows} | {r[0] for r in self.ends}

    def split(self) -> list["_Unit"]:
        """The same work, one unit per session (a failed statement is retried so)."""
        if self.fin is not None or len(self.session_ids()) <= 1:
            return [self]
        parts: dict[str, _Unit] = {}
        for s in self.sessions:
            parts.setdefault(s[0], _Unit([], [], [], [], None, None, None)).sessions.append(s)
        for r, e in zip(self.rows, self.envs):
            u = parts.setdefault(r[1], _Unit([], [], [], [], None, None, None))
            u.rows.append(r)
            u.envs.append(e)
        for t in self.tels:
            parts.setdefault(t[0], _Unit([], [], [], [], None, None, None)).tels.append(t)
        for n in self.ends:
            parts.setdefault(n[0], _Unit([], [], [], [], None, None, None)).ends.append(n)
        return list(parts.values())


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
        self.leases = TaskLeases(worker) if worker is not None else None  # what every commit checks
        self.read_only = read_only
        self.damage: Optional[str] = None  # the server checks its own pages; nothing to report here
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout))) as conn:
                if read_only:
                    _set_read_only(conn)
                    self._check_schema(conn)
                else:
                    self._ensure_schema(conn)
        except psycopg.Error as exc:  # libpq's parse errors quote pieces of the URL: its secrets are masked
            raise StoreError(f"{self.path}: cannot open as a turnflow store: {self._said(exc)}") from None
        sync = "off" if durability == "process" else "on"

        def configure(conn: Any) -> None:
            conn.execute("SELECT set_config('synchronous_commit', %s, false)", (sync,))
            if read_only:
                _set_read_only(conn)

        def check(conn: Any) -> None:
            """A connection the server dropped (restart, pg_terminate_backend) is replaced when taken
            from the pool, instead of failing the claim or read that took it. After a restart every
            pooled connection is dead, and the pool's getconn would find them one at a time, sleeping
            1, 2, 4, ... s between them (its reconnect backoff): when one fails, the pool tests all of
            its idle connections at once (`ConnectionPool.check`, replacing the dead ones)."""
            try:
                psycopg_pool.ConnectionPool.check_connection(conn)
            except Exception:
                self.pool.check()
                raise

        # `timeout`: a connection is waited for 30 s (at most the reconnect window), then PoolTimeout
        self.pool = psycopg_pool.ConnectionPool(url, min_size=1, max_size=max(2, pool_size), open=False,
                                                timeout=min(30.0, reconnect_seconds()),
                                                kwargs={"autocommit": True}, configure=configure, check=check)
        try:
            self.pool.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout:
            raise StoreError(f"{self.path}: cannot connect within {connect_timeout:g} s") from None
        self._gseq_next = 0
        self._gseq_end = 0  # exclusive: the reserved block is [next, end)
        self._gseq_lock = threading.Lock()
        self._sync = sync
        self._queue: deque[_Unit] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._committer: Optional[threading.Thread] = None
        self._conn: Any = None  # the committer thread's own connection
        self._inflight = 0  # queued or being written
        self.reconnect_timeout = reconnect_seconds()  # how long the committer waits for a server that went away
        self.commits = 0  # statements written by the committer (a group commit counts once)
        self.batch_failures: list[str] = []  # why whole statements failed (their work was retried session by session)
        self._cache: dict[str, list[Envelope]] = {}  # committed logs of the sessions this process writes
        self._tails: dict[str, int] = {}  # the last seq this process committed, per session (checked by a finish)

    def _said(self, exc: BaseException) -> str:
        """The first line of a driver error for a message, with the URL's secrets masked wherever
        it quotes them (alone, as libpq's `invalid percent-encoded token: "..."` does)."""
        from turnflow.masking import mask, url_secrets

        return mask(_first_line(exc), url_secrets(self.url))

    # -- schema ---------------------------------------------------------------------------------
    def _ensure_schema(self, conn: Any) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for stmt in _DDL:
                conn.execute(stmt)
            _fill_session_agents(conn)
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
                start = self._next_block()
                self._gseq_next, self._gseq_end = start, start + GSEQ_BLOCK
            value = self._gseq_next
            self._gseq_next += 1
            return value

    def seq_ready(self, n: int = 1) -> bool:
        """Whether `n` envelope numbers (at most a block's) are at hand: `next_global_seq` would not
        ask the server."""
        return self._gseq_end - self._gseq_next >= min(n, GSEQ_BLOCK)

    def take_numbers(self, n: int = 1) -> None:
        """Make `n` envelope numbers ready, asking the server for a fresh block if need be (waiting
        for one that went away, up to the reconnect window; then `StoreFailed`). Called from a
        thread (`Commits.numbers`), so the event loop runs meanwhile."""
        with self._gseq_lock:
            if self._gseq_end - self._gseq_next < min(n, GSEQ_BLOCK):
                start = self._next_block()
                self._gseq_next, self._gseq_end = start, start + GSEQ_BLOCK

    def _next_block(self) -> int:
        """The first number of a fresh block, waiting for a server that went away (the pool's
        connections first, then a connection of its own: the pool's reconnection backs off) up to
        the reconnect window; then `StoreFailed` naming the store, never an agent's failure."""
        psycopg = self._psycopg
        deadline = time.monotonic() + self.reconnect_timeout
        while True:
            try:
                with self.pool.connection(timeout=max(0.1, min(5.0, deadline - time.monotonic()))) as conn:
                    return _take_block(conn)
            except psycopg.OperationalError as exc:
                try:
                    with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                        return _take_block(conn)
                except psycopg.OperationalError:
                    if time.monotonic() >= deadline:
                        raise self._unreachable(exc) from None
                    time.sleep(0.2)

    def last_global_seq(self) -> int:
        with self.pool.connection() as conn:
            row = conn.execute("SELECT MAX(gseq) FROM turnflow_envelopes").fetchone()
        return row[0] or 0

    # -- writing --------------------------------------------------------------------------------
    # The hub drives the group commit (contract.py): `commit_group` hands one event-loop
    # tick's rows to the committer thread, which writes everything queued meanwhile (several
    # ticks' groups, telemetry, finished tasks) in one statement and resolves the group's future
    # on the hub's loop. A session refused for a lost lease is named in the result and none of
    # its rows is written.
    def commit_group(self, units: CommitUnits) -> "asyncio.Future[Refusals]":
        """Queue the group for the committer; the future resolves (on this event loop) to
        {session_id: refusal} once the statement holding it is done."""
        for row in units.sessions:
            self._cache[row[0]] = []  # a new session: this process holds its whole log from now
        return self._enqueue(_Unit(units.sessions, units.rows, units.envelopes, units.telemetry, None, None, None,
                                   units.ends))

    def finish_task(self, task_id: str, state: str, result: dict[str, Any], session_id: Optional[str]) -> asyncio.Future[bool]:
        """Record a task as finished in the next group commit (never in the statement of its
        session's own rows); the future resolves to whether this worker still held the task.
        Needs a running event loop and a worker's store."""
        if self.worker is None:
            raise StoreError("only a batch worker's store records finished tasks")
        last = self._tails.pop(session_id, None) if session_id is not None else None
        unit = _Unit([], [], [], [], (task_id, state, json.dumps(result, sort_keys=True), session_id, last),
                     None, None)
        return self._enqueue(unit)

    def _enqueue(self, unit: _Unit) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        unit.loop = loop
        unit.future = loop.create_future()
        self._submit(unit)
        return unit.future

    def _submit(self, unit: _Unit) -> None:
        with self._cond:
            if self._closing:
                raise StoreError(f"{self.path}: the store is closed")
            if self._committer is None:
                self._committer = threading.Thread(target=self._run_committer, name="turnflow-pg-commit",
                                                   daemon=True)
                self._committer.start()
            self._queue.append(unit)
            self._inflight += 1
            self._cond.notify_all()

    def _run_committer(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._closing:
                        self._cond.wait()
                    if not self._queue:
                        return
                    batch, later = self._take()
                try:
                    self._write(batch)
                finally:
                    with self._cond:
                        self._queue.extendleft(reversed(later))
                        self._inflight -= len(batch)
                        self._cond.notify_all()
        finally:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # pragma: no cover
                    pass

    def _take(self) -> tuple[list[_Unit], list[_Unit]]:
        """Everything queued, except finished tasks whose session has rows in the same statement
        (the statement may not both share-lock and update one task row): those wait for the next."""
        units = list(self._queue)
        self._queue.clear()
        if not any(u.fin is not None for u in units):
            return units, []
        touched: set[str] = set()
        for u in units:
            if u.fin is None:
                touched |= u.session_ids()
        batch = [u for u in units if u.fin is None or u.fin[3] is None or u.fin[3] not in touched]
        later = [u for u in units if not (u.fin is None or u.fin[3] is None or u.fin[3] not in touched)]
        return batch, later

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = self._psycopg.connect(self.url, autocommit=True)
            self._conn.execute("SELECT set_config('synchronous_commit', %s, false)", (self._sync,))
            if self.read_only:
                _set_read_only(self._conn)
        return self._conn

    def _write(self, batch: list[_Unit]) -> None:
        """Commit a batch in one statement. If the statement fails as a whole, every session's
        part is retried in a statement of its own, so one bad envelope fails only its session."""
        psycopg = self._psycopg
        outcomes: dict[int, Any] = {}
        deadline: Optional[float] = None
        try:
            while True:
                try:
                    outcomes = self._commit(self._connection(), batch)
                    break
                except psycopg.OperationalError:
                    if self._conn is not None and not (self._conn.closed or self._conn.broken):
                        raise  # the statement failed, not the connection
                    # the server went away (a crash, a restart, a killed backend): wait for it and
                    # send the batch again — what an earlier commit lost is refused, not skipped over
                    deadline = deadline or time.monotonic() + self.reconnect_timeout
                    if not self._await_server(deadline):
                        raise
        except psycopg.Error as exc:
            outcomes = self._failed(batch, exc, deadline)
        except Exception as exc:  # pragma: no cover - pool closed, connection lost: fail every waiter
            outcomes = {i: StoreError(f"{self.path}: {self._said(exc)}") for i in range(len(batch))}
        # one hand-off per event loop, not one per unit: each call_soon_threadsafe wakes the loop
        settle: dict[asyncio.AbstractEventLoop, list[tuple[_Unit, asyncio.Future[Any], Any]]] = {}
        for i, u in enumerate(batch):
            if u.future is not None and u.loop is not None:
                settle.setdefault(u.loop, []).append((u, u.future, outcomes.get(i)))
        for loop, items in settle.items():
            try:
                loop.call_soon_threadsafe(self._settle_all, items)
            except RuntimeError:  # pragma: no cover - the loop is gone
                pass

    def _failed(self, batch: list[_Unit], exc: BaseException, deadline: Optional[float]) -> dict[int, Any]:
        """The outcomes of a batch whose statement failed: each session's part retried on its own,
        unless the server stayed away past the reconnect window (then every unit: `StoreFailed`)."""
        self._drop_broken()
        if deadline is not None and time.monotonic() >= deadline:  # no retries against a server that is gone
            return {i: self._unreachable(exc) for i in range(len(batch))}
        parts = [(i, p) for i, u in enumerate(batch) for p in u.split()]
        if len(parts) == 1:
            return {0: self._failure(batch[0], exc)}
        self.batch_failures.append(_first_line(exc))
        return self._retry(batch, parts)

    def _retry(self, batch: list[_Unit], parts: list[tuple[int, _Unit]]) -> dict[int, Any]:
        psycopg = self._psycopg
        outcomes: dict[int, Any] = {}
        for i, part in parts:
            u = batch[i]
            try:
                got = self._commit(self._connection(), [part])[0]
            except psycopg.Error as one:
                self._drop_broken()
                got = None if self._already_written(part) else self._failure(part, one)
            if u.fin is not None:
                outcomes[i] = got
            elif isinstance(got, BaseException):  # this session's rows failed: only its posts fail
                prev = outcomes.setdefault(i, {})
                if isinstance(prev, dict):
                    for sid in part.session_ids():
                        prev[sid] = got
            else:
                prev = outcomes.setdefault(i, {})
                if isinstance(prev, dict) and got:
                    prev.update(got)
        return outcomes

    def _unreachable(self, exc: BaseException) -> StoreFailed:
        """The server away past the reconnect window: the store's failure, never a session's."""
        return StoreFailed(f"{self.path}: the database could not be reached for {self.reconnect_timeout:g} s "
                           f"({_first_line(exc)}); the tasks not finished stay to do")

    def _failure(self, unit: _Unit, exc: BaseException) -> StoreError:
        if isinstance(exc, self._psycopg.OperationalError) and (self._conn is None or self._conn.closed
                                                                 or self._conn.broken):
            return self._unreachable(exc)
        sids = sorted(unit.session_ids())
        what = f"session {sids[0]}" if len(sids) == 1 else f"{len(sids)} sessions" if sids else self.path
        return StoreError(f"{what}: cannot write: {_first_line(exc)}")

    def _await_server(self, deadline: float) -> bool:
        """After a lost connection: reconnect (until `deadline`) and take a fresh block of envelope
        ids (a server crash may have lost the sequence's last advance, and with it this block)."""
        self._conn = None
        with self._gseq_lock:
            self._gseq_end = self._gseq_next
        while True:
            try:
                self._connection()
                return True
            except self._psycopg.OperationalError:
                self._conn = None
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)  # polling a server that is restarting

    def _drop_broken(self) -> None:
        if self._conn is not None and (self._conn.closed or self._conn.broken):
            self._conn = None

    def _already_written(self, unit: _Unit) -> bool:
        """Whether a retried unit is in the database already (its statement committed, then the
        connection failed on the way back): then the retry is a success, not a failure."""
        if unit.fin is not None or (not unit.sessions and not unit.rows):
            return False
        try:
            with self.pool.connection() as conn:
                for sid, *_ in unit.sessions:
                    if conn.execute("SELECT 1 FROM turnflow_sessions WHERE session_id = %s", (sid,)).fetchone() is None:
                        return False
                if unit.rows:  # the very rows: the same number, session, seq and checksum
                    n: int = conn.execute("SELECT COUNT(*) FROM turnflow_envelopes e JOIN unnest(%s::bigint[], "
                                     "%s::text[], %s::integer[], %s::bigint[]) AS v (g, sid, seq, crc) "
                                     "ON e.gseq = v.g AND e.session_id = v.sid AND e.seq = v.seq AND e.crc = v.crc",
                                     [[r[i] for r in unit.rows] for i in (0, 1, 2, 5)]).fetchone()[0]
                    return n == len(unit.rows)
                return True
        except self._psycopg.Error:
            return False

    def _commit(self, conn: Any, batch: list[_Unit]) -> dict[int, Any]:
        """One statement for the whole batch (its own transaction). Returns each unit's outcome
        by index: a group's {session_id: LeaseLost} for the sessions refused, a finish's bool."""
        sessions = [{"sid": r[0], "task": r[1], "rec": r[2], "crc": r[3]} for u in batch for r in u.sessions]
        rows = [{"g": r[0], "sid": r[1], "seq": r[2], "ev": r[3], "rec": r[4], "crc": r[5]}
                for u in batch for r in u.rows]
        tels = [{"sid": r[0], "rec": r[1]} for u in batch for r in u.tels]
        fins = [{"id": u.fin[0], "state": u.fin[1], "result": u.fin[2], "sid": u.fin[3], "last": u.fin[4]}
                for u in batch if u.fin is not None]
        params: dict[str, Any] = {"s": json.dumps(sessions), "e": json.dumps(rows), "t": json.dumps(tels)}
        ends = [{"sid": r[0], "rec": r[1], "crc": r[2]} for u in batch for r in u.ends]
        if ends:
            params["n"] = json.dumps(ends)
        leases = self.leases
        if leases is not None:
            params.update(leases.params(sessions, rows, tels, fins))
        sql = commit_sql(leases is not None, bool(sessions), bool(rows), bool(tels), bool(fins) and leases is not None,
                         bool(ends))
        written: tuple[set[str], set[str], set[str], set[str]] = (set(), set(), set(), set())
        for kind, key in conn.execute(sql, params):
            written[kind].add(key)
        self.commits += 1
        made, envs, finished, follows = written
        outcomes: dict[int, Any] = {}
        for i, u in enumerate(batch):
            if u.fin is not None:
                outcomes[i] = u.fin[0] in finished
                continue
            refused = _refusals(u, made, envs, follows)
            outcomes[i] = refused
        return outcomes

    def _remember(self, env: Envelope) -> None:
        self._tails[env.session_id] = env.seq
        log = self._cache.get(env.session_id)
        if log is not None and env.seq == len(log) + 1:
            log.append(env)
        else:
            self._cache.pop(env.session_id, None)

    def forget(self, session_id: str) -> None:
        """Drop this process's copy of a session's log (the batch runner calls it when a task ends;
        a hub that lets its ended sessions go, when one ends). Its last seq is kept for a batch
        worker until the task's finish reads it."""
        self._cache.pop(session_id, None)
        if self.worker is None:  # (no task finish will ask for it)
            self._tails.pop(session_id, None)

    def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        with self._cond:
            while self._inflight:
                self._cond.wait()

    def _settle_all(self, items: list[tuple[_Unit, asyncio.Future[Any], Any]]) -> None:
        """On the event loop: record each committed envelope in this process's log copy, in
        commit order, then resolve the futures (a group's with its refusals, a failure raises)."""
        for unit, fut, outcome in items:
            if isinstance(outcome, BaseException):
                if not fut.done():
                    fut.set_exception(outcome)
                continue
            if unit.fin is None:
                refused = outcome or {}
                for env in unit.envs:
                    if env.session_id not in refused:
                        self._remember(env)
                for sid in refused:
                    self._cache.pop(sid, None)
                    self._tails.pop(sid, None)
                if not fut.done():
                    fut.set_result(refused)
            elif not fut.done():
                fut.set_result(bool(outcome))

    # -- reading --------------------------------------------------------------------------------
    @property
    def dialect(self) -> Dialect:
        return POSTGRESQL

    def summary(self) -> LogSummary:
        with self.pool.connection() as conn:
            ends = [SessionEnds(by, reason, bool(opened), int(n)) for by, reason, opened, n in conn.execute(_ENDS)]
            turns = [(int(t), int(n)) for t, n in conn.execute(_TURNS)]
            envelopes = int(conn.execute("SELECT COUNT(*) FROM turnflow_envelopes").fetchone()[0])
            tasks = None
            if conn.execute("SELECT to_regclass('turnflow_tasks') IS NOT NULL").fetchone()[0]:
                tasks = {str(s): int(n) for s, n in conn.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state")}
        return LogSummary(POSTGRESQL.name, envelopes, ends, turns, tasks)

    def session_count(self) -> int:
        with self.pool.connection() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM turnflow_sessions").fetchone()[0])

    def sessions_ever_created(self) -> Optional[int]:
        """(Not tracked: PostgreSQL's own log keeps committed rows.)"""
        return None

    def sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        return self._session_rows("SELECT session_id, record, crc FROM turnflow_sessions ORDER BY n")

    def open_sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        """`sessions()` without those whose log ends with `session.closed` or `session.expired`."""
        return self._session_rows(_OPEN)

    def _session_rows(self, query: str) -> Iterator[Union[dict[str, Any], Corrupt]]:
        with self.pool.connection() as conn, conn.transaction():
            with conn.cursor(name="turnflow_sessions_scan") as cur:
                cur.itersize = 512
                cur.execute(query)
                for sid, text, crc in cur:
                    yield decode_session(sid, text, crc)

    def sessions_naming(self, agent_ids: Sequence[str]) -> Iterator[str]:
        """The ids (creation order, streamed) of the sessions that have had one of `agent_ids` on
        their roster (at creation, or added since)."""
        with self.pool.connection() as conn, conn.transaction():
            table = conn.execute("SELECT to_regclass('turnflow_session_agents') IS NOT NULL").fetchone()[0]
            with conn.cursor(name="turnflow_sessions_naming") as cur:
                cur.itersize = 256
                if table:
                    cur.execute(_NAMING, {"a": list(agent_ids)})
                else:  # (a store opened read-only that no writer of this version has opened)
                    cur.execute(_NAMING_SCAN, {"t": [json_text(a) for a in agent_ids]})
                for (sid,) in cur:
                    yield sid

    def naming_page(self, agent_ids: Sequence[str], after: int, count: int) -> Optional[list[tuple[Any, ...]]]:
        """Up to `count` of `sessions_naming`'s sessions created after the one numbered `after`
        (0: from the first), as (number, id), one query; None for a store without end records."""
        with self.pool.connection() as conn:
            tables = conn.execute("SELECT to_regclass('turnflow_session_agents') IS NOT NULL AND "
                                  "to_regclass('turnflow_session_ends') IS NOT NULL").fetchone()[0]
            if not tables:
                return None
            rows: list[tuple[Any, ...]] = conn.execute(
                _NAMING_PAGE, {"a": list(agent_ids), "after": after, "count": count}).fetchall()
        return rows

    def end_records(self, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """(id, creation record, its checksum, end record or None, its checksum or None) of each of
        `session_ids` the store holds, one query."""
        with self.pool.connection() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(_END_RECORDS, {"ids": list(session_ids)}).fetchall()
        return rows

    def session_record(self, session_id: str) -> Optional[Union[dict[str, Any], Corrupt]]:
        check_session_id(session_id)
        with self.pool.connection() as conn:
            row = conn.execute("SELECT session_id, record, crc FROM turnflow_sessions WHERE session_id = %s",
                               (session_id,)).fetchone()
        return None if row is None else decode_session(*row)

    def stream(self, only: Optional[Container[str]] = None) -> Iterator[Union[Envelope, Corrupt]]:
        """Every envelope in commit order (each session's in `seq` order), streamed through a
        server-side cursor: memory stays bounded. With `only`, those of the sessions it holds
        (the others' records are not decoded)."""
        with self.pool.connection() as conn, conn.transaction():
            with conn.cursor(name="turnflow_envelopes_scan") as cur:
                cur.itersize = 1024
                cur.execute("SELECT session_id, seq, record, crc FROM turnflow_envelopes ORDER BY n")
                for sid, seq, text, crc in cur:
                    if only is None or sid in only:
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
        if _all_envelopes(items):
            self._cache[session_id] = items
        return items

    def telemetry(self, session_id: str) -> list[dict[str, Any]]:
        check_session_id(session_id)
        self.flush()
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT record FROM turnflow_telemetry WHERE session_id = %s ORDER BY id",
                                (session_id,)).fetchall()
        return [json.loads(t) for (t,) in rows]

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




def _take_block(conn: Any) -> int:
    """The first number of a block of GSEQ_BLOCK, its taking durable before it is used. PostgreSQL
    WAL-logs a sequence's advance without flushing it (the commit of whatever uses the value
    usually does, and with `synchronous_commit=off` nothing does): a crash could set the sequence
    back and give the same block to the next writer while this one still holds it, and every
    envelope of both would then collide on `gseq`. So the block is taken in a transaction that
    commits synchronously and has an id (`txid_current`), whose commit record is flushed after the
    sequence's WAL, once per GSEQ_BLOCK envelopes."""
    with conn.transaction():
        conn.execute("SET LOCAL synchronous_commit TO on")
        return int(conn.execute("SELECT nextval('turnflow_gseq'), txid_current()").fetchone()[0])


def _fill_session_agents(conn: Any) -> None:
    """What `turnflow_session_agents` lacks (an older store, or one an older version wrote to): the
    rosters of the sessions without a row, and every roster addition (records failing their
    checksum skipped: reading them reports them)."""
    rows: list[tuple[str, str]] = []
    for sid, text, crc in conn.execute(_MISSING_SESSIONS):
        rec = decode_session(sid, text, crc)
        parts = rec.get("participants") if isinstance(rec, dict) else None
        rows += [(p["agent_id"], sid) for p in parts if isinstance(p, dict) and isinstance(p.get("agent_id"), str)] \
            if isinstance(parts, list) else []
    for sid, seq, text, crc in conn.execute(_ADDITIONS):
        env = decode_envelope(sid, seq, text, crc)
        who = env.event_data.get("agent_id") if isinstance(env, Envelope) else None
        if isinstance(who, str):
            rows.append((who, sid))
    if rows:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO turnflow_session_agents (agent_id, session_id) VALUES (%s, %s) "
                            "ON CONFLICT DO NOTHING", rows)


def _refusals(u: _Unit, made: set[str], envs: set[str], follows: set[str]) -> Refusals:
    """A group's sessions the statement did not write, each with why: a lost lease, or a stored
    log that ends before the group's first envelope (`follows`: the sessions it continues)."""
    refused: dict[str, BaseException] = {}
    for s in u.sessions:
        if s[0] not in made:
            refused[s[0]] = LeaseLost(f"task {s[1]!r}: this worker no longer holds its lease "
                                      "(or it already has a session); the session was not created")
    for r in u.rows:
        if str(r[0]) in envs or r[1] in refused:
            continue
        if r[1] not in follows:
            refused[r[1]] = TailLost(f"session {r[1]}: its stored log ends before seq {r[2]} (the database "
                                     "server lost its last commits, e.g. in a crash); the envelope was not "
                                     "written, the session is continued from its stored log")
        else:
            refused[r[1]] = LeaseLost(f"session {r[1]}: this worker lost the task's lease "
                                      "(another worker took it over); the envelope was not written")
    return refused


def _all_envelopes(items: list[Union[Envelope, Corrupt]]) -> TypeGuard[list[Envelope]]:
    return all(isinstance(e, Envelope) for e in items)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
