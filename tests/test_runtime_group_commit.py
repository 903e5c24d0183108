"""Group commit: posts made in one event-loop tick share one SQLite transaction, and a post
returns only once its envelope is committed (visible to another connection)."""

from __future__ import annotations

import asyncio
import sqlite3

from runtime_helpers import FakeClock, run
from turnflow.runtime.envelope import EV_TEXT, Envelope
from turnflow.runtime.errors import StoreError
from turnflow.runtime.hub import Hub
from turnflow.runtime.store import SQLiteStore


class CountingStore(SQLiteStore):
    def __init__(self, path, fail_next=False):
        super().__init__(path)
        self.commits = 0
        self.fail_next = fail_next

    def _write(self, sessions, rows, telemetry, ends=()):
        if rows or sessions:
            if self.fail_next:
                self.fail_next = False
                raise sqlite3.OperationalError("disk I/O error")
            self.commits += 1
        super()._write(sessions, rows, telemetry, ends)


async def open_many(hub, n):
    mds = []
    for _ in range(n):
        md = await hub.open_session("conversation", ["x", "y"])
        await hub.ack(md.session_id, "y")
        mds.append(md)
    return mds


def test_concurrent_posts_share_one_commit_and_return_only_once_committed(tmp_path):
    db = str(tmp_path / "hub.db")

    async def go():
        store = CountingStore(db)
        hub = await Hub.open(store, clock=FakeClock())
        mds = await open_many(hub, 20)
        other = sqlite3.connect(db)
        seen = []

        async def post(md):
            env = await hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "hi"}))
            row = other.execute("SELECT COUNT(*) FROM envelopes WHERE session_id = ? AND seq = ?",
                                (md.session_id, env.seq)).fetchone()
            seen.append(row[0])
        before = store.commits
        await asyncio.gather(*(post(md) for md in mds))
        assert store.commits - before == 1  # twenty posts, one transaction
        assert seen == [1] * 20  # each visible to another connection when its post returned
        assert all(hub.info(md.session_id)["turn_count"] == 1 for md in mds)
        other.close()
        await hub.aclose()
    run(go())


def test_a_failed_group_commit_fails_every_post_in_it_and_folds_nothing(tmp_path):
    async def go():
        store = CountingStore(str(tmp_path / "hub.db"))
        hub = await Hub.open(store, clock=FakeClock())
        mds = await open_many(hub, 3)
        store.fail_next = True
        results = await asyncio.gather(*(hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "lost"}))
                                         for md in mds), return_exceptions=True)
        assert all(isinstance(r, StoreError) and "disk I/O error" in str(r) for r in results)
        assert [hub.info(md.session_id)["turn_count"] for md in mds] == [0, 0, 0]
        env = await hub.post(Envelope(mds[0].session_id, "x", None, EV_TEXT, {"text": "again"}))
        assert env.seq == 4 and hub.info(mds[0].session_id)["turn_count"] == 1
        await hub.aclose()
        again = Hub(SQLiteStore(str(tmp_path / "hub.db")))
        again.hydrate()
        assert [again.info(md.session_id)["turn_count"] for md in mds] == [1, 0, 0]
        assert again.report.problems == []
    run(go())


def test_a_poster_cancelled_while_its_group_commits_does_not_disturb_the_others(tmp_path):
    async def go():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")), clock=FakeClock())
        mds = await open_many(hub, 3)
        tasks = [asyncio.ensure_future(hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "t"})))
                 for md in mds]
        await asyncio.sleep(0)  # all three staged, waiting for the commit
        tasks[0].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(done[0], asyncio.CancelledError)
        assert [hub.info(md.session_id)["turn_count"] for md in mds] == [1, 1, 1]  # written and folded anyway
        await hub.post(Envelope(mds[0].session_id, "y", None, EV_TEXT, {"text": "next"}))
        await hub.aclose()
    run(go())


from hypothesis import given, settings, strategies as st  # noqa: E402

