"""A wall-clock step (an NTP correction, a laptop waking, a VM restored) is not time passing
(issue #33, item 3): expectations, TTLs and a SQLite store's task leases run on the runtime's
steady clock (`runtime/clock.py`: the wall clock read once, plus monotonic time), so a +1 h step
closes no in-flight session and frees no lease, while an hour that really passes still counts."""

from __future__ import annotations

import sqlite3
import time

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
