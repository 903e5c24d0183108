"""A hub with `keep_ended=False` (what `turnflow serve` runs, docs/runtime.md "Ended sessions"):
a session that has ended — closed, expired, rejected, closed by an expectation — leaves
`Hub.sessions`, and every lookup answers for it as before, read back from the store; a hub opened
over a store hydrates only the sessions that have not ended. On both engines."""

from __future__ import annotations

import asyncio
import json

import pytest

from runtime_helpers import CHAIN, FakeClock, active
from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED, EV_PARTICIPANT_REMOVED, EV_TEXT, Envelope
from turnflow.runtime.hub import Hub
from turnflow.runtime.session import Participant


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request, tmp_path):
    """A function opening the test's store (again: a restart)."""
    made = []

    def opener():
        if request.param == "sqlite":
            from turnflow.runtime.store import SQLiteStore

            return SQLiteStore(str(tmp_path / "hub.db"))
        from turnflow.runtime.store.postgres import PostgresStore

        url = request.getfixturevalue("pg_url")
        made.append(url)
        return PostgresStore(url)
    return opener


def text(sid, who, t="hi"):
    return Envelope(sid, who, None, EV_TEXT, {"text": t})


async def outcome(call):
    try:
        return ("ok", await call) if asyncio.iscoroutine(call) or isinstance(call, asyncio.Future) else ("ok", call)
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))