from turnflow.runtime.envelope import EV_PACKET, packet  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.sampled_from(["x", "y"])), max_size=25))
def test_concurrent_posts_fold_in_log_order_so_hydrate_rebuilds_the_same_sessions(schedule):
    """Tasks post to three sessions with random yields in between; whatever interleaving the group
    commit makes, the live sessions equal the sessions hydrated from the log."""
    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        mds = await open_many(hub, 3)

        async def poster(k, delay, who):
            for _ in range(delay):
                await asyncio.sleep(0)
            md = mds[k]
            if who == "x":
                await hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": f"{k}:{delay}"}))
            else:
                await hub.post(Envelope(md.session_id, "y", ["x"], EV_PACKET, packet(f"p{delay}")))
        await asyncio.gather(*(poster(*s) for s in schedule))
        live = {md.session_id: (hub.info(md.session_id), [m["text"] for m in hub.view(md.session_id, "x")])
                for md in mds}
        again = Hub(hub.store)
        again.hydrate()
        assert again.report.problems == []
        assert {sid: (again.info(sid), [m["text"] for m in again.view(sid, "x")]) for sid in live} == live
        assert sum(i["turn_count"] for i, _ in live.values()) == len(schedule)
    run(go())


def test_sessions_opened_in_one_tick_share_one_commit_and_a_failed_one_leaves_no_session(tmp_path):
    """A new session's record is written in the transaction of its first invite: twenty sessions
    opened at once cost one commit, each visible to another connection when open_session returns;
    when that commit fails, open_session raises and the session exists neither live nor in the log."""
    db = str(tmp_path / "hub.db")

    async def go():
        store = CountingStore(db)
        hub = await Hub.open(store, clock=FakeClock())
        other = sqlite3.connect(db)
        seen = []

        async def open_one():
            md = await hub.open_session("conversation", ["x", "y"])
            seen.append(other.execute("SELECT COUNT(*) FROM sessions WHERE session_id = ?",
                                      (md.session_id,)).fetchone()[0])
            return md
        before = store.commits
        mds = await asyncio.gather(*(open_one() for _ in range(20)))
        assert store.commits - before == 1 and seen == [1] * 20
        store.fail_next = True
        try:
            await hub.open_session("conversation", ["x", "y"])
        except StoreError as exc:
            assert "disk I/O error" in str(exc)
        else:
            raise AssertionError("open_session returned although its commit failed")
        assert set(hub.sessions) == {md.session_id for md in mds}
        md = await hub.open_session("conversation", ["x", "y"])  # the hub goes on
        await hub.ack(md.session_id, "y")
        other.close()
        await hub.aclose()
        again = Hub(SQLiteStore(db))
        again.hydrate()
        assert again.report.problems == [] and set(again.sessions) == {m.session_id for m in mds} | {md.session_id}
    run(go())


def test_envelope_records_are_the_json_text_of_their_fields_and_circular_data_is_refused(tmp_path):
    import json

    from turnflow.runtime.errors import ProtocolError

    async def go():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")), clock=FakeClock())
        md = (await open_many(hub, 1))[0]
        data = {"text": "h\u00e9 \"q\" \n", "n": [1, 2.5, None, True], "inf": float("inf")}
        env = await hub.post(Envelope(md.session_id, "x", None, EV_TEXT, data))
        (text,) = hub.store.db.execute("SELECT record FROM envelopes WHERE session_id = ? AND seq = ?",
                                       (md.session_id, env.seq)).fetchone()
        assert text == json.dumps(env.to_record(), separators=(",", ":"))
        loop = {"text": "x"}
        loop["self"] = loop
        for bad in (loop, {"text": object()}):
            try:
                await hub.post(Envelope(md.session_id, "y", None, EV_TEXT, bad))
            except ProtocolError as exc:
                assert "JSON values" in str(exc)
            else:
                raise AssertionError("non-JSON data was accepted")
        assert hub.info(md.session_id)["turn_count"] == 1  # nothing written, the session goes on
        await hub.post(Envelope(md.session_id, "y", None, EV_TEXT, {"text": "ok"}))
        await hub.aclose()
    run(go())


