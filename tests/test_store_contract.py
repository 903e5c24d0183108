"""The store contract (runtime/store/contract.py) holds, in the code and in behaviour.

- `src/` uses no asyncio internals for the group commit (`_asyncio_future_blocking`, a class of
  its own that defines `__await__` — other than one handing over to a real coroutine's — or
  subclasses `asyncio.Future`), and never asks a
  store what it can do (`getattr`/`hasattr` on a store): every store has every contract method.
  A probe is found by the object's name (`store`, `self._store`, ...) anywhere in `src/`, and — in
  `runtime/` and `serve/`, whatever the object is called — by the name probed for: any member of
  the store classes that no other class of turnflow has (read from the classes, so it follows them).
  Read from the syntax tree, so a comment or a docstring that names them does not count.
- Both engines have every member of `Store`, and `commit_group`
  behaves as documented: rows in log order, new sessions before their envelopes, `{}` when all is
  written, the refusal of a session whose task lease this worker lost (PostgreSQL) while the rest
  of the group is written, an error and nothing written when the group fails (SQLite).
"""

from __future__ import annotations

import ast
import asyncio
import sqlite3
from pathlib import Path
from typing import Optional

import pytest
from scan_gc import collector_paused

from turnflow.runtime.envelope import EV_TEXT, Envelope
from turnflow.runtime.errors import StoreError
from turnflow.runtime.store import SQLiteStore
from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import CommitUnits, envelope_row, session_row, telemetry_row

SRC = Path(__file__).resolve().parents[1] / "src" / "turnflow"
CONTRACT = sorted(n for n in vars(Store) if not n.startswith("_")) + sorted(Store.__annotations__)
# names only a store answers to (the contract's own, and the optional methods stores were probed for):
# a getattr/hasattr for one of them probes a store whatever the object is called
STORE_ONLY = {"commit_group", "next_global_seq", "last_global_seq", "session_record", "read_range",
              "append_telemetry", "sessions_ever_created", "session_count", "batch_failures", "dialect",
              "stage", "stage_session", "commit", "commit_async", "rollback", "engine", "forget"}


SCANNED_BY_NAME = ("runtime", "serve", "frameworks")  # every getattr/hasattr there is checked, whatever its object is called
STORE_CLASSES = {"runtime/store/contract.py": "Store", "runtime/store/sqlite.py": "SQLiteStore",
                 "runtime/store/postgres.py": "PostgresStore"}


