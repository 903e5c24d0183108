"""PostgresStore and the shared task list on a real throw-away PostgreSQL server: hydrate, group
commit, schema version, exclusive claims under contention, leases (expiry, takeover, the
commit-time holder check) and kill -9 of one of several workers."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from batch_helpers import StoreReader, check_exactly_once, run_to_end, start, write_batch
from pg_server import wait_for
from runtime_helpers import CHAIN

from turnflow.runtime.envelope import EV_TEXT, Envelope
from turnflow.runtime.errors import StoreError
from turnflow.runtime.hub import Hub
from turnflow.runtime.task_queue import PostgresTaskQueue
from turnflow.runtime.tasks import LeaseLost, Task


def _store(url, **kw):
    from turnflow.runtime.store.postgres import PostgresStore

    return PostgresStore(url, **kw)


async def _chain_session(hub, turns):
    md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
    await hub.ack(md.session_id, "b")
    await hub.ack(md.session_id, "c")
    for i in range(turns):
        await hub.post(Envelope(md.session_id, hub.expected_next(md.session_id), None, EV_TEXT, {"text": f"t{i}"}))
    return md.session_id


def _stored_session(url, turns):
    """A closed hub's store holding one chain session of `turns` turns; returns its id."""
    async def make():
        hub = await Hub.open(_store(url))
        sid = await _chain_session(hub, turns)
        await hub.aclose()
        return sid
    return asyncio.run(make())


def _reopened(url, sid):
    """Hydrate the store in a new hub: its report and the session's info."""
    async def reopen():
        hub = await Hub.open(_store(url))
        info = hub.info(sid)
        await hub.aclose()
        return hub.report, info
    return asyncio.run(reopen())


def test_hydrate_gives_back_the_same_sessions(pg_url):
    async def go():
        hub = await Hub.open(_store(pg_url))
        sid = await _chain_session(hub, 5)
        other = await _chain_session(hub, 2)
        await hub.close(other, "explicit_close")
        before = {s: hub.info(s) for s in (sid, other)}
        await hub.aclose()
        again = await Hub.open(_store(pg_url))
        after = {s: again.info(s) for s in (sid, other)}
        assert [e.seq for e in again.read(sid)] == list(range(1, 11))
        await again.post(Envelope(sid, again.expected_next(sid), None, EV_TEXT, {"text": "more"}))
        assert again.info(sid)["turn_count"] == 6
        await again.aclose()
        return before, after, again.report

    before, after, report = asyncio.run(go())
    assert before == after
    assert report.problems == [] and report.sessions == 2 and report.envelopes == 10 + 8


def test_a_corrupt_record_is_reported_with_session_and_seq(pg_url):
    import psycopg

    sid = _stored_session(pg_url, 3)
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE turnflow_envelopes SET record = replace(record, 't1', 'tX') WHERE session_id = %s "
                     "AND seq = 7", (sid,))

    report, info = _reopened(pg_url, sid)
    assert [str(p) for p in report.problems] == [f"corrupt record: session {sid} seq 7: checksum mismatch"]
    assert info["envelope_count"] == 6  # the intact prefix


def test_a_record_with_a_good_checksum_but_the_wrong_shape_is_corrupt_not_a_crash(pg_url):
    """The PostgreSQL store decodes records with the same checks as SQLite (shape included)."""
    import psycopg

    from turnflow.runtime.store.records import checksum

    sid = _stored_session(pg_url, 3)
    with psycopg.connect(pg_url) as conn:
        text = conn.execute("SELECT record FROM turnflow_envelopes WHERE session_id = %s AND seq = 7",
                            (sid,)).fetchone()[0]
        rec = json.loads(text)
        rec["event_data"] = ["not", "a", "mapping"]
        bad = json.dumps(rec)
        conn.execute("UPDATE turnflow_envelopes SET record = %s, crc = %s WHERE session_id = %s AND seq = 7",
                     (bad, checksum(sid, 7, bad), sid))

    report, info = _reopened(pg_url, sid)
    assert [str(p) for p in report.problems] == [
        f"corrupt record: session {sid} seq 7: record has the wrong shape: `event_data` is missing or has the wrong type"]
    assert info["envelope_count"] == 6


def test_group_commit_shares_transactions_between_sessions(pg_url):
    async def go():
        store = _store(pg_url)
        hub = await Hub.open(store)
        sids = await asyncio.gather(*[_chain_session(hub, 10) for _ in range(20)])
        commits = store.commits
        await hub.aclose()
        return sids, commits

    sids, commits = asyncio.run(go())
    envelopes = 20 * (2 + 2 + 1 + 10)  # 2 invites, 2 acks, opened, 10 turns
    assert len(StoreReader(pg_url).logs()) == 20
    assert sum(len(v) for v in StoreReader(pg_url).logs().values()) == envelopes
    assert commits < envelopes / 3  # many envelopes per commit


