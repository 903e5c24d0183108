"""The write-ahead log: hydrate re-folds exactly what was committed; kill -9 loses at most the
envelope being written; corruption is reported with session and sequence number, never folded."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_crash_child import nth, open_session, post_n
from runtime_helpers import FakeClock, run
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.errors import StoreError
from turnflow.runtime.hub import Hub
from turnflow.runtime.store import SQLiteStore
from turnflow.runtime.store.records import CommitUnits, envelope_row

ROOT = Path(__file__).resolve().parents[1]
LIFECYCLE_BEFORE_POSTS = 5  # 2 invites, 2 acks, opened


def hydrated(path):
    store = SQLiteStore(str(path), read_only=True)  # as inspect reads it (a writer refuses damage)
    hub = Hub(store)
    report = hub.hydrate()
    out = {sid: (s.info(), s.state.snapshot(), sorted(s.fired)) for sid, s in hub.sessions.items()}
    envs = {sid: [e.seq for e in store.read_range(sid)] for sid in hub.sessions}
    store.close()
    return report, out, envs


def reference_state(posts: int):
    """The state after the first `posts` posts of the child's stream, computed in memory."""
    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        md = await open_session(hub)
        await post_n(hub, md.session_id, 0, posts)
        live = hub.sessions[md.session_id]
        return live.info(), live.state.snapshot()
    return run(go())


