"""A wall-clock step (an NTP correction, a laptop waking, a VM restored) is not time passing
(issue #33, item 3): expectations, TTLs and a SQLite store's task leases run on the runtime's
steady clock (`runtime/clock.py`: the wall clock read once, plus monotonic time), so a +1 h step
closes no in-flight session and frees no lease, while an hour that really passes still counts."""

from __future__ import annotations

import socket
import sqlite3
import time

import pytest

from runtime_helpers import active, run

from turnflow.runtime.clock import SteadyClock
from turnflow.runtime.hub import Hub
from turnflow.runtime.session import SessionState
from turnflow.runtime.store import SQLiteStore
from turnflow.runtime.task_queue import SQLiteTaskQueue
from turnflow.runtime.tasks import Task


class Wall:
    """A wall clock and a monotonic clock under the test's control."""

    def __init__(self) -> None:
        self.wall, self.mono = 1_700_000_000.0, 5_000.0

    def step(self, seconds: float) -> None:  # the wall clock jumps, no time passes
        self.wall += seconds

    def wait(self, seconds: float) -> None:  # time passes: both move
        self.wall += seconds
        self.mono += seconds


def test_a_one_hour_wall_step_closes_no_in_flight_session_but_an_hour_passing_does():
    w = Wall()
    clock = SteadyClock(wall=lambda: w.wall, mono=lambda: w.mono)

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=clock)
        md = await active(hub)  # workflow defaults: turn_within 120 warn, 600 auto_close
        w.wait(5)
        w.step(3600)
        assert await hub.sweep() == []
        assert md.state == SessionState.ACTIVE
        w.step(-7200)  # and back, past where it started
        assert await hub.sweep() == []
        w.wait(601)  # ten minutes really pass: the turn is overdue
        await hub.sweep()
        assert (md.state, md.close_reason) == (SessionState.CLOSED, "expectation_violated:turn_within")
        await hub.aclose()
    run(go())


def test_every_hub_runs_on_the_steady_clock_unless_given_another():
    """What the test above relies on for `run`, `run --tasks` and `serve`, which make their hubs
    without a clock: read straight from the wall clock, the same step closes the session."""
    from turnflow.runtime.clock import STEADY

    assert Hub(SQLiteStore(":memory:")).clock is STEADY
    w = Wall()

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=lambda: w.wall)  # the wall clock itself
        md = await active(hub)
        w.step(3600)
        await hub.sweep()
        assert md.close_reason == "expectation_violated:turn_within"  # the failure the steady clock prevents
        await hub.aclose()
    run(go())


def test_stored_times_are_epoch_seconds_from_the_wall_clock_at_start():
    w = Wall()
    clock = SteadyClock(wall=lambda: w.wall, mono=lambda: w.mono)
    assert clock() == w.wall
    w.wait(2.5)
    assert clock() == w.wall  # no step: the wall clock's reading
    w.step(3600)
    assert clock() == w.wall - 3600  # a step: the time that passed since start, not the jump
    real = SteadyClock()
    assert abs(real() - time.time()) < 1.0


def test_a_wall_step_frees_no_lease_of_a_running_sqlite_batch(tmp_path, monkeypatch):
    store = SQLiteStore(str(tmp_path / "hub.db"))
    try:
        queue = SQLiteTaskQueue(store)
        queue.load([Task("a", "one", {}, 1), Task("b", "two", {}, 2)], "h")
        assert [c.id for c in queue.claim("w1", 1, 30.0)] == ["a"]
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 3600)  # the wall clock jumps an hour
        again = [c.id for c in queue.claim("w1", 2, 30.0)]
        assert again == ["b"], again  # "a" is still held: its lease did not run out
        assert "a" in queue.renew("w1", 30.0)
        con = sqlite3.connect(tmp_path / "hub.db")
        attempts = dict(con.execute("SELECT id, attempts FROM turnflow_tasks").fetchall())
        con.close()
        assert attempts == {"a": 1, "b": 1}
    finally:
        store.close()


def _held_by_a_gone_process(tmp_path, worker, ahead):
    """A store whose task "a" a process that is gone still holds: its worker id `worker`, its lease
    written by a clock `ahead` seconds ahead of this one (a wall step back between the two runs, or
    another machine's clock)."""
    store = SQLiteStore(str(tmp_path / "hub.db"))
    queue = SQLiteTaskQueue(store)
    queue.load([Task("a", "one", {}, 1), Task("b", "two", {}, 2)], "h")
    assert [c.id for c in queue.claim(worker, 1, 30.0)] == ["a"]
    store.db.execute("UPDATE turnflow_tasks SET lease_until = lease_until + ? WHERE id = 'a'", (ahead,))
    return store, queue