def test_a_session_listener_hears_only_its_own_session(tmp_path):
    """`subscribe(fn, session_id=...)`: a runner's watcher is not called for the envelopes of the
    other sessions the hub runs (it was: every post cost one call per running session)."""
    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore

    async def go():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")))
        heard: dict[str, list] = {}
        everything: list = []

        async def every(env, md):
            everything.append(env.session_id)

        hub.subscribe(every)
        sids = []
        for _ in range(3):
            md = await hub.open_session("conversation", ["a", "b"])
            await hub.ack(md.session_id, "b")
            sids.append(md.session_id)

        def listener(sid):
            async def fn(env, md):
                heard.setdefault(sid, []).append(env.session_id)
            return fn

        mine = {sid: listener(sid) for sid in sids}
        for sid, fn in mine.items():
            hub.subscribe(fn, session_id=sid)
        for sid in sids:
            await hub.post(Envelope(sid, "a", None, EV_TEXT, {"text": "hi"}))
        hub.unsubscribe(mine[sids[0]], session_id=sids[0])
        await hub.post(Envelope(sids[0], "b", None, EV_TEXT, {"text": "after"}))
        await hub.aclose()
        return sids, heard, everything

    sids, heard, everything = asyncio.run(go())
    assert heard == {sid: [sid] for sid in sids}  # each heard its own post, once; none after unsubscribe
    assert everything.count(sids[0]) >= 2  # a hub-wide listener still hears every session


class LateCommitStore(SQLiteStore):
    """A store that commits off the event loop (as PostgresStore does): `commit_group` returns a
    future that the store resolves some loop iterations later."""

    def __init__(self, path, ticks=5):
        super().__init__(path)
        self.ticks = ticks
        self.resolved = 0

    def commit_group(self, units):
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        async def later():
            for _ in range(self.ticks):
                await asyncio.sleep(0)
            self._write(units.sessions, units.rows, units.telemetry)
            self.resolved += 1
            done.set_result({})
        loop.create_task(later())
        return done


def test_posts_to_a_store_that_commits_off_the_loop_return_only_once_it_resolved(tmp_path):
    db = str(tmp_path / "hub.db")

    async def go():
        store = LateCommitStore(db)
        hub = await Hub.open(store, clock=FakeClock())
        mds = await open_many(hub, 4)
        other = sqlite3.connect(db)
        seen = []

        async def post(md):
            before = store.resolved
            env = await hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "hi"}))
            seen.append((store.resolved - before, other.execute(
                "SELECT COUNT(*) FROM envelopes WHERE session_id = ? AND seq = ?",
                (md.session_id, env.seq)).fetchone()[0]))
        tasks = [asyncio.ensure_future(post(md)) for md in mds]
        await asyncio.sleep(0)
        tasks[1].cancel()  # cancelled while its group commits: written and folded all the same
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(done[1], asyncio.CancelledError)
        assert seen == [(1, 1)] * 3  # one commit, resolved (and visible) before any post returned
        assert all(hub.info(md.session_id)["turn_count"] == 1 for md in mds)
        other.close()
        await hub.aclose()
    run(go())


def test_a_waiting_poster_keeps_no_callback_on_its_group(tmp_path):
    """10,000 posters waiting for one SQLite group commit cost the event loop and the cyclic GC
    only their tasks' own wake-ups (`asyncio.sleep(0)`: the commit runs first): the group never
    makes a future for them to wait on (each waiter would add a wake-up method and a callback
    entry that the collector has to scan); only a store that commits off the loop needs one."""
    async def go():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")), clock=FakeClock())
        mds = await open_many(hub, 50)
        tasks = [asyncio.ensure_future(hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "t"})))
                 for md in mds]
        await asyncio.sleep(0)  # all fifty staged, waiting for the commit
        group = hub.sessions[mds[0].session_id].writing
        assert group is not None and all(hub.sessions[md.session_id].writing is group for md in mds)
        assert not group.settled and group._waiter is None
        envs = await asyncio.gather(*tasks)
        assert [e.seq for e in envs] == [4] * 50 and group.settled and group._waiter is None
        await hub.aclose()
    run(go())