def dump(obj):
    """An adapter state's fields, compared by value (its class has no `__repr__` of its own: two
    equal states' reprs differ by their addresses, or match when one reuses the other's)."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, dict):
        return {k: dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(repr(dump(v)) for v in obj)
    if callable(obj) and hasattr(obj, "__qualname__"):  # (a function a compiled graph refers to)
        return f"{obj.__module__}.{obj.__qualname__}"
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    fields = {s: getattr(obj, s, None) for s in slots} if slots else dict(getattr(obj, "__dict__", {}))
    if not fields:
        text = repr(obj)
        assert " at 0x" not in text, text  # (a value compared by its address would compare nothing)
        return text
    return type(obj).__name__, {k: dump(v) for k, v in fields.items()}


async def answers(hub, sid, who):
    """Every lookup and every refused write of one ended session."""
    got = {"info": hub.info(sid), "metadata": repr(hub.metadata(sid)), "record": repr(await hub.get_session(sid)),
           "view": list(hub.view(sid, who)), "view all": list(hub.view(sid, None)),
           "read": [e.to_record() for e in hub.read(sid)], "read 2": [e.to_record() for e in hub.read(sid, 2, 3)],
           "state": dump(hub.adapter_state(sid)), "expected": hub.expected_next(sid)}
    for name, call in (("post", lambda: hub.post(text(sid, who))), ("ack", lambda: hub.ack(sid, who)),
                       ("reject", lambda: hub.reject(sid, who)), ("close", lambda: hub.close(sid))):
        got[name] = await outcome(call())
    got["sessions_of"] = [m.session_id for m in hub.sessions_of([who], 50)]
    return got


def test_ended_sessions_leave_memory_and_answer_as_before(open_store):
    """Differential: each way a session ends, the answers while the hub holds it (told to keep it)
    and once it has let it go (read back from the store, nothing of it kept) are the same."""
    async def go():
        clock = FakeClock()
        hub = await Hub.open(open_store(), clock=clock, keep_ended=False)
        try:
            pair = [Participant("q", "initiator", 0), Participant("r", "respondent", 1)]
            ends = {}
            hub.keep_ended = True  # held once ended: the answers before they leave memory
            md = await active(hub, "conversation", ["x", "y"])
            await hub.post(text(md.session_id, "x"))
            await hub.close(md.session_id, "done")
            ends["closed"] = md.session_id, "x"
            md = await active(hub, "conversation", ["x", "y"], ttl_seconds=5)
            await hub.post(text(md.session_id, "x", "before the end"))
            clock.advance(6)
            await hub.sweep()
            ends["expired"] = md.session_id, "y"
            md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
            await hub.reject(md.session_id, "c", "busy")
            ends["rejected"] = md.session_id, "b"
            md = await hub.open_session("consulting", pair)
            clock.advance(31)
            await hub.sweep()  # acks_within: closed by the sweeper
            ends["acks_within"] = md.session_id, "q"
            md = await active(hub, "discussion", ["x", "y"])
            await hub.post(Envelope(md.session_id, "x", None, EV_PARTICIPANT_ADDED, {"agent_id": "zed"}))
            await hub.post(text(md.session_id, "x", "welcome"))
            await hub.close(md.session_id)
            ends["added"] = md.session_id, "zed"
            live = await active(hub, "conversation", ["x", "zed"])
            hub.keep_ended = False
            assert set(hub.sessions) == {sid for sid, _ in ends.values()} | {live.session_id}
            for why, (sid, who) in ends.items():
                before = await answers(hub, sid, who)
                hub.ended(hub.sessions[sid])
                assert sid not in hub.sessions, why
                hub._ended.clear()
                after = await answers(hub, sid, who)
                assert after == before, why
                assert before["post"][0] == "error" and "send refused" in before["post"][2], why
            assert list(hub.sessions) == [live.session_id]
            # by themselves, with keep_ended=False, sessions leave memory as they end
            md = await active(hub, "conversation", ["x", "y"])
            await hub.close(md.session_id)
            md2 = await active(hub, "conversation", ["x", "y"], ttl_seconds=1)
            clock.advance(2)
            await hub.sweep()
            assert list(hub.sessions) == [live.session_id] and list(hub._watched) == [live.session_id]
            assert [m.session_id for m in hub.sessions_of(["zed"], 50)] == [ends["added"][0], live.session_id]
            listed = [m.session_id for m in hub.sessions_of(["x"], 50)]
            assert listed == [ends[k][0] for k in ("closed", "expired", "added")] + \
                [live.session_id, md.session_id, md2.session_id]
            assert [m.session_id for m in hub.sessions_of(["x", "q"], 3)] == \
                [ends[k][0] for k in ("closed", "expired", "acks_within")]
            assert hub.sessions_of(["x"], 0) == [] and hub.sessions_of([], 5) == []
            for bad in ("0" * 32, "not an id"):
                with pytest.raises(Exception, match="unknown session id|session id"):
                    hub.info(bad)
            return ends, live.session_id
        finally:
            await hub.aclose()

    async def again(ends, live):
        hub = await Hub.open(open_store(), clock=FakeClock(), keep_ended=False)
        try:
            assert list(hub.sessions) == [live] and hub.report.sessions == 1
            for why, (sid, _who) in ends.items():
                assert hub.info(sid)["state"] in ("closed", "expired"), why
            assert list(hub.sessions) == [live]
        finally:
            await hub.aclose()
        kept = await Hub.open(open_store(), clock=FakeClock())  # the default: every session held
        try:
            assert len(kept.sessions) == len(ends) + 3
        finally:
            await kept.aclose()

    ends, live = asyncio.run(go())
    asyncio.run(again(ends, live))


def test_sqlite_finds_the_roster_of_an_older_store_and_never_scans_the_log(tmp_path):
    """SQLite keeps who has been on each session's roster in a table of its own, written with the
    creation record and with each envelope adding a participant; a store without it (an older one,
    or one an older version wrote to) gets it filled when opened for writing, and a read-only one
    without it is answered by a scan. Listing reads that table and the sessions of its rows, never
    a table whole."""
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.store import sqlite as engine

    path = str(tmp_path / "hub.db")

    async def write():
        hub = await Hub.open(SQLiteStore(path), clock=FakeClock(), keep_ended=False)
        md = await active(hub, "discussion", ["x", "y"])
        await hub.post(Envelope(md.session_id, "x", None, EV_PARTICIPANT_ADDED, {"agent_id": "zed"}))
        await hub.close(md.session_id)
        other = await active(hub, "conversation", ["x", "y"])
        await hub.aclose()
        return md.session_id, other.session_id

    sid, other = asyncio.run(write())
    store = SQLiteStore(path)
    rows = sorted(store.db.execute("SELECT agent_id, session_id FROM session_agents"))
    assert rows == sorted([("x", sid), ("y", sid), ("zed", sid), ("x", other), ("y", other)])
    assert list(store.sessions_naming(["zed"])) == [sid]
    plan = [r[3] for r in store.db.execute("EXPLAIN QUERY PLAN " + engine._NAMING, ('["zed"]',))]
    scans = [step for step in plan if step.startswith("SCAN")]  # the ids given, and the rows found: no table
    assert all(step.startswith(("SCAN t VIRTUAL TABLE", "SCAN m")) for step in scans), plan
    store.db.execute("DROP TABLE session_agents")  # as a store written before it was
    store.close()
    readonly = SQLiteStore(path, read_only=True)
    assert list(readonly.sessions_naming(["zed"])) == [sid]
    assert list(readonly.sessions_naming(["x"])) == [sid, other]
    readonly.close()
    again = SQLiteStore(path)
    assert sorted(again.db.execute("SELECT agent_id, session_id FROM session_agents")) == rows
    assert list(again.sessions_naming(["zed"])) == [sid] and list(again.sessions_naming(["y", "x"])) == [sid, other]
    again.close()


def test_postgresql_fills_the_roster_table_of_an_older_store(pg_url):
    """PostgreSQL's `turnflow_session_agents`: written by the group commit with the creation record
    and each envelope adding a participant; an older store (without it) gets it made and filled
    when opened for writing, and one opened read-only without it is answered by a scan."""
    import psycopg

    from turnflow.runtime.store.postgres import PostgresStore

    async def write():
        hub = await Hub.open(PostgresStore(pg_url), clock=FakeClock(), keep_ended=False)
        md = await active(hub, "discussion", ["x", "y"])
        await hub.post(Envelope(md.session_id, "x", None, EV_PARTICIPANT_ADDED, {"agent_id": "zed"}))
        await hub.close(md.session_id)
        other = await active(hub, "conversation", ["x", "y"])
        await hub.aclose()
        return md.session_id, other.session_id

    sid, other = asyncio.run(write())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = sorted(conn.execute("SELECT agent_id, session_id FROM turnflow_session_agents").fetchall())
        assert rows == sorted([("x", sid), ("y", sid), ("zed", sid), ("x", other), ("y", other)])
        conn.execute("DROP TABLE turnflow_session_agents")  # as a store written before it was
    readonly = PostgresStore(pg_url, read_only=True)
    assert list(readonly.sessions_naming(["zed"])) == [sid]
    assert list(readonly.sessions_naming(["x"])) == [sid, other]
    readonly.close()
    again = PostgresStore(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert sorted(conn.execute("SELECT agent_id, session_id FROM turnflow_session_agents").fetchall()) == rows
    assert list(again.sessions_naming(["zed"])) == [sid] and list(again.sessions_naming(["y", "x"])) == [sid, other]
    again.close()


def test_sqlite_writes_the_roster_in_batches_and_a_crash_loses_none_of_it(tmp_path):
    """SQLite writes `session_agents` ROSTER_BATCH sessions at a time (with the group commit that
    reaches that many; before listing; at close): a process killed before its batch is written
    loses nothing a listing shows, the next open fills what the table lacks."""
    import os
    import subprocess
    import sys
    import textwrap

    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.store import sqlite as engine

    path = str(tmp_path / "hub.db")
    n = engine.ROSTER_BATCH + 10  # one batch written, 10 sessions held back when the process dies
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from runtime_helpers import FakeClock, active
        from turnflow.runtime.hub import Hub
        from turnflow.runtime.store import SQLiteStore

        async def main():
            store = SQLiteStore({path!r})
            hub = await Hub.open(store, clock=FakeClock(), keep_ended=False)
            for i in range({n}):
                md = await active(hub, "conversation", ["x", f"y{{i}}"])
                await hub.close(md.session_id)
            written = store.db.execute("SELECT COUNT(*) FROM session_agents").fetchone()[0]
            print(written, len(store._roster), flush=True)
            os._exit(0)  # killed: no close, nothing flushed

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    written, held = map(int, out.stdout.split())
    assert held and written == 2 * (n - held) and written >= 2 * engine.ROSTER_BATCH  # batched, not per commit
    store = SQLiteStore(path)
    try:
        assert store.db.execute("SELECT COUNT(*) FROM session_agents").fetchone()[0] == 2 * n  # filled at open
        listed = list(store.sessions_naming(["x"]))
        assert len(listed) == n
        assert list(store.sessions_naming([f"y{n - 1}"])) == listed[-1:]
    finally:
        store.close()


def _ends_table(hub):
    return "session_ends" if type(hub.store).__name__ == "SQLiteStore" else "turnflow_session_ends"


def _sql(hub, query):
    """Run `query` on the test's store (either engine); the rows it returns."""
    if type(hub.store).__name__ == "SQLiteStore":
        return hub.store.db.execute(query).fetchall()
    with hub.store.pool.connection() as conn:
        cur = conn.execute(query)
        return cur.fetchall() if cur.description else []