@pytest.mark.parametrize("worker, ahead", [
    ("old-container:4242:0bad1dea", 0.0),  # another hostname (a container started again): the 30 s lease
    ("old-container:4242:0bad1dea", 3600.0),  # ... written by a clock an hour ahead
    (f"{socket.gethostname()}:1:0bad1dea", 3600.0),  # this host, its pid taken since (a reboot)
])
def test_a_sqlite_store_s_tasks_held_by_another_process_are_taken_over_at_once(tmp_path, worker, ahead):
    """One process writes a SQLite store at a time (its lock): a task another process holds when
    this one has the store is held by nobody, whatever its lease says. Before, a re-run waited for
    that lease to run out by its own clock — an hour, after a wall step back of an hour."""
    from turnflow.runtime.task_queue import new_worker_id

    store, _ = _held_by_a_gone_process(tmp_path, worker, ahead)
    try:
        got = SQLiteTaskQueue(store).claim(new_worker_id(), 8, 30.0)  # the next process's task list
        assert [(c.id, c.attempts) for c in got] == [("a", 2), ("b", 1)]
    finally:
        store.close()


def test_workers_of_this_process_keep_their_leases(tmp_path):
    """The rule is about other processes: two workers of one process (ids of this host and pid, or
    not of that shape) still respect each other's leases."""
    from turnflow.runtime.task_queue import new_worker_id

    for first in (new_worker_id(), "w1"):
        store, _ = _held_by_a_gone_process(tmp_path, first, 0.0)
        try:
            assert [c.id for c in SQLiteTaskQueue(store).claim(new_worker_id(), 8, 30.0)] == ["b"]
        finally:
            store.close()
            for f in tmp_path.iterdir():
                f.unlink()


