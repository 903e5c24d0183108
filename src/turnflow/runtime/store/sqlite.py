"""The write-ahead log behind a small `Store` interface (docs/runtime.md, "Write-ahead log, durability and hydrate").

`SQLiteStore` is the embedded default: one SQLite database per hub, WAL journal mode.
Every envelope is one row holding its JSON record and a CRC-32 over
`session_id`, `seq` and the record, written (and committed) before the hub folds or
delivers it. Reading back checks the checksum and the per-session sequence; a record
that fails is yielded as a `Corrupt` item (session id + sequence number), never as an
envelope.

Durability (also in docs/runtime.md): with the default `durability="process"`
(`synchronous=NORMAL`) every envelope whose append returned survives a crash or `kill -9`
of the process; after a power loss or OS crash the log is still a consistent committed
prefix but the most recent envelopes may be missing. `durability="full"`
(`synchronous=FULL`, an fsync per commit) also keeps every returned envelope across power loss.
All SQL is parameterised; session ids are validated before they reach the database.

Writing follows the store contract (contract.py): the hub encodes records into rows
(`session_row`, `envelope_row` in records.py: the same record format on every engine) and hands one
event-loop tick's rows to `commit_group`, which writes them in one transaction (one fsync for the
group with `durability="full"`) and returns a future that is already done; no post returns before
its group is committed. New sessions' creation records go in the same transaction, before their
envelopes, so opening thousands of sessions at once costs one transaction per tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from typing import Any, Container, Iterator, Optional, Sequence, Union

from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED as _PARTICIPANT_ADDED
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.errors import StoreError, StoreFailed
from turnflow.runtime.session import check_session_id
from turnflow.runtime.store.contract import SQLITE, Dialect
from turnflow.runtime.store.records import (CommitUnits, Corrupt, EndRow, EnvelopeRow, LogSummary, Refusals, SessionEnds, SessionRow,
                                            TelemetryRow, checksum, decode_envelope, decode_session, json_text)
from turnflow.runtime.store.sqlite_lock import NOBLOCK as _NOBLOCK
from turnflow.runtime.store.sqlite_lock import WriterLock as _WriterLock

FORMAT = "turnflow-wal/1"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (n INTEGER PRIMARY KEY, session_id TEXT NOT NULL UNIQUE,
                                     record TEXT NOT NULL, crc INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS envelopes (gseq INTEGER PRIMARY KEY, session_id TEXT NOT NULL,
                                      seq INTEGER NOT NULL, record TEXT NOT NULL, crc INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS envelopes_by_session ON envelopes (session_id, seq);
CREATE TABLE IF NOT EXISTS telemetry (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, record TEXT NOT NULL);
"""


_TABLES = {"meta", "sessions", "envelopes", "telemetry"}

# who has been on each session's roster (`sessions_naming`): a table of (agent id, session id),
# written in the same transaction as the session's creation record (its participants, taken from
# the record by SQLite) and as each envelope adding a participant (the row's event type compared in
# Python: nothing is parsed per other envelope). Made when a store is opened for writing and filled
# then with what it lacks (an older store, or one an older version wrote to: the sessions without
# a row, and the envelopes adding a participant that the open's check reads anyway). The store's
# format is unchanged; a store without the table is read the same way, by a scan.
# The rows are written ROSTER_BATCH sessions at a time, in the transaction of the group commit that
# reaches that many (and before `sessions_naming` reads the table, and at close): the table is
# keyed by agent, so each group's rows would land on as many pages as the group has agents, ~30 %
# more page writes for the log (bench/sqlite_write_path.py --roster). What a crash loses of them
# is filled again at the next open, as for an older store.
ROSTER_BATCH = 256
_AGENTS_TABLE = ("CREATE TABLE IF NOT EXISTS session_agents (agent_id TEXT NOT NULL, session_id TEXT NOT NULL, "
                 "PRIMARY KEY (agent_id, session_id)) WITHOUT ROWID")