def test_the_last_ack_and_session_opened_share_one_commit_unless_someone_listens(tmp_path):
    async def go():
        store = CountingStore(str(tmp_path / "hub.db"))
        hub = await Hub.open(store, clock=FakeClock())
        md = await hub.open_session("workflow", ["a", "b", "c"],
                                    knobs={"graph": {"initial_speaker": "a", "transitions": [],
                                                     "default_target": {"name": "round_robin", "args": {}}}})
        before = store.commits
        await hub.ack(md.session_id, "b")
        assert store.commits - before == 1 and md.state.value == "invited"
        await hub.ack(md.session_id, "c")  # the ack and session.opened: one transaction
        assert store.commits - before == 2 and md.state.value == "active"
        assert [(e.seq, e.event_type) for e in hub.read(md.session_id)][2:] == [
            (3, "session.ack"), (4, "session.ack"), (5, "session.opened")]

        heard = []

        async def listener(env, meta):
            heard.append((env.event_type, meta.state.value))
        hub.subscribe(listener)
        md2 = await hub.open_session("conversation", ["x", "y"])
        before = store.commits
        await hub.ack(md2.session_id, "y")  # a listener hears the ack before the session opens
        assert store.commits - before == 2
        assert heard[-2:] == [("session.ack", "invited"), ("session.opened", "active")]
        await hub.aclose()
        again = Hub(SQLiteStore(str(tmp_path / "hub.db")))
        again.hydrate()
        assert again.report.problems == [] and again.metadata(md.session_id).state.value == "active"
        again.store.close()
    run(go())


def test_telemetry_is_written_in_the_ticks_group_commit_with_the_posts(tmp_path):
    """Telemetry has no write path of its own: records stored in a tick join that tick's group (one
    transaction with its posts); an awaited emit returns once its record is committed, and raises
    StoreError when its group failed (nothing of it stored)."""
    db = str(tmp_path / "hub.db")

    class Spy(CountingStore):
        def _write(self, sessions, rows, telemetry, ends=()):
            self.groups = getattr(self, "groups", []) + [(len(rows), len(telemetry))]
            super()._write(sessions, rows, telemetry, ends)

    async def go():
        store = Spy(db)
        hub = await Hub.open(store, clock=FakeClock())
        mds = await open_many(hub, 2)
        store.groups = []
        other = sqlite3.connect(db)

        async def post_and_emit(md):
            hub.record_telemetry(md.session_id, "x", {"event": "progress", "payload": {"n": 1}})
            await hub.post(Envelope(md.session_id, "x", None, EV_TEXT, {"text": "hi"}))

        await asyncio.gather(*(post_and_emit(md) for md in mds))
        assert store.groups == [(2, 2)]  # two posts and two telemetry records, one transaction
        assert await hub.emit_telemetry(mds[0].session_id, "x", {"event": "progress", "payload": {"n": 2}})
        assert store.groups == [(2, 2), (0, 1)]
        stored = other.execute("SELECT record FROM telemetry WHERE session_id = ? ORDER BY id",
                               (mds[0].session_id,)).fetchall()
        assert [r[0].count('"n"') for r in stored] == [1, 1]  # committed when the emit returned
        store.fail_next = True
        store.groups = []
        failed = asyncio.gather(hub.post(Envelope(mds[1].session_id, "x", None, EV_TEXT, {"text": "lost"})),
                                hub.emit_telemetry(mds[1].session_id, "x", {"event": "progress"}),
                                return_exceptions=True)
        assert all(isinstance(r, StoreError) and "disk I/O error" in str(r) for r in await failed)
        assert len(store.telemetry(mds[1].session_id)) == 1  # the failed group's record is not stored
        other.close()
        await hub.aclose()
    run(go())