WHO = ["x", "zed", "c"]


def test_listing_builds_ended_sessions_from_their_end_records_as_their_logs_fold(open_store, monkeypatch):
    """Differential, on both engines: an agent's sessions listed (`sessions_of`, `iter_sessions_of`)
    while the hub still holds the ended ones, and once it has let them go — built from their
    creation and end records, no log read back — after a restart, with an end record damaged, and
    on an older store (no end records: read back from their logs, then written for the next
    listing) are equal, field by field, to the metadata the logs fold to."""
    from turnflow.runtime import hub as hub_module
    from turnflow.runtime.hub.hydrate import hydrate
    from turnflow.runtime.store.records import checksum

    def folded(hub, sid):
        return hydrate(hub.store, hub._complete, sid, keep=False)[0][sid].metadata

    def fields(mds):
        return [(dump(md), md.pset, type(md.pending_acks).__name__ if not md.pending_acks else "set") for md in mds]

    async def build(hub, clock):
        pair = [Participant("x", "initiator", 0), Participant("r", "respondent", 1)]
        md = await active(hub, "conversation", ["x", "y"])
        await hub.post(text(md.session_id, "x"))
        await hub.close(md.session_id, "done")
        md = await active(hub, "conversation", ["x", "y"], ttl_seconds=5)
        clock.advance(6)
        await hub.sweep()  # expired
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
        await hub.reject(md.session_id, "c", "busy")  # rejected: pending acks left at the end
        await hub.open_session("consulting", pair)
        clock.advance(31)
        await hub.sweep()  # acks_within: closed by the sweeper, unacked
        md = await active(hub, "discussion", ["x", "y"])
        await hub.post(Envelope(md.session_id, "x", None, EV_PARTICIPANT_ADDED, {"agent_id": "zed"}))
        await hub.close(md.session_id)  # a roster that changed
        md = await active(hub, "discussion", ["y", "x", "w"])
        await hub.post(Envelope(md.session_id, "y", None, EV_PARTICIPANT_REMOVED, {"agent_id": "x"}))
        await hub.close(md.session_id)  # x named once, not now: not listed for x
        for i in range(70):  # more than one part of a listing (LIST_WORK)
            md = await active(hub, "conversation", ["x", "y"], labels={"i": i})
            await hub.close(md.session_id, f"done {i}")
        await active(hub, "conversation", ["y", "x"])  # a live one

    async def go():
        clock = FakeClock()
        hub = await Hub.open(open_store(), clock=clock, keep_ended=False)
        try:
            await build(hub, clock)
            ids = [m.session_id for m in hub.sessions_of(WHO, 1000)]
            truth = fields([hub.sessions[sid].metadata if sid in hub.sessions else folded(hub, sid) for sid in ids])
            assert len(ids) == 76 and all(m.pset & set(WHO) for m in hub.sessions_of(WHO, 1000))
            held = fields(hub.sessions_of(WHO, 1000))  # the ended ones kept among the last read
            assert held == truth
            await asyncio.sleep(0)  # (the group commit the listing handed the last end records to)
            getattr(hub.store, "flush", lambda: None)()
            hub._ended.clear()

            def no_read_back(*a, **k):
                raise AssertionError("an ended session with an end record was read back from its log")
            monkeypatch.setattr(hub, "_read_back", no_read_back)
            parts = list(hub.iter_sessions_of(WHO, 1000))
            assert len(parts) > 1 and fields([md for part in parts for md in part]) == truth
            for limit in (1, 2, 5, 75, 76, 77):
                assert [m.session_id for m in hub.sessions_of(WHO, limit)] == ids[:limit]
            monkeypatch.setattr(hub_module, "LIST_SLACK", 0)  # pages of `limit`: the one no longer naming x skipped
            for limit in (1, 5, 6, 75, 76, 77):
                assert [m.session_id for m in hub.sessions_of(WHO, limit)] == ids[:limit]
            assert [m.session_id for m in hub.sessions_of(["zed"], 10)] == [ids[4]]
            monkeypatch.undo()
            # a damaged end record: that session read back from its log, the same answer
            _sql(hub, f"UPDATE {_ends_table(hub)} SET crc = crc + 1 WHERE session_id = '{ids[0]}'")
            hub._ended.clear()
            assert fields(hub.sessions_of(WHO, 1000)) == truth
            await asyncio.sleep(0)  # (its record written again, mended)
            getattr(hub.store, "flush", lambda: None)()
            hub._ended.clear()
            monkeypatch.setattr(hub, "_read_back", no_read_back)
            assert fields(hub.sessions_of(WHO, 1000)) == truth
            monkeypatch.undo()
            return ids, truth
        finally:
            await hub.aclose()

    async def again(ids, truth):
        hub = await Hub.open(open_store(), clock=FakeClock(), keep_ended=False)  # a restart
        try:
            assert fields(hub.sessions_of(WHO, 1000)) == truth
            # a session whose record holds a manifest its adapter no longer has (an older version's):
            # that manifest, as its log folds to
            table = "sessions" if type(hub.store).__name__ == "SQLiteStore" else "turnflow_sessions"
            sid = ids[0]
            rec = json.loads(_sql(hub, f"SELECT record FROM {table} WHERE session_id = '{sid}'")[0][0])
            rec["manifest"]["default_view"] = "full_transcript"
            text = json.dumps(rec)
            _sql(hub, f"UPDATE {table} SET record = '{text}', crc = {checksum(sid, 0, text)} WHERE session_id = '{sid}'")
            hub._ended.clear()
            changed = fields([folded(hub, sid)])
            assert changed[0] != truth[0] and "full_transcript" in repr(changed)
            truth = changed + truth[1:]
            assert fields(hub.sessions_of(WHO, 1000)) == truth
            # an older store: no end records; each listing reads them back, and writes them
            _sql(hub, f"DELETE FROM {_ends_table(hub)}")
            hub._ended.clear()
            monkeypatch.setattr(hub_module, "ENDS_BATCH", 16)  # (written a batch at a time as found, too)
            assert fields(hub.sessions_of(WHO, 1000)) == truth
            await asyncio.sleep(0)  # (the group commit they were handed to)
            getattr(hub.store, "flush", lambda: None)()
            # every ended one named, the one that no longer names x too
            assert _sql(hub, f"SELECT COUNT(*) FROM {_ends_table(hub)}")[0][0] == 76
            hub._ended.clear()
            monkeypatch.setattr(hub, "_read_back", lambda *a, **k: pytest.fail("read back again"))
            assert fields(hub.sessions_of(WHO, 1000)) == truth
        finally:
            monkeypatch.undo()
            await hub.aclose()

    ids, truth = asyncio.run(go())
    asyncio.run(again(ids, truth))