_PARTICIPANTS = ("INSERT OR IGNORE INTO session_agents (agent_id, session_id) SELECT json_extract(p.value, '$.agent_id'), "
                 "{sid} FROM {source} json_each(CASE WHEN json_valid({rec}) THEN {rec} ELSE '{{}}' END, '$.participants') p "
                 "WHERE json_type(p.value, '$.agent_id') = 'text'{more}")
_AGENTS_OF = _PARTICIPANTS.format(sid="?1", source="", rec="?2", more="")  # (session id, creation record)
_AGENTS_MISSING = _PARTICIPANTS.format(sid="s.session_id", source="sessions s,", rec="s.record",
                                       more=" AND s.session_id NOT IN (SELECT session_id FROM session_agents)")
_AGENT_ADDED = ("INSERT OR IGNORE INTO session_agents (agent_id, session_id) SELECT json_extract(?2, '$.event_data.agent_id'), "
                "?1 WHERE json_valid(?2) AND json_type(?2, '$.event_data.agent_id') = 'text'")  # (session id, record)
_ADDED_TEXT = '"event_type":"participant.added"'  # in the record of each (records.py writes it so)
# `sessions_naming` (?1: a JSON array of agent ids): the table's rows of those agents, then their
# sessions by id, sorted by creation (CROSS JOIN: in that order, not the sessions table scanned)
_NAMING = ("SELECT s.session_id FROM (SELECT DISTINCT a.session_id FROM json_each(?1) t CROSS JOIN session_agents a "
           "ON a.agent_id = t.value) m CROSS JOIN sessions s ON s.session_id = m.session_id ORDER BY s.n")
# each ended session's end record (`Hub.flush_ends`, hub/hydrate.py `end_record`: what its end settled
# that its creation record does not say) and its checksum (`checksum(session_id, -1, record)`), so
# that listing an agent's channels reads two records per ended session, not its log. Written by the
# group commit (`CommitUnits.ends`), which the hub hands them to ENDS_BATCH at a time once their
# sessions have ended and left its memory; made when a store is opened for writing, and filled
# lazily: a listing that meets an ended session without one reads it back and hands it over then.
_ENDS_TABLE = ("CREATE TABLE IF NOT EXISTS session_ends (session_id TEXT PRIMARY KEY, record TEXT NOT NULL, "
               "crc INTEGER NOT NULL) WITHOUT ROWID")
# `naming_page` (?1: a JSON array of agent ids, ?2: the creation number after which, ?3: how many):
# `_NAMING`'s sessions with their numbers; `end_records` (?1: a JSON array of session ids): their
# creation and end records
_NAMING_PAGE = ("SELECT s.n, s.session_id FROM (SELECT DISTINCT a.session_id FROM json_each(?1) t CROSS JOIN "
                "session_agents a ON a.agent_id = t.value) m CROSS JOIN sessions s ON s.session_id = m.session_id "
                "WHERE s.n > ?2 ORDER BY s.n LIMIT ?3")
_END_RECORDS = ("SELECT s.session_id, s.record, s.crc, e.record, e.crc FROM json_each(?1) t CROSS JOIN sessions s "
                "ON s.session_id = t.value LEFT JOIN session_ends e ON e.session_id = s.session_id")
# (a store without the table: the records that hold one of the ids, as records write them, ?2)
_HOLDS = "EXISTS (SELECT 1 FROM json_each(?2) t WHERE instr(record, t.value) > 0)"
_NAMING_SCAN = (f"SELECT session_id FROM sessions WHERE {_HOLDS} OR session_id IN (SELECT session_id FROM envelopes "
                f"WHERE instr(record, '{_ADDED_TEXT}') > 0 AND {_HOLDS}) ORDER BY n")
# `open_sessions`: the creation records of the sessions whose last envelope is not an ending one
# (one index lookup and one record's event type per session: the logs are not read)
_OPEN = """
SELECT s.session_id, s.record, s.crc FROM sessions s
WHERE COALESCE((SELECT CASE WHEN json_valid(e.record) THEN json_extract(e.record, '$.event_type') END
                FROM envelopes e WHERE e.session_id = s.session_id ORDER BY e.seq DESC LIMIT 1), '')
      NOT IN ('session.closed', 'session.expired')
ORDER BY s.n
"""