def test_a_value_that_is_not_json_is_refused_before_anything_is_queued(pg_url):
    from turnflow.runtime.errors import ProtocolError

    async def go():
        hub = await Hub.open(_store(pg_url))
        sid = await _chain_session(hub, 1)
        with pytest.raises(ProtocolError, match="JSON"):
            await hub.post(Envelope(sid, hub.expected_next(sid), None, EV_TEXT, {"text": object()}))
        await hub.post(Envelope(sid, hub.expected_next(sid), None, EV_TEXT, {"text": "fine"}))
        n = hub.info(sid)["envelope_count"]
        await hub.aclose()
        return sid, n

    sid, n = asyncio.run(go())
    assert [s for s, _ in StoreReader(pg_url).logs()[sid]] == list(range(1, n + 1))


def test_schema_version_is_checked(pg_url):
    import psycopg

    _store(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE turnflow_schema SET version = 99")
    with pytest.raises(StoreError, match="unsupported store schema version 99"):
        _store(pg_url)


def test_claims_are_exclusive_under_contention(pg_url):
    store = _store(pg_url, worker="loader")
    PostgresTaskQueue(store).load([Task(f"t{i:03d}", f"task {i}", {}, i + 1) for i in range(120)], "h")
    store.close()
    got: dict[str, list[str]] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker(name: str) -> None:
        s = _store(pg_url, worker=name)
        q = PostgresTaskQueue(s)
        mine = []
        barrier.wait()
        while True:
            claims = q.claim(name, 3, 30)
            if not claims:
                break
            for c in claims:
                mine.append(c.id)
                assert q.finish(name, c.id, "done", {"id": c.id})
        s.close()
        with lock:
            got[name] = mine

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    claimed = [tid for ids in got.values() for tid in ids]
    assert sorted(claimed) == [f"t{i:03d}" for i in range(120)]  # every task once, none twice
    assert sum(1 for ids in got.values() if ids) >= 2  # the workers really competed


def _lease_runs_out(url, task_id):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        held = conn.execute("UPDATE turnflow_tasks SET lease_until = clock_timestamp() - interval '1 second' "
                            "WHERE id = %s AND state = 'running' AND lease_until > clock_timestamp() RETURNING id",
                            (task_id,)).fetchall()
    assert held == [(task_id,)]  # it was held under a lease that had not run out yet


def test_an_expired_lease_is_taken_over_and_the_old_holder_can_no_longer_write(pg_url):
    """Worker A holds a task and wrote part of its session, then stalls past its lease (alive,
    so not detected as dead); worker B claims the task, hydrates the session and finishes it;
    A's next append is refused in the commit's own transaction, and so is its finish."""
    from batch_helpers import SPEC

    from turnflow.runtime.agents.function import FunctionAgent
    from turnflow.runtime.batch import BatchWorker

    spec = {**SPEC, "knobs": {**SPEC["knobs"], "graph": {**SPEC["knobs"]["graph"], "max_turns": 4}}}
    loader = _store(pg_url, worker="loader")
    PostgresTaskQueue(loader).load([Task("only", "x", {}, 1)], "h")
    loader.close()

    async def as_a():
        store = _store(pg_url, worker="host-a:1:aaaa")
        q = PostgresTaskQueue(store)
        [claim] = q.claim("host-a:1:aaaa", 1, 0.5)
        hub = Hub(store)  # not hydrated: a worker's hub
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs=spec["knobs"], labels={"task_id": claim.id})
        await hub.ack(md.session_id, "b")
        await hub.ack(md.session_id, "c")
        await hub.post(Envelope(md.session_id, "a", None, EV_TEXT, {"text": "from A"}))
        return store, q, hub, md.session_id

    async def main():
        store_a, q_a, hub_a, sid = await as_a()
        # A's lease (0.5 s) runs out while A is still alive: moved into the past on the
        # database's clock (the one leases are read against) instead of waiting for it
        _lease_runs_out(pg_url, "only")
        store_b = _store(pg_url, worker="host-b:1:bbbb")
        qb = PostgresTaskQueue(store_b)
        bw = BatchWorker(store_b, qb, spec, lambda: {n: FunctionAgent(lambda m, t: "from B", n) for n in "abc"},
                         worker="host-b:1:bbbb", concurrency=2, lease=5)
        await bw.run()
        store_b.close()
        with pytest.raises(LeaseLost):
            await hub_a.post(Envelope(sid, hub_a.expected_next(sid), None, EV_TEXT, {"text": "A again"}))
        assert not q_a.finish("host-a:1:aaaa", "only", "done", {})
        store_a.close()
        return bw.outcomes, sid

    outcomes, sid = asyncio.run(main())
    assert [(o.id, o.status, o.resumed, o.session_id) for o in outcomes] == [("only", "done", True, sid)]
    logs = check_exactly_once(StoreReader(pg_url), ["only"])
    texts = StoreReader(pg_url).query("", "SELECT COALESCE((record::jsonb) -> 'event_data' ->> 'text', "
                                          "(record::jsonb) -> 'event_data' ->> 'body') FROM turnflow_envelopes "
                                          "WHERE event_type IN ('text', 'packet') ORDER BY seq")
    assert [t for (t,) in texts] == ["from A", "from B", "from B", "from B"]
    assert len(logs[sid]) == 2 + 2 + 1 + 4 + 1