def test_a_rerun_after_a_wall_step_back_does_not_wait_for_the_gone_process_s_lease(tmp_path):
    """The same through `turnflow run --tasks`: a batch whose worker died holding a task, its lease
    an hour ahead of this run's clock, is finished by the next run at once (it used to wait an hour)."""
    import json
    import subprocess

    from batch_helpers import StoreReader, check_exactly_once, run_to_end, write_batch

    files = write_batch(tmp_path, 3)
    db = str(tmp_path / "hub.db")
    done = run_to_end(files, db, "--format", "json", timeout=60)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(db)
    con.execute("UPDATE turnflow_tasks SET state = 'running', result = NULL, worker = 'old-container:4242:0bad1dea', "
                "lease_until = ? WHERE id = 't001'", (time.time() + 3600,))
    con.commit()
    con.close()
    try:
        again = run_to_end(files, db, "--format", "json", timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("the re-run waited for the lease of a process that is gone") from None
    assert again.returncode == 0, again.stderr
    lines = {x["id"]: x for x in map(json.loads, again.stdout.splitlines())}
    assert (lines["t001"]["status"], lines["t001"]["skipped"], lines["t001"]["resumed"]) == ("done", False, True)
    check_exactly_once(StoreReader(db), ["t000", "t001", "t002"])


_LATER = ("import runpy, sys, time\n"
          "_wall = time.time\n"
          "time.time = lambda: _wall() + 7200  # this process runs two hours after the one before\n"
          "sys.argv = ['turnflow', *sys.argv[1:]]\n"
          "runpy.run_module('turnflow', run_name='__main__')\n")


@pytest.mark.parametrize("ttl", [None, 600])
def test_a_batch_continued_hours_later_does_not_count_the_hours_against_its_turns(tmp_path, ttl):
    """A batch stopped (Ctrl-C, a database or model endpoint away longer than the worker waits: exit
    2) and run again hours later — or after the wall clock stepped forward — continues its sessions.
    Their turns are asked again from the start, so the time no worker held them is not time an
    agent took: before, every continued session closed at once `expectation_violated:turn_within`
    (the workflow's default 600 s auto_close) and its task was failed for good. Nor is it the
    session's lifetime: with the flow's `ttl` of 600 s, they expired at once (`ttl_expired`)."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from batch_helpers import StoreReader, check_exactly_once, cli, interrupt, start, write_batch
    from pg_server import wait_for

    files = write_batch(tmp_path, 2)
    if ttl is not None:
        from batch_helpers import SPEC

        (tmp_path / "flow.json").write_text(json.dumps({**SPEC, "ttl_seconds": ttl}))
    # the agents: TF_DELAY seconds a turn, and TF_FIRST more on the first turn a process asks of a
    # session (a model taking its time): the sweeper (every 1 s) looks while that turn runs
    (tmp_path / "tf_batch_agents.py").write_text(
        "import os, time\n"
        "asked = set()\n"
        "def speak(msg, tools):\n"
        "    if tools.session_id not in asked:\n"
        "        asked.add(tools.session_id)\n"
        "        time.sleep(float(os.environ.get('TF_FIRST', '0')))\n"
        "    time.sleep(float(os.environ.get('TF_DELAY', '0')))\n"
        "    return f'{tools.agent_id} says {len(msg)}'\n")
    db = str(tmp_path / "hub.db")
    reader = StoreReader(db)

    def mid_session():
        try:
            logs = reader.logs().values()
        except Exception:  # the store is still being made
            return False
        return len(logs) == 2 and all(sum(et in ("text", "packet") for _, et in log) >= 1 for log in logs)
    proc = start(files, db, "--concurrency", "2", delay=0.1)
    assert wait_for(mid_session, timeout=60)
    rc, _, err = interrupt(proc, signal.SIGINT)
    assert rc == 130, err
    assert {s for s, *_ in reader.tasks().values()} == {"pending"}  # both sessions left to continue
    # again, two hours later by the wall clock; the first turn asked of each session takes 1.5 s
    later = subprocess.run([sys.executable, "-c", _LATER, *cli(files, db, "--format", "json")[3:]],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "TF_DELAY": "0", "TF_FIRST": "1.5"})
    lines = [json.loads(x) for x in later.stdout.splitlines()]
    assert [(x["status"], x["close_reason"], x["resumed"]) for x in lines] == [("done", "max_turns", True)] * 2, \
        later.stderr
    assert later.returncode == 0
    check_exactly_once(reader, ["t000", "t001"])


@pytest.mark.parametrize("gap", [3600.0, -3600.0])
def test_a_hub_started_again_counts_the_time_before_it_stopped_not_the_gap(tmp_path, gap):
    """`turnflow serve` (or any hub) stopped and started again on its store: the turns in progress
    keep the time they had taken up to the store's last write, but the gap from it to the new start
    is not counted — downtime, a VM restored from a snapshot, a wall-clock step between
    the two processes either way. Before: an hour's gap closed every workflow session at the first
    sweep (`expectation_violated:turn_within`, the default 600 s auto_close); a clock an hour behind
    let a stuck turn go an hour more."""
    from runtime_helpers import FakeClock

    async def go():
        clock = FakeClock()
        db = str(tmp_path / "hub.db")
        hub = await Hub.open(SQLiteStore(db), clock=clock)
        md = await active(hub)  # workflow defaults: turn_within 120 warn, 600 auto_close
        clock.advance(100)
        await active(hub)  # the store's last write: the hub was running then
        await hub.aclose()
        clock.advance(gap)
        hub2 = await Hub.open(SQLiteStore(db), clock=clock)
        assert await hub2.sweep() == []
        assert hub2.metadata(md.session_id).state == SessionState.ACTIVE
        clock.advance(499)  # 599 s of the turn have passed with a hub running
        await hub2.sweep()  # (the warning at 120 s)
        assert hub2.metadata(md.session_id).state == SessionState.ACTIVE
        clock.advance(2)
        await hub2.sweep()
        assert hub2.metadata(md.session_id).close_reason == "expectation_violated:turn_within"
        await hub2.aclose()
    run(go())


def test_the_lifetime_a_continued_session_has_used_is_what_its_runs_held_it():
    """`held_seconds`: from the creation to the last envelope, less each gap before a run took the
    session up again (its agents' handshakes) — two interruptions of hours count nothing, the runs'
    own time counts whole, so a continued session whose runs used up its TTL still expires."""
    from turnflow.runtime.runner import held_seconds

    envelopes = [0.0, 0.0, 30.0, 100.0] + [5000.0, 5100.0, 5200.0] + [90000.0, 90050.0]
    handshakes = [0.1, 0.1, 0.2] + [4990.0, 4990.5] + [89990.0]  # three runs: one handshake per agent
    # 100 s, 210 s and 60 s held (each run from its handshakes), less the first run's 0.1 s before its own
    assert held_seconds(0.0, envelopes, handshakes) == pytest.approx(100.0 + 210.0 + 60.0 - 0.1)
    assert held_seconds(0.0, envelopes, []) == 90050.0  # without handshakes: every second counts
    assert held_seconds(0.0, [], [0.1]) == 0.0
    # a run's handshakes on a clock an hour behind (a step back between the runs): no gap below 0
    assert held_seconds(0.0, [0.0, 100.0, 150.0], [0.1, 100.0 - 3600]) == pytest.approx(150.0 - 0.1)