def test_sqlite_roster_rows_parse_the_participants_not_the_whole_creation_record(tmp_path):
    """A session's `session_agents` rows are taken from its participants alone, not by SQLite parsing
    its whole creation record (twice: json_valid, json_each): a workflow's knobs are bounded only by
    the frame size, and 256 sessions of 500 KB stalled the hub ~80 ms per batch of rows (docs/serve.md).
    The rows are the same, a knob that looks like a roster is not taken for one, and a session whose
    record the store cannot slice is still found (its whole record parsed)."""
    from runtime_helpers import CHAIN
    from turnflow.runtime.store import SQLiteStore

    async def go():
        store = SQLiteStore(str(tmp_path / "hub.db"))
        hub = await Hub.open(store, clock=FakeClock(), keep_ended=False)
        bound = []
        store.db.set_trace_callback(lambda sql: bound.append(len(sql)) if "session_agents" in sql else None)
        try:
            decoy = {"participants": [{"agent_id": "mallory"}], "pad": "x" * 100_000}
            md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN, "context_vars": decoy},
                                        creator_id="a")
            store.flush_roster()
            assert bound and max(bound) < 10_000, bound  # (the statement with its values bound, as SQLite ran it)
            rows = sorted(store.db.execute("SELECT agent_id FROM session_agents WHERE session_id = ?",
                                           (md.session_id,)).fetchall())
            assert rows == [("a",), ("b",), ("c",)]
            assert list(store.sessions_naming(["mallory"])) == []
        finally:
            store.db.set_trace_callback(None)
            await hub.aclose()

    asyncio.run(go())