def test_kill_9_of_one_of_several_workers(pg_url, tmp_path):
    files = write_batch(tmp_path, 16)
    ids = [f"t{i:03d}" for i in range(16)]
    reader = StoreReader(pg_url)
    # A is slow (12 turns of 0.1 s a session), so it is surely half way through sessions when killed
    a = start(files, pg_url, "--concurrency", "4", "--lease", "2", "--format", "json", delay=0.1)

    def a_is_working():
        try:
            return any(t[0] == "running" and t[1] for t in reader.tasks().values())
        except Exception:
            return False

    assert wait_for(a_is_working, timeout=60)
    b = start(files, pg_url, "--concurrency", "4", "--lease", "2", "--format", "json", delay=0.01)

    def b_is_working():  # a task held by a worker other than A (worker ids are host:pid:random)
        try:
            workers = reader.query("", "SELECT worker FROM turnflow_tasks WHERE state = 'running'")
        except Exception:
            return False
        return any(w and f":{a.pid}:" not in w for (w,) in workers)

    assert wait_for(b_is_working, timeout=60)
    a.kill()
    a.communicate(timeout=30)
    out, err = b.communicate(timeout=120)
    assert b.returncode == 0, err
    held_by_a = [t for t in reader.tasks().values() if t[0] == "running"]
    assert held_by_a == []
    lines = [json.loads(x) for x in out.splitlines()]
    assert any(x["resumed"] for x in lines)  # B continued at least one of A's sessions
    check_exactly_once(reader, ids)
    res = run_to_end(files, pg_url, "--format", "json")  # and a later run has nothing left to do
    assert res.returncode == 0 and all(json.loads(x)["skipped"] for x in res.stdout.splitlines())


def _held_tasks(url, worker, n, total):
    """`total` tasks, the first `n` running under `worker` with sessions s0..s{n-1}."""
    import psycopg

    _store(url, worker=worker).close()
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO turnflow_tasks (id, ord, context, spec_hash, state, worker, session_id) "
                        "VALUES (%s, %s, '{}', 'h', %s, %s, %s)",
                        [(f"t{i}", i, "running" if i < n else "pending", worker if i < n else None,
                          f"s{i}" if i < n else None) for i in range(total)])
        conn.execute("ANALYZE turnflow_tasks")


def test_a_group_commit_reaches_task_rows_by_index_not_by_scanning_the_task_list(pg_url):
    """The commit statement's lease checks, bindings and finishes probe the task rows by key: its
    cost does not grow with the task list (a scan made each commit O(tasks))."""
    import psycopg

    from turnflow.runtime.store.postgres import _COMMIT_HELD

    _held_tasks(pg_url, "w1", 64, 5000)
    params = {"s": json.dumps([{"sid": "new", "task": "t4000", "rec": "{}", "crc": 0}]),
              "e": json.dumps([{"g": i, "sid": f"s{i}", "seq": 1, "ev": "text", "rec": "{}", "crc": 0}
                               for i in range(40)]),
              "t": json.dumps([{"sid": "s1", "rec": "{}"}]), "f": json.dumps([{"id": "t50", "state": "done",
                                                                            "result": "{}"}]),
              "w": "w1", "s_tasks": ["t4000"], "e_sids": [f"s{i}" for i in range(40)], "t_sids": ["s1"],
              "f_ids": ["t50"]}
    with psycopg.connect(pg_url) as conn:  # in a transaction that is rolled back: nothing is written
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + _COMMIT_HELD, params))
        conn.rollback()
    assert "turnflow_tasks" in plan
    assert "Seq Scan on turnflow_tasks" not in plan, plan