# `summary()`: one row per session — its turns, its first ending envelope as one sortable value
# (10-digit seq, event type, '|', reason: MIN picks the first) and whether it was opened — then
# the sessions counted by how they end (that value split again) and by their turns.
_PER_SESSION = """
SELECT s.session_id AS sid,
       COALESCE(SUM(CASE WHEN e.et IN ('text', 'packet') THEN 1 ELSE 0 END), 0) AS turns,
       MIN(CASE WHEN e.et IN ('session.closed', 'session.expired')
                THEN printf('%010d', e.seq) || e.et || '|' || COALESCE(json_extract(e.record, '$.event_data.reason'), '')
           END) AS term,
       COALESCE(MAX(CASE WHEN e.et = 'session.opened' THEN 1 ELSE 0 END), 0) AS opened
FROM sessions s
LEFT JOIN (SELECT session_id, seq, record, json_extract(record, '$.event_type') AS et FROM envelopes) e
       ON e.session_id = s.session_id
GROUP BY s.session_id
"""
_ENDS = (f"SELECT substr(term, 11, instr(term, '|') - 11), substr(term, instr(term, '|') + 1), opened, COUNT(*) "
         f"FROM ({_PER_SESSION}) per GROUP BY 1, 2, 3")
_TURNS = f"SELECT turns, COUNT(*) FROM ({_PER_SESSION}) per GROUP BY turns ORDER BY turns"


def _text(data: bytes) -> str:
    """A TEXT column as str; bytes that are not UTF-8 (a damaged file) are kept as escapes, so
    the record fails its checksum (`Corrupt`) instead of the read raising."""
    return data.decode("utf-8", "surrogateescape")