def test_kill_9_leaves_exactly_a_committed_prefix(tmp_path):
    db = tmp_path / "hub.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    child = subprocess.Popen([sys.executable, str(ROOT / "tests" / "runtime_crash_child.py"), str(db), "1000000"],
                             stdout=subprocess.PIPE, text=True, env=env)
    sid = child.stdout.readline().strip()
    seen = 0
    while seen < LIFECYCLE_BEFORE_POSTS + 400:
        seen = int(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read().split()
    child.wait()
    acknowledged = int(rest[-1]) if rest else seen  # every post that returned before the kill

    report, sessions, envs = hydrated(db)
    assert report.problems == []
    info, snapshot, _ = sessions[sid]
    k = len(envs[sid])
    assert envs[sid] == list(range(1, k + 1))  # a prefix, no holes
    assert acknowledged <= k <= acknowledged + 1  # loses at most the envelope being written
    posts = k - LIFECYCLE_BEFORE_POSTS
    want_info, want_snapshot = reference_state(posts)
    want_info["session_id"], want_info["created_at"] = sid, info["created_at"]  # the child ran on the real clock
    for key in ("last_envelope_id",):  # ids are global counters: equal too, since one session per store
        assert snapshot[key] == want_snapshot[key]
    assert (info, snapshot) == (want_info, want_snapshot)
    assert info["state"] == "active" and info["envelope_count"] == k
    # twice the same
    assert hydrated(db)[1:] == (sessions, envs)

    # and the hub carries on from there
    async def carry_on():
        hub = await Hub.open(SQLiteStore(str(db)))
        e = await hub.post(nth(posts, hub.expected_next(sid), sid))
        await hub.aclose()
        return e.seq
    assert run(carry_on()) == k + 1


def _small_store(path, posts=10):
    async def go():
        hub = await Hub.open(SQLiteStore(str(path)), clock=FakeClock())
        md = await open_session(hub)
        await post_n(hub, md.session_id, 0, posts)
        await hub.aclose()
        return md.session_id
    return run(go())


def test_corrupt_record_is_reported_not_folded(tmp_path):
    db = tmp_path / "hub.db"
    sid = _small_store(db)
    con = sqlite3.connect(db)
    con.execute("UPDATE envelopes SET record = replace(record, 'turn 2', 'turn 9') WHERE session_id = ? AND seq = 8",
                (sid,))
    con.commit()
    con.close()
    report, sessions, _ = hydrated(db)
    assert [(p.session_id, p.seq, p.detail) for p in report.problems] == [(sid, 8, "checksum mismatch")]
    info, snapshot, _ = sessions[sid]
    want_info, want_snapshot = reference_state(8 - 1 - LIFECYCLE_BEFORE_POSTS)  # the prefix before the bad record
    want_info["session_id"], want_info["envelope_count"], want_info["created_at"] = sid, 7, info["created_at"]
    assert (info, snapshot) == (want_info, want_snapshot)

    before = db.read_bytes()  # a writer refuses the damaged file before writing to it (issue #33, item 5)
    with pytest.raises(StoreError, match=re.escape(f"the store is damaged (session {sid} seq 8: the record fails")):
        SQLiteStore(str(db))
    assert db.read_bytes() == before


def test_missing_record_is_reported(tmp_path):
    db = tmp_path / "hub.db"
    sid = _small_store(db)
    con = sqlite3.connect(db)
    con.execute("DELETE FROM envelopes WHERE session_id = ? AND seq = 9", (sid,))
    con.commit()
    con.close()
    report, sessions, _ = hydrated(db)
    assert [(p.session_id, p.seq) for p in report.problems] == [(sid, 9)]
    assert sessions[sid][0]["envelope_count"] == 8


def test_terminal_sessions_stay_closed_and_pending_closes_are_completed(tmp_path):
    db = tmp_path / "hub.db"

    async def go():
        hub = await Hub.open(SQLiteStore(str(db)), clock=FakeClock())
        md = await open_session(hub)
        await hub.close(md.session_id, "done_here")
        md2 = await open_session(hub)
        await hub.aclose()
        return md.session_id, md2.session_id
    closed, open_ = run(go())
    # simulate a crash between a finishing packet and its session.closed: append the packet only
    store = SQLiteStore(str(db))
    from turnflow.runtime.envelope import EV_PACKET, packet
    env = Envelope(open_, "a", None, EV_PACKET, packet("bye", kind="finish", reason="wrapped_up"))
    env.seq, env.envelope_id = 6, "9" * 16
    units = CommitUnits()
    units.rows.append(envelope_row(env, store.last_global_seq() + 1))
    units.envelopes.append(env)

    async def append():
        assert await store.commit_group(units) == {}

    asyncio.run(append())
    store.close()

    async def reopen():
        hub = await Hub.open(SQLiteStore(str(db)))
        out = (hub.info(closed), hub.info(open_), hub.report.completed_closes)
        await hub.aclose()
        return out
    a, b, completed = run(reopen())
    assert (a["state"], a["close_reason"]) == ("closed", "done_here")
    assert (b["state"], b["close_reason"], completed) == ("closed", "wrapped_up", [open_])


def test_not_a_turnflow_store(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a turnflow store"):
        SQLiteStore(str(db))
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        SQLiteStore(str(junk))


def test_hydrate_only_reads_one_session_alone(tmp_path):
    """`Hub.hydrate(only=ID)` / `Hub.open(store, only=ID)`: that session's record and log, read by
    themselves (the whole-store reads are never called), and the session goes on from there; an
    unknown id hydrates nothing."""
    from runtime_helpers import CHAIN

    from turnflow.runtime.envelope import EV_TEXT

    db = str(tmp_path / "hub.db")

    async def make():
        hub = await Hub.open(SQLiteStore(db), clock=FakeClock())
        sids = []
        for n in range(3):
            md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
            await hub.ack(md.session_id, "b")
            await hub.ack(md.session_id, "c")
            for _ in range(n + 1):
                await hub.post(Envelope(md.session_id, hub.expected_next(md.session_id), None, EV_TEXT, {"text": "x"}))
            sids.append(md.session_id)
        await hub.aclose()
        return sids

    sids = asyncio.run(make())

    class OneSessionOnly(SQLiteStore):
        def sessions(self):
            raise AssertionError("the whole store's sessions were read")

        def stream(self):
            raise AssertionError("the whole store's log was read")

    store = OneSessionOnly(db, read_only=True)
    try:
        hub = Hub(store)
        report = hub.hydrate(only=sids[1])
        assert list(hub.sessions) == [sids[1]] and report.sessions == 1 and report.problems == []
        assert hub.info(sids[1])["turn_count"] == 2
        assert report.envelopes == hub.info(sids[1])["envelope_count"]
        assert hub.hydrate(only="0" * 32).sessions == 0 and hub.sessions == {}
    finally:
        store.close()

    async def close_on_open():
        writer = OneSessionOnly(db)
        hub = await Hub.open(writer, only=sids[2], clock=FakeClock())
        assert list(hub.sessions) == [sids[2]]
        await hub.close(sids[2], "done")
        await hub.aclose()

    asyncio.run(close_on_open())
    reader = SQLiteStore(db, read_only=True)
    try:
        assert [e.event_type for e in reader.read_range(sids[2])][-1] == "session.closed"
    finally:
        reader.close()


def test_an_envelopes_stored_text_is_its_records_compact_json():
    """`envelope_row` writes the usual fields of a stamped envelope directly and the rest through the
    encoder; its text must be `json.dumps(envelope.to_record(), separators=(",", ":"))` byte for byte
    (the checksums of every stored record depend on it), and refuse what that refuses."""
    import json
    import random
    import zlib

    rng = random.Random(5)
    values = [None, 0, -3, 2**70, 1.0, 0.1, 1e-05, 1e300, float("inf"), float("-inf"), float("nan"), True, False, "",
              "é\u2028\"\\\x00", "\ud800", [], {}, {"b": 1, "a": [None, {"y": 2.5, "x": "q"}]}, (1, 2), {1: "int key"}]
    text = ["hi", "é", "\ud83d\ude00", "a\"b\\c", "\u2028"]
    for i in range(1500):
        data = {rng.choice(text): rng.choice(values) for _ in range(rng.randint(0, 3))}
        env = Envelope(rng.choice(["a" * 32, "é", "b" * 32]), rng.choice(text), rng.choice([None, [], ["x", "é"]]),
                       rng.choice(["text", "packet", "é.x"]), data, envelope_id=rng.choice([f"{i:016d}", "é"]),
                       created_at=rng.choice([1.5, 1_700_000_000.123456, 3, True, float("nan"), float("inf"), 10**20]),
                       seq=rng.choice([1, 2**40, True]), causation_id=rng.choice([None, "c", "é"]),
                       trace_id=rng.choice([None, "t"]), extra=rng.choice([None, {"depth": 2, "p": 1.5}, {}]))
        want = json.dumps(env.to_record(), separators=(",", ":"))
        gseq, sid, seq, et, got, crc = envelope_row(env, i)
        assert (gseq, sid, seq, et, got) == (i, env.session_id, env.seq, env.event_type, want), i
        assert crc == zlib.crc32(f"{sid}\x00{seq}\x00{want}".encode("utf-8"))
    circular: dict = {}
    circular["self"] = circular
    for bad in ({"x": object()}, circular, {"x": {(1, 2): 1}}, {"x": [1, {2, 3}]}):
        env = Envelope("a" * 32, "a", None, "text", bad, envelope_id="1", created_at=1.0, seq=1)
        with pytest.raises((TypeError, ValueError)) as want_exc:
            json.dumps(env.to_record(), separators=(",", ":"))
        with pytest.raises(type(want_exc.value), match=re.escape(str(want_exc.value))):
            envelope_row(env, 1)