def _env(sid, seq):
    env = Envelope(sid, "a", None, EV_TEXT, {"text": f"{sid}:{seq}"})
    env.seq = seq
    env.envelope_id = f"e-{sid}-{seq}"
    env.created_at = 1.0
    return env


def _units(*envs):
    from turnflow.runtime.store.records import CommitUnits, envelope_row

    units = CommitUnits()
    for env, gseq in envs:
        units.rows.append(envelope_row(env, gseq))
        units.envelopes.append(env)
    return units


def test_a_statement_that_fails_is_retried_session_by_session(pg_url):
    """One bad row (a global sequence number already in the log) fails only its own session's
    part of the group; the other session's envelopes are written."""
    _held_tasks(pg_url, "w1", 2, 2)
    store = _store(pg_url, worker="w1")

    async def go():
        assert await store.commit_group(_units((_env("s0", 1), 1))) == {}
        # gseq 1 again: a unique violation
        return await store.commit_group(_units((_env("s0", 2), 1), (_env("s1", 1), 3)))

    refused = asyncio.run(go())
    store.close()
    assert set(refused) == {"s0"} and isinstance(refused["s0"], StoreError)
    assert "cannot write" in str(refused["s0"])
    assert store.batch_failures  # the whole statement failed first
    assert {s: [q for q, _ in log] for s, log in StoreReader(pg_url).logs().items()} == {"s0": [1], "s1": [1]}


def test_a_finish_queued_with_its_sessions_rows_waits_for_the_next_statement(pg_url):
    """A task is recorded finished only in a later statement than its session's rows (one statement
    cannot both share-lock and update a task row); both are written, the finish reports True."""
    import psycopg

    _held_tasks(pg_url, "w1", 1, 1)
    store = _store(pg_url, worker="w1")

    async def go():
        written = store.commit_group(_units((_env("s0", 1), 1)))
        finished = store.finish_task("t0", "done", {"id": "t0"}, "s0")
        return await written, await finished, store.commits

    refused, finished, commits = asyncio.run(go())
    store.close()
    assert refused == {} and finished is True
    assert commits == 2
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT state, worker FROM turnflow_tasks WHERE id = 't0'").fetchone() == ("done", None)
    assert [q for q, _ in StoreReader(pg_url).logs()["s0"]] == [1]


def test_a_claim_reads_index_ranges_not_the_whole_task_list(pg_url):
    """Claiming costs O(n) in the tasks it takes: the pending and the lapsed tasks are each an
    index range on (state, ord); an `OR` of the two made every claim scan and sort the whole list."""
    import psycopg

    from turnflow.runtime.task_queue import _CLAIM_PG

    _held_tasks(pg_url, "w1", 64, 5000)
    with psycopg.connect(pg_url) as conn:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, COSTS OFF) " + _CLAIM_PG,
                                                    {"w": "w2", "lease": 30.0, "n": 8}))
        conn.rollback()
    assert "Seq Scan on turnflow_tasks" not in plan and "turnflow_tasks_by_state" in plan, plan


def test_a_claim_takes_lapsed_and_pending_tasks_in_file_order(pg_url):
    import psycopg

    _held_tasks(pg_url, "w1", 3, 6)  # t0-t2 running under w1, t3-t5 pending
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE turnflow_tasks SET lease_until = clock_timestamp() - interval '1 s' WHERE id = 't1'")
        conn.execute("UPDATE turnflow_tasks SET lease_until = clock_timestamp() + interval '60 s' "
                     "WHERE id IN ('t0', 't2')")
    store = _store(pg_url, worker="w2")
    q = PostgresTaskQueue(store)
    first = [(c.id, c.session_id) for c in q.claim("w2", 2, 30)]
    rest = [c.id for c in q.claim("w2", 10, 30)]
    store.close()
    assert first == [("t1", "s1"), ("t3", None)]  # the lapsed one first by file order, keeping its session
    assert rest == ["t4", "t5"]