# -- the code ---------------------------------------------------------------------------------------
def _members(cls: ast.ClassDef) -> set[str]:
    """A class's methods, class attributes and the attributes its methods assign on `self`."""
    out: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        out |= {t.attr for t in targets
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return out


def parsed(root: Path) -> dict[Path, ast.Module]:
    """Every module under `root`, parsed (once for both scans below)."""
    return {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in sorted(root.rglob("*.py"))}


def store_only_names(root: Path = SRC, trees: Optional[dict[Path, ast.Module]] = None) -> set[str]:
    """The members of the store classes (the contract, both engines) that no other class under
    `root` has: a getattr/hasattr for one of them can only be asking a store."""
    stores: set[str] = set()
    others: set[str] = set()
    for path, tree in (trees if trees is not None else parsed(root)).items():
        own = STORE_CLASSES.get(path.relative_to(root).as_posix())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                (stores if node.name == own else others).update(_members(node))
    return stores - others - {"__init__"}


def _is_store_expr(node: ast.AST) -> bool:
    """`store`, `self.store`, `self._store`, `hub.store`, ...: an expression naming a store."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "store" in name.lower()


def _delegates(fn: ast.AST) -> bool:
    """`def __await__(self): return some_coroutine(...).__await__()` and nothing else."""
    body = [b for b in getattr(fn, "body", []) if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    v = body[0].value
    return (isinstance(v, ast.Call) and not v.args and isinstance(v.func, ast.Attribute)
            and v.func.attr == "__await__" and isinstance(v.func.value, ast.Call))


def violations(root: Path, store_names: frozenset[str] = frozenset(),
               trees: Optional[dict[Path, ast.Module]] = None) -> list[str]:
    """Every use of asyncio internals for awaiting and every probe of a store under `root`
    (`store_names`: `store_only_names()`, looked for in `runtime/` and `serve/`)."""
    found = []
    for path, tree in (trees if trees is not None else parsed(root)).items():
        where = path.relative_to(root.parent)
        by_name = path.relative_to(root).parts[0] in SCANNED_BY_NAME
        for node in ast.walk(tree):
            line = f"{where}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr == "_asyncio_future_blocking":
                found.append(f"{line}: _asyncio_future_blocking")
            elif isinstance(node, ast.Constant) and node.value == "_asyncio_future_blocking":
                found.append(f"{line}: _asyncio_future_blocking (by name)")
            elif isinstance(node, ast.ClassDef):
                # no class of turnflow's hand-crafts an awaitable: an `__await__` may only hand over to
                # a real coroutine's (`return coro(...).__await__()`, the platform tools' answers)
                if any(isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)) and i.name == "__await__"
                       and not _delegates(i)
                       or isinstance(i, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__await__"
                                                            for t in i.targets) for i in node.body):
                    found.append(f"{line}: class {node.name} defines __await__")
                for base in node.bases:
                    if isinstance(base, ast.Attribute) and base.attr == "Future":
                        found.append(f"{line}: class {node.name} subclasses a Future")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr") and node.args):
                probed = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
                if _is_store_expr(node.args[0]) or probed in STORE_ONLY or by_name and probed in store_names:
                    found.append(f"{line}: {node.func.id}({ast.unparse(node.args[0])}, {probed!r})")
    return found


def test_src_awaits_with_public_asyncio_and_never_probes_a_store():
    with collector_paused():  # (tests/scan_gc.py) src/ parsed once for both scans
        trees = parsed(SRC)
        names = store_only_names(SRC, trees)
        found = violations(SRC, frozenset(names), trees)
        del trees
    # read from the classes: the contract's own names and each engine's, but none another class has
    assert {"commit_group", "read_range", "damage", "dialect", "finish_task", "_gseq"} <= names, sorted(names)
    assert not {"close", "sessions", "path", "db", "__init__"} & names, sorted(names)
    assert found == []


def test_the_scan_finds_each_kind_of_violation(tmp_path):
    """The scan itself: each forbidden form is found, and the same words in a comment are not."""
    pkg = tmp_path / "turnflow"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "import asyncio\n"
        "class Group(asyncio.Future):\n"
        "    def __await__(self):\n"
        "        self._asyncio_future_blocking = True\n"
        "        return self\n"
        "def f(store, hub):\n"
        "    return getattr(store, 'stage', None), hasattr(hub.store, 'x'), getattr(hub, 'commit_group')\n")
    (pkg / "fine.py").write_text("# getattr(store, 'stage') and _asyncio_future_blocking, in a comment\n"
                                 "def f(obj):\n    return getattr(obj, 'name', None)\n"
                                 "class Answer(str):\n    def __await__(self):\n        return ready(self).__await__()\n")
    # whatever the object is called: in runtime/ and serve/, a name only a store has
    for part in ("runtime", "serve", "commands"):
        (pkg / part).mkdir()
        (pkg / part / "probe.py").write_text("def f(backend, log):\n"
                                             "    return getattr(backend, 'damage', None), hasattr(log, 'finish_task')\n")
    got = violations(pkg, frozenset({"damage", "finish_task"}))
    assert len(got) == 10, got
    assert sorted({v.split(":")[0] for v in got}) == ["turnflow/bad.py", "turnflow/runtime/probe.py",
                                                      "turnflow/serve/probe.py"]


# -- the engines ------------------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = SQLiteStore(str(tmp_path / "hub.db"))
    else:
        from turnflow.runtime.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def _record(sid: str, task: str | None = None) -> dict:
    return {"session_id": sid, "kind": "conversation", "labels": {"task_id": task} if task else {}}


def _units(store: Store, sessions: list[dict], envs: list[tuple[str, int]]) -> CommitUnits:
    units = CommitUnits()
    units.sessions.extend(session_row(r) for r in sessions)
    for sid, seq in envs:
        env = Envelope(sid, "a", None, EV_TEXT, {"text": f"{sid}:{seq}"})
        env.seq, env.created_at = seq, 1.0
        gseq = store.next_global_seq()
        env.envelope_id = f"{gseq:016d}"
        units.rows.append(envelope_row(env, gseq))
        units.envelopes.append(env)
    return units


def _sid(n: int) -> str:
    return f"{n:032x}"


def test_every_store_has_every_member_of_the_contract(store):
    missing = [m for m in CONTRACT if not hasattr(store, m)]
    assert missing == [], type(store).__name__


def test_commit_group_is_the_only_write(store):
    """No other method of the contract or of either engine writes: no `append*`, `write*`, `insert*`."""
    writes = ("append", "write", "insert", "put", "stage", "add", "save")
    assert [m for m in CONTRACT if m.startswith(writes)] == []
    assert [m for m in dir(store) if not m.startswith("_") and m.startswith(writes)] == []


def test_telemetry_is_written_by_the_group_commit(store):
    a, b = _sid(1), _sid(2)
    units = _units(store, [_record(a), _record(b)], [(a, 1)])
    units.telemetry += [telemetry_row(a, {"event": "progress", "n": 1}), telemetry_row(b, {"event": "task"}),
                        telemetry_row(a, {"event": "progress", "n": 2})]

    async def go():
        first = await store.commit_group(units)
        only = CommitUnits()
        only.telemetry.append(telemetry_row(b, {"event": "error"}))  # a group of telemetry alone
        return first, await store.commit_group(only)

    assert asyncio.run(go()) == ({}, {})
    assert store.telemetry(a) == [{"event": "progress", "n": 1}, {"event": "progress", "n": 2}]
    assert store.telemetry(b) == [{"event": "task"}, {"event": "error"}]


def test_summary_aggregates_the_store_into_typed_records(store):
    """`summary()`: sessions counted by how their log ends (the first ending envelope's type and
    reason, whether it was opened) and by their turns; no SQL crosses the contract."""
    from turnflow.runtime.envelope import EV_PACKET, EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_SESSION_OPENED
    from turnflow.runtime.store.records import LogSummary, SessionEnds

    logs = {_sid(1): [(EV_SESSION_OPENED, {}), (EV_TEXT, {"text": "a"}), (EV_SESSION_CLOSED, {"reason": "x|y"}),
                      (EV_SESSION_EXPIRED, {"reason": "late"})],
            _sid(2): [(EV_SESSION_OPENED, {}), (EV_PACKET, {"kind": "finish"}), (EV_TEXT, {"text": "b"}),
                      (EV_SESSION_EXPIRED, {"reason": "ttl_expired"})],
            _sid(3): [(EV_SESSION_OPENED, {}), (EV_TEXT, {"text": "c"})],
            _sid(4): [(EV_SESSION_OPENED, {}), (EV_SESSION_CLOSED, {})],
            _sid(5): []}
    units = CommitUnits()
    units.sessions.extend(session_row(_record(sid)) for sid in logs)
    _commit_logs(store, units, logs, "a")
    got = store.summary()
    assert isinstance(got, LogSummary) and got.engine == store.dialect.name
    assert got.envelopes == 12 and not got.tasks  # no task list (PostgreSQL: one with no task)
    assert sorted(got.ends, key=repr) == sorted([
        SessionEnds(EV_SESSION_CLOSED, "x|y", True, 1), SessionEnds(EV_SESSION_EXPIRED, "ttl_expired", True, 1),
        SessionEnds(None, None, True, 1), SessionEnds(EV_SESSION_CLOSED, "", True, 1),
        SessionEnds(None, None, False, 1)], key=repr)
    assert got.turns == [(0, 2), (1, 2), (2, 1)]


def test_commit_group_writes_sessions_before_their_envelopes_in_log_order(store):
    a, b = _sid(1), _sid(2)

    async def go():
        first = store.commit_group(_units(store, [_record(a), _record(b)], [(a, 1), (b, 1), (a, 2)]))
        second = store.commit_group(_units(store, [], [(b, 2), (a, 3)]))
        return await first, await second

    assert asyncio.run(go()) == ({}, {})
    assert [r["session_id"] for r in store.sessions()] == [a, b]
    assert [(e.session_id, e.seq) for e in store.stream()] == [(a, 1), (b, 1), (a, 2), (b, 2), (a, 3)]
    assert [e.event_data["text"] for e in store.read_range(a)] == [f"{a}:1", f"{a}:2", f"{a}:3"]
    ids = [e.envelope_id for e in store.stream()]
    assert ids == sorted(ids) and len(set(ids)) == 5  # global numbers: unique, increasing in log order


def test_a_session_whose_lease_was_lost_is_refused_and_the_rest_of_the_group_is_written(pg_url):
    """PostgreSQL, a batch worker's store: the group holds a session of a task another worker took
    over and one of a task this worker holds; only the first is refused (LeaseLost), in the commit."""
    import psycopg

    from turnflow.runtime.store.postgres import PostgresStore
    from turnflow.runtime.tasks import LeaseLost

    mine, lost = _sid(1), _sid(2)
    store = PostgresStore(pg_url, worker="w1")
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("INSERT INTO turnflow_tasks (id, ord, context, spec_hash, state, worker) VALUES "
                         "('t-mine', 0, '{}', 'h', 'running', 'w1'), ('t-lost', 1, '{}', 'h', 'running', 'w2')")

        async def go():
            return await store.commit_group(_units(store, [_record(mine, "t-mine"), _record(lost, "t-lost")],
                                                   [(mine, 1), (lost, 1)]))

        refused = asyncio.run(go())
    finally:
        store.close()
    assert set(refused) == {lost} and isinstance(refused[lost], LeaseLost)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT session_id FROM turnflow_sessions").fetchall() == [(mine,)]
        assert conn.execute("SELECT session_id, seq FROM turnflow_envelopes").fetchall() == [(mine, 1)]


def test_a_group_that_fails_raises_and_leaves_nothing_of_it(tmp_path):
    """SQLite: one transaction per group: a row the database refuses (here a second session.record
    under one id) fails the whole group; its future raises StoreError and nothing of it is stored."""
    store = SQLiteStore(str(tmp_path / "hub.db"))
    a, b = _sid(1), _sid(2)

    async def go():
        assert await store.commit_group(_units(store, [_record(a)], [(a, 1)])) == {}
        with pytest.raises(StoreError, match="commit failed"):
            await store.commit_group(_units(store, [_record(b), _record(a)], [(b, 1)]))
        return await store.commit_group(_units(store, [_record(b)], [(b, 1)]))

    try:
        assert asyncio.run(go()) == {}
        assert [(e.session_id, e.seq) for e in store.stream()] == [(a, 1), (b, 1)]
        ids = [int(e.envelope_id) for e in store.stream()]
        assert ids == [1, 2]  # the failed group's number was given out again
    finally:
        store.close()
    assert sqlite3.connect(str(tmp_path / "hub.db")).execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 2


def test_open_sessions_sessions_naming_and_a_stream_of_some_sessions(store):
    """What a hub that lets its ended sessions go reads: the creation records of the sessions whose
    log does not end with `session.closed` / `session.expired` (the event type of the record, not
    a text inside it), the sessions whose creation record or an envelope adding a participant
    names an agent (creation order), and the envelopes of some sessions only."""
    from turnflow.runtime.envelope import (EV_PARTICIPANT_ADDED, EV_SESSION_CLOSED, EV_SESSION_EXPIRED,
                                           EV_SESSION_OPENED)
    s = [_sid(n) for n in range(1, 8)]
    people = {s[0]: ["x", "y"], s[1]: ["x", "w"], s[2]: ["y", "w"], s[3]: ["w", "v"], s[4]: ["y", "v"],
              s[5]: ["v", "w"], s[6]: ["y", "x\u00e9"]}
    logs = {s[0]: [(EV_SESSION_OPENED, {}), (EV_TEXT, {"text": "a"}), (EV_SESSION_CLOSED, {"reason": "done"})],
            s[1]: [(EV_SESSION_OPENED, {}), (EV_TEXT, {"text": '"event_type":"session.closed"',
                                                     "event_type": "session.closed"})],
            s[2]: [(EV_SESSION_OPENED, {}), (EV_SESSION_EXPIRED, {"reason": "ttl_expired"})],
            s[3]: [],
            s[4]: [(EV_SESSION_OPENED, {}), (EV_PARTICIPANT_ADDED, {"agent_id": "zed"})],
            s[5]: [(EV_SESSION_OPENED, {}), (EV_PARTICIPANT_ADDED, {"agent_id": "zed"}), (EV_SESSION_CLOSED, {})],
            s[6]: [(EV_SESSION_OPENED, {}), (EV_SESSION_CLOSED, {"reason": "zed"})]}
    units = CommitUnits()
    units.sessions.extend(session_row({**_record(sid), "participants": [{"agent_id": a} for a in people[sid]]})
                          for sid in s)
    _commit_logs(store, units, logs, "hub")
    assert [r["session_id"] for r in store.open_sessions()] == [s[1], s[3], s[4]]
    assert list(store.sessions_naming(["x"])) == [s[0], s[1]]
    assert list(store.sessions_naming(["zed"])) == [s[4], s[5]]  # added (s[6] only says it)
    assert list(store.sessions_naming(["v", "x"])) == [s[0], s[1], s[3], s[4], s[5]]
    assert list(store.sessions_naming(["x\u00e9"])) == [s[6]]
    assert list(store.sessions_naming(["nobody"])) == []
    assert [(e.session_id, e.seq) for e in store.stream(only={s[1], s[5]})] == \
        [(s[1], 1), (s[1], 2), (s[5], 1), (s[5], 2), (s[5], 3)]


def _commit_logs(store, units, logs, sender):
    """Stamp each session's envelopes (`logs`: id -> [(event type, data)], sent by `sender`) into
    `units` beside its creation records, and commit them as one group: nothing refused."""
    for sid, log in logs.items():
        for seq, (event_type, data) in enumerate(log, 1):
            env = Envelope(sid, sender, None, event_type, data)
            env.seq, env.created_at = seq, 1.0
            gseq = store.next_global_seq()
            env.envelope_id = f"{gseq:016d}"
            units.rows.append(envelope_row(env, gseq))
            units.envelopes.append(env)

    async def go():
        return await store.commit_group(units)

    assert asyncio.run(go()) == {}