class SQLiteStore:
    """Embedded WAL store. `path` may be ":memory:" for tests that need no durability.

    Opening checks that the file is a turnflow store before changing anything: an empty
    database (or a new file) becomes one; a SQLite file with other tables, or without our
    format row, is refused (`StoreError`) and left untouched; so is a file that is not SQLite.

    One writer at a time: a writable store takes an exclusive lock on `PATH.lock` (which also
    holds the writer's pid and how many sessions the store has ever held); a second writer gets
    `StoreError("... store in use by pid N ...")`. The lock goes away with the process.

    `read_only=True` (what `turnflow inspect` uses) opens the file with SQLite's `mode=ro`: no
    table is created, the journal mode is not switched, nothing is checkpointed and the `-wal`
    file is never deleted; it takes no lock, so it may read a store a `run` is writing."""

    def __init__(self, path: str, durability: str = "process", *, read_only: bool = False) -> None:
        if durability not in ("process", "full"):
            raise StoreError(f"durability must be 'process' or 'full', got {durability!r}")
        self.path = path
        self.read_only = read_only
        self._lock: Optional[_WriterLock] = None
        self._gseq: Optional[int] = None  # the last envelope number given out (read from the log at first use)
        # `session_agents` rows not written yet: (session id, creation record), (session id, record adding one)
        self._roster: list[tuple[str, str]] = []
        self._roster_added: list[tuple[str, str]] = []
        self.batch_failures: list[str] = []  # (PostgreSQL's; a SQLite group is one transaction, never retried)
        self.damage: Optional[str] = None  # what PRAGMA quick_check found (read-only opens)
        if read_only:
            self._open_read_only(path)
            return
        if path != ":memory:" and not path.startswith("file:"):
            import os

            if os.path.isdir(path):
                raise StoreError(f"{path}: cannot open as a turnflow store: it is a directory")
            why = _unwritable(path)
            if why is not None:
                raise StoreError(f"{path}: the store cannot be written ({why}); nothing was written"
                                 + (f". `turnflow inspect {path}` reads it" if os.path.isfile(path) else ""))
            self._lock = _WriterLock(path)
        try:
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.text_factory = _text  # bytes that are not UTF-8 fail the record's checksum, not the read
            existing = self._check_format(empty_ok=True)
            added: list[tuple[str, str]] = []  # the envelopes adding a participant, found by the check
            if existing:  # a damaged file is refused before anything is written to it
                problem = self._damage() or self._records_damage(added)
                if problem is not None:
                    raise StoreError(f"{path}: the store is damaged ({problem}); nothing was written. "
                                     "`turnflow inspect` shows what is still readable")
                lock = self._lock
                lost = self._lost(lock.recorded) if lock is not None else None
                if lost is not None and lock is not None:
                    raise StoreError(f"{path}: {lost}; nothing was written (tasks it reported done would run "
                                     f"again). Put the -wal file back if you still have it; `turnflow inspect "
                                     f"{path}` shows what survived; to carry on from that, delete {lock.file}")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
            # the (session_id, seq) index takes inserts at random places when many sessions run at
            # once: a 16 MiB page cache (SQLite's default is 2 MiB) keeps its pages in memory
            self.db.execute("PRAGMA cache_size=-16384")
            if not existing:
                self.db.executescript(_SCHEMA)
                self.db.execute("INSERT INTO meta (key, value) VALUES ('format', ?)", (FORMAT,))
            self._roster_changes(added)
            if self._lock is not None:
                self._lock.start(self._identity(), *self._held(), durability == "full")
        except sqlite3.DatabaseError as exc:
            self.close()  # SQLite first, then the locks (sqlite_lock.py)
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_CORRUPT":
                raise StoreError(f"{path}: the store is damaged ({exc}); nothing was written. "
                                 "`turnflow inspect` shows what is still readable") from None
            raise StoreError(f"{path}: cannot open as a turnflow store: {exc}") from None
        except BaseException:
            self.close()
            raise

    def _roster_changes(self, added: list[tuple[str, str]]) -> None:
        """The table of who has been on each session's roster (`sessions_naming`), made if missing,
        with what it lacks: the sessions without a row, the envelopes adding a participant
        (`added`: those the open's check found)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(_AGENTS_TABLE)
            self.db.execute(_ENDS_TABLE)
            self.db.execute(_AGENTS_MISSING)
            self.db.executemany(_AGENT_ADDED, added)
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _open_read_only(self, path: str) -> None:
        import os
        from urllib.parse import quote

        if not os.path.isfile(path):
            raise StoreError(f"{path}: no such store file")
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
        try:
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA query_only=1")
            self.db.text_factory = _text
            try:
                existing = self._check_format(empty_ok=False)
            except sqlite3.OperationalError as exc:  # SQLite could not make the -shm file (a read-only folder)?
                self._reopen_immutable(path, uri, exc)
                existing = self._check_format(empty_ok=False)
            if not existing:
                raise StoreError(f"{path}: not a turnflow store (it is an empty database)")
            # a live writer has the -wal open (and may be rewriting the mark): check a store at rest only
            mark = {} if _WriterLock.in_use(path) else _WriterLock.mark(path)
            # inspect reports it (exit 2) and shows what is readable
            self.damage = self._damage() or self._lost(mark) or self._meta_damage() or self._tasks_damage()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(f"{path}: cannot open as a turnflow store: {exc}") from None
        except BaseException:
            self.close()
            raise

    def _reopen_immutable(self, path: str, uri: str, exc: sqlite3.OperationalError) -> None:
        """Open a store in a read-only folder (no `-shm` file can be made there) as immutable, which
        SQLite may do only when there is no `-wal` file to read (it would ignore it)."""
        import os

        text = str(exc)
        if "readonly" not in text and "unable to open" not in text:
            raise exc
        if _wal_bytes(path):
            raise StoreError(f"{path}: its -wal file holds records SQLite reads only where it can make a "
                             f"{os.path.basename(path)}-shm file, and the folder is read-only: copy the store "
                             "and its -wal file to a writable folder and inspect the copy") from None
        self.db.close()
        self.db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        self.db.text_factory = _text

    def _damage(self) -> Optional[str]:
        """What `PRAGMA quick_check` finds wrong with the file (its first line), or None."""
        try:
            rows = self.db.execute("PRAGMA quick_check(5)").fetchall()
        except sqlite3.DatabaseError as exc:
            return str(exc)
        lines = [str(r[0]) for r in rows]
        return None if lines == ["ok"] else "; ".join(lines)[:300]

    def _meta_damage(self) -> Optional[str]:
        """A meta row that is not turnflow's (a damaged key or value), or None."""
        for key, value in self.db.execute("SELECT key, value FROM meta"):
            if key not in ("format", "store_id") or not isinstance(value, str):
                return f"a meta row {str(key)[:40]!r} that is not turnflow's"
        return None

    def _tasks_damage(self) -> Optional[str]:
        """The first task-list row (`run --tasks`) that does not decode, or None (no task list)."""
        from turnflow.runtime.tasks import TASK_ROW_COLUMNS, task_row_damage

        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turnflow_tasks'").fetchone():
            for row in self.db.execute(f"SELECT {TASK_ROW_COLUMNS} FROM turnflow_tasks"):
                problem = task_row_damage(row)
                if problem:
                    return f"task {str(row[0])[:40]!r}: {problem}"
        return None

    def _records_damage(self, added: list[tuple[str, str]]) -> Optional[str]:
        """The first row a writer would trust that does not decode — a meta row that is not ours,
        a session or envelope record failing its checksum or missing a column — or None. Every
        record is read once (one pass, the checksums only; measured in docs/benchmarks.md), so a
        writer never adds to a store it could not read back whole. The envelopes adding a
        participant are put in `added` (session, record) as they are read."""
        problem = self._meta_damage() or self._tasks_damage()
        if problem:
            return problem
        for sid, text, crc in self.db.execute("SELECT session_id, record, crc FROM sessions"):
            if not (isinstance(sid, str) and isinstance(text, str) and isinstance(crc, int)) or checksum(sid, 0, text) != crc:
                return f"session {str(sid)[:40]}: its creation record fails its checksum"
        for sid, seq, text, crc in self.db.execute("SELECT session_id, seq, record, crc FROM envelopes"):
            if not (isinstance(sid, str) and isinstance(seq, int) and isinstance(text, str)
                    and isinstance(crc, int)) or checksum(sid, seq, text) != crc:
                return f"session {str(sid)[:40]} seq {seq}: the record fails its checksum"
            if _ADDED_TEXT in text:
                added.append((sid, text))
        return None

    def _check_format(self, empty_ok: bool) -> bool:
        """True when the database is a turnflow store; False when it is empty (no tables);
        `StoreError` when it is something else. Reads only."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return False
        if not _TABLES <= tables:
            raise StoreError(f"{self.path}: not a turnflow store (it has tables {sorted(tables)[:8]})")
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        except sqlite3.DatabaseError:
            row = None
        if row is None:
            raise StoreError(f"{self.path}: not a turnflow store (no format record)")
        if row[0] != FORMAT:
            raise StoreError(f"{self.path}: unsupported store format {str(row[0])[:40]!r} (expected {FORMAT})")
        return True

    def _identity(self) -> str:
        """This store's id (meta `store_id`), made when missing and copied into the main file
        at once (a checkpoint), so that a lost `-wal` cannot take it away."""
        row = self.db.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()
        if row is not None:
            return str(row[0])
        import uuid

        ident = uuid.uuid4().hex
        self.db.execute("INSERT INTO meta (key, value) VALUES ('store_id', ?)", (ident,))
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return ident

    def _held(self) -> tuple[int, int]:
        """(sessions, last envelope number) the store holds, read in one snapshot."""
        row = self.db.execute("SELECT (SELECT COUNT(*) FROM sessions), (SELECT MAX(gseq) FROM envelopes)").fetchone()
        return int(row[0]), int(row[1] or 0)

    def _own(self, mark: dict[str, Any]) -> dict[str, Any]:
        """`PATH.lock`'s mark when it is this store's (the same store id), else {}: an older store
        without an id, or the lock file another store left behind."""
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key='store_id'").fetchone()
        except sqlite3.DatabaseError:
            return {}
        return mark if row is not None and mark.get("store") == row[0] else {}

    def _lost(self, mark: dict[str, Any]) -> Optional[str]:
        """What is missing when the store holds less than its writers committed (`PATH.lock`'s
        record of them: same store id, more sessions or a later envelope number), or None."""
        mark = self._own(mark)
        if not mark:
            return None  # no record of this store's writers
        sessions, gseq = self._held()
        want_s, want_g = mark.get("sessions"), mark.get("gseq")
        if not (isinstance(want_s, int) and isinstance(want_g, int)) or (want_s <= sessions and want_g <= gseq):
            return None
        return (f"records are missing: writers committed {want_s} session{'s' if want_s != 1 else ''} and "
                f"envelopes up to #{want_g} to it, it holds {sessions} and envelopes up to #{gseq}: its -wal "
                "file was lost or deleted after a crash (or the machine lost power at --durability process)")

    def session_count(self) -> int:
        """How many session records the store holds."""
        count: int = self.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        return count

    def sessions_ever_created(self) -> Optional[int]:
        """How many sessions writers of this store have committed (from `PATH.lock`), or None
        when unknown. More than `session_count()` means the log lost its newest part (e.g. a
        deleted `-wal` file)."""
        if self.path == ":memory:" or self.path.startswith("file:"):
            return None
        n = self._own(_WriterLock.mark(self.path)).get("sessions")
        return n if isinstance(n, int) else None

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- writing --------------------------------------------------------------------------------
    @property
    def dialect(self) -> Dialect:
        return SQLITE

    def next_global_seq(self) -> int:
        """The next envelope number (one writer per SQLite store: a counter in this process)."""
        if self._gseq is None:
            self._gseq = self.last_global_seq()
        self._gseq += 1
        return self._gseq

    def seq_ready(self, n: int = 1) -> bool:
        """(Numbered locally: always.)"""
        return True

    def take_numbers(self, n: int = 1) -> None:
        """(Numbered locally: nothing to fetch.)"""

    def commit_group(self, units: CommitUnits) -> "asyncio.Future[Refusals]":
        """Write the group in one transaction, now: the returned future is already done — with
        no refusals (one writer holds no leases), or with the error when nothing was written."""
        done: asyncio.Future[Refusals] = asyncio.get_running_loop().create_future()
        try:
            self._write(units.sessions, units.rows, units.telemetry, units.ends)
        except sqlite3.Error as exc:  # a full disk, an I/O error: the store's failure, not the session's
            done.set_exception(StoreFailed(f"{self.path}: commit failed: {exc}"))
        except StoreError as exc:
            done.set_exception(exc)
        else:
            done.set_result({})
        return done

    def _write(self, sessions: list[SessionRow], rows: list[EnvelopeRow], telemetry: list[TelemetryRow],
               ends: Sequence[EndRow] = ()) -> None:
        """Every row in one transaction: all or none (on failure nothing of them is in the log,
        and the envelope numbers they took are given out again)."""
        if not rows and not sessions and not telemetry and not ends:
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            roster = [(r[0], _roster_source(r[2])) for r in sessions]  # (this group's rows of `session_agents`)
            added = [(r[1], r[4]) for r in rows if r[3] == _PARTICIPANT_ADDED]
            _insert(db, sessions, rows, telemetry, ends)
            due = len(self._roster) + len(roster) >= ROSTER_BATCH
            if due:
                self._write_roster(self._roster + roster, self._roster_added + added)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._gseq = None  # numbered again from the log
            raise
        if due:
            self._roster, self._roster_added = [], []
        else:
            self._roster += roster
            self._roster_added += added
        if self._lock is not None and (sessions or rows):  # what was committed, outside the database (a lost -wal shows)
            self._lock.committed(len(sessions), max(r[0] for r in rows) if rows else 0)

    # -- reading --------------------------------------------------------------------------------
    def last_global_seq(self) -> int:
        row = self.db.execute("SELECT MAX(gseq) FROM envelopes").fetchone()
        return row[0] or 0

    def sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        return self._session_rows("SELECT session_id, record, crc FROM sessions ORDER BY n")

    def open_sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        """`sessions()` without those whose log ends with `session.closed` or `session.expired`."""
        return self._session_rows(_OPEN)

    def _session_rows(self, query: str) -> Iterator[Union[dict[str, Any], Corrupt]]:
        try:
            rows = self.db.execute(query).fetchall()
        except sqlite3.DatabaseError as exc:  # a damaged file: report it, and read nothing more
            yield Corrupt("(store)", 0, f"the sessions table cannot be read: {exc}")
            return
        for sid, text, crc in rows:
            yield decode_session(sid, text, crc)

    def _write_roster(self, roster: list[tuple[str, str]], added: list[tuple[str, str]]) -> None:
        self.db.executemany(_AGENTS_OF, roster)
        if added:
            self.db.executemany(_AGENT_ADDED, added)

    def flush_roster(self) -> None:
        """Write the `session_agents` rows held back (ROSTER_BATCH), in a transaction of their own."""
        if not self._roster and not self._roster_added:
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            self._write_roster(self._roster, self._roster_added)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._roster, self._roster_added = [], []

    def sessions_naming(self, agent_ids: Sequence[str]) -> Iterator[str]:
        """The ids (creation order, streamed) of the sessions that have had one of `agent_ids` on
        their roster (at creation, or added since)."""
        self.flush_roster()
        cur = self.db.cursor()
        table = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_agents'")
        if table.fetchone():
            cur.execute(_NAMING, (json.dumps(list(agent_ids)),))
        else:  # (a store opened read-only that no writer of this version has opened)
            cur.execute(_NAMING_SCAN, (None, json.dumps([json_text(a) for a in agent_ids])))
        while True:
            rows = cur.fetchmany(256)
            if not rows:
                return
            for (sid,) in rows:
                yield sid

    def naming_page(self, agent_ids: Sequence[str], after: int, count: int) -> Optional[list[tuple[int, str]]]:
        """Up to `count` of `sessions_naming`'s sessions created after the one numbered `after`
        (0: from the first), as (number, id), read in one query (no cursor left open); None for a
        store without end records (opened read-only, never opened for writing by this version)."""
        self.flush_roster()
        tables = {r[0] for r in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('session_agents', 'session_ends')")}
        if len(tables) < 2:
            return None
        return self.db.execute(_NAMING_PAGE, (json.dumps(list(agent_ids)), after, count)).fetchall()

    def end_records(self, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """The creation record of each of `session_ids` the store holds and its end record, as
        (id, creation record, its checksum, end record or None, its checksum or None), one query."""
        return self.db.execute(_END_RECORDS, (json.dumps(list(session_ids)),)).fetchall()

    def session_record(self, session_id: str) -> Optional[Union[dict[str, Any], Corrupt]]:
        """One session's creation record (checked like `sessions` checks it), or None."""
        check_session_id(session_id)
        row = self.db.execute("SELECT session_id, record, crc FROM sessions WHERE session_id = ?",
                              (session_id,)).fetchone()
        return None if row is None else decode_session(*row)

    def load(self, session_id: str) -> list[Union[Envelope, Corrupt]]:
        return list(self.read_range(session_id))

    def forget(self, session_id: str) -> None:
        """(Nothing to drop: a SQLite store keeps no copy of a session's log.)"""

    def summary(self) -> LogSummary:
        db = self.db
        ends = [SessionEnds(by, reason, bool(opened), int(n)) for by, reason, opened, n in db.execute(_ENDS)]
        turns = [(int(t), int(n)) for t, n in db.execute(_TURNS)]
        envelopes = int(db.execute("SELECT COUNT(*) FROM envelopes").fetchone()[0])
        tasks = None
        if db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'turnflow_tasks'").fetchone()[0]:
            tasks = {str(s): int(n) for s, n in db.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state")}
        return LogSummary(SQLITE.name, envelopes, ends, turns, tasks)

    def stream(self, only: Optional[Container[str]] = None) -> Iterator[Union[Envelope, Corrupt]]:
        """Every envelope of every session in append order, streamed (bounded memory); with
        `only`, those of the sessions it holds (the others' records are not decoded)."""
        cur = self.db.cursor()
        cur.arraysize = 512
        try:
            cur.execute("SELECT session_id, seq, record, crc FROM envelopes ORDER BY gseq")
        except sqlite3.DatabaseError as exc:
            yield Corrupt("(store)", 0, f"the envelopes table cannot be read: {exc}")
            return
        while True:
            try:
                rows = cur.fetchmany()
            except sqlite3.DatabaseError as exc:  # a damaged page: what follows it cannot be read
                yield Corrupt("(store)", 0, f"the envelopes table cannot be read past this point: {exc}")
                return
            if not rows:
                return
            for sid, seq, text, crc in rows:
                if only is None or sid in only:
                    yield decode_envelope(sid, seq, text, crc)

    def read_range(self, session_id: str, start: int = 1, end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]:
        check_session_id(session_id)
        cur = self.db.cursor()
        cur.execute("SELECT session_id, seq, record, crc FROM envelopes WHERE session_id = ? AND seq >= ? "
                    "AND seq <= ? ORDER BY seq", (session_id, start, end if end is not None else 2 ** 62))
        while True:
            rows = cur.fetchmany(512)
            if not rows:
                return
            for sid, seq, text, crc in rows:
                yield decode_envelope(sid, seq, text, crc)

    def telemetry(self, session_id: str) -> list[dict[str, Any]]:
        check_session_id(session_id)
        return [json.loads(t) for (t,) in self.db.execute(
            "SELECT record FROM telemetry WHERE session_id = ? ORDER BY id", (session_id,))]

    def close(self) -> None:
        try:
            db = getattr(self, "db", None)
            if db is not None:
                if self._roster or self._roster_added:  # (never on a read-only open)
                    with contextlib.suppress(sqlite3.Error):  # (filled again at the next open)
                        self.flush_roster()
                db.close()
        except sqlite3.Error:  # pragma: no cover
            pass
        finally:
            self._release()


def _wal_bytes(path: str) -> int:
    import os

    try:
        return os.path.getsize(path + "-wal")
    except OSError:
        return 0


def _unwritable(path: str) -> Optional[str]:
    """Why this process cannot write the store at `path` (a read-only file, `-wal`/`-shm` file or
    folder), or None. Asked before anything is opened: SQLite would open such a file read-only
    and fail only at the first commit."""
    import os

    for name in (path, path + "-wal", path + "-shm"):
        if os.path.exists(name):
            try:
                os.close(os.open(name, os.O_RDWR | _NOBLOCK))
            except OSError as exc:
                return f"{name}: {exc.strerror or exc}"
    folder = os.path.dirname(os.path.realpath(path))
    if os.path.isdir(folder) and not os.access(folder, os.W_OK):  # the -wal, -shm, .lock files are made there
        return f"its folder {folder} is read-only"
    return None


def _roster_source(text: str) -> str:
    """What `_AGENTS_OF` reads a new session's roster from: its creation record cut to its
    participants, `{"participants":[...]}`, so SQLite parses those and not the whole record (its
    knobs are bounded by the frame size alone: parsing 256 records of 500 KB, twice, took ~80 ms of
    the event loop). The record's keys are sorted and its participants followed by its session id,
    its tools (strings) and its ttl: the last `,"participants":` is the record's own (a string cannot
    hold `,"` unescaped, and nothing after it holds an object). The whole record when it is not so."""
    at = text.rfind(',"participants":[')
    end = text.find('],"session_id":', at)
    if at < 0 or end < 0:
        return text
    return '{"participants":' + text[at + 16:end + 1] + "}"


def _insert(db: sqlite3.Connection, sessions: list[SessionRow], rows: list[EnvelopeRow], telemetry: list[TelemetryRow],
            ends: Sequence[EndRow]) -> None:
    """A group's rows, inside `_write`'s transaction."""
    if sessions:  # (session_id, task_id, record, crc): the task id is PostgreSQL's
        db.executemany("INSERT INTO sessions (session_id, record, crc) VALUES (?1, ?3, ?4)", sessions)
    if rows:  # (gseq, session_id, seq, event_type, record, crc): the type is inside the record
        db.executemany("INSERT INTO envelopes (gseq, session_id, seq, record, crc) VALUES (?1, ?2, ?3, ?5, ?6)", rows)
    if telemetry:
        db.executemany("INSERT INTO telemetry (session_id, record) VALUES (?, ?)", telemetry)
    if ends:
        db.executemany("INSERT OR REPLACE INTO session_ends (session_id, record, crc) VALUES (?, ?, ?)", ends)