def test_a_single_run_on_postgresql_touches_only_its_own_session(pg_url, tmp_path):
    """`turnflow run` without --tasks on a shared database: it neither hydrates the other sessions
    nor completes a close one of them left pending (that session may be a batch worker's)."""
    import subprocess
    import sys

    import psycopg
    from batch_helpers import write_batch

    files = write_batch(tmp_path, 1)

    async def pending_close():  # a session whose log asked for a close that was never written
        hub = await Hub.open(_store(pg_url))
        knobs = {"graph": {**CHAIN, "max_turns": 1}}
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs=knobs)
        await hub.ack(md.session_id, "b")
        await hub.ack(md.session_id, "c")
        await hub.post(Envelope(md.session_id, "a", None, EV_TEXT, {"text": "only turn"}))
        await hub.aclose()
        return md.session_id

    other = asyncio.run(pending_close())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM turnflow_envelopes WHERE session_id = %s AND event_type = 'session.closed'",
                     (other,))
        before = conn.execute("SELECT COUNT(*) FROM turnflow_envelopes WHERE session_id = %s", (other,)).fetchone()[0]
    res = subprocess.run([sys.executable, "-m", "turnflow", "run", files["flow"], "--agents", files["agents"],
                          "--store", pg_url, "--quiet"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    with psycopg.connect(pg_url, autocommit=True) as conn:
        after = conn.execute("SELECT COUNT(*) FROM turnflow_envelopes WHERE session_id = %s", (other,)).fetchone()[0]
        sessions = conn.execute("SELECT COUNT(*) FROM turnflow_sessions").fetchone()[0]
    assert after == before  # left as it was
    assert sessions == 2  # and the run's own session is there


def test_every_shape_of_the_commit_statement_runs(pg_url):
    """The committer picks the statement by the kinds of rows it carries; every one of the shapes
    is valid SQL on a real server and, given one row of each kind it carries, writes it."""
    import itertools

    import psycopg

    from turnflow.runtime.store.postgres import commit_sql

    _held_tasks(pg_url, "w1", 2, 3)  # t0, t1 running under w1 with sessions s0, s1; t2 pending
    with psycopg.connect(pg_url, autocommit=True) as conn:  # s0's record: its envelope 1 continues a stored session
        conn.execute("INSERT INTO turnflow_sessions (session_id, task_id, record, crc) VALUES ('s0', 't0', '{}', 0)")
    with psycopg.connect(pg_url) as conn:
        for held, *kinds in itertools.product((True, False), repeat=5):
            sessions, envelopes, telemetry, finishes = kinds
            if finishes and not held:
                continue  # only a worker's store records finished tasks
            params = {"s": json.dumps([{"sid": "new", "task": None, "rec": "{}", "crc": 0}] if sessions else []),
                      "e": json.dumps([{"g": 7, "sid": "s0", "seq": 1, "ev": "text", "rec": "{}", "crc": 0}]
                                      if envelopes else []),
                      "t": json.dumps([{"sid": "s0", "rec": "{}"}] if telemetry else []),
                      "f": json.dumps([{"id": "t1", "state": "done", "result": "{}"}] if finishes else []),
                      "w": "w1", "s_tasks": [], "e_sids": ["s0"] if envelopes else [], "t_sids": ["s0"],
                      "f_ids": ["t1"] if finishes else []}
            got = sorted(conn.execute(commit_sql(held, *kinds), params).fetchall())
            want = sorted(([(0, "new")] if sessions else []) + ([(1, "7")] if envelopes else [])
                          + ([(2, "t1")] if finishes else []) + ([(3, "s0")] if envelopes else []))
            tel = conn.execute("SELECT COUNT(*) FROM turnflow_telemetry").fetchone()[0]
            conn.rollback()
            assert (got, tel) == (want, 1 if telemetry else 0), (held, kinds)


def test_a_waiting_worker_is_told_at_once_when_a_task_is_finished_or_given_back(pg_url):
    """A worker with nothing left to claim waits on a LISTEN connection: a task finished through
    the group commit, or given back, wakes it at once instead of after its poll interval."""
    _held_tasks(pg_url, "w1", 2, 2)
    waiter_store = _store(pg_url, worker="w2")
    waiter = PostgresTaskQueue(waiter_store)
    waiter.block_until_change(5.0)  # the first call starts listening and returns at once
    worker = _store(pg_url, worker="w1")
    q = PostgresTaskQueue(worker)

    def waited(action) -> float:
        t0 = time.monotonic()
        th = threading.Thread(target=waiter.block_until_change, args=(5.0,))
        th.start()
        # (no pause for the thread to start waiting: a notification sent before it waits is
        # read from the listening connection at once; one never sent makes it wait 5 s)
        action()
        th.join(10)
        return time.monotonic() - t0

    async def finish_grouped():
        return await q.finish_grouped("w1", "t0", "done", {"id": "t0"}, "s0")

    assert waited(lambda: asyncio.run(finish_grouped())) < 2.0
    assert waited(lambda: q.release_task("w1", "t1")) < 2.0
    waiter.close()
    waiter_store.close()
    worker.close()
