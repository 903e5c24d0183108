"""`run_session`'s result: every turn of the session's log, built from what the run saw (the
log is not read and decoded again at the end), for a new session and a continued one."""

from __future__ import annotations

import asyncio

from runtime_helpers import run
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session, turns_of
from turnflow.runtime.store import SQLiteStore

PEOPLE = ["planner", "coder", "reviewer"]


class CountingStore(SQLiteStore):
    """A SQLite store that counts the envelopes read back out of it."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.decoded = 0

    def read_range(self, session_id, start=1, end=None):
        for e in super().read_range(session_id, start, end):
            self.decoded += 1
            yield e


def spec(turns):
    graph = {"initial_speaker": "planner", "max_turns": turns,
             "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}},
                              "priority": 0}],
             "default_target": {"name": "terminate", "args": {"reason": "after_work"}}}
    return {"kind": "workflow", "name": "long", "participants": [
        {"agent_id": p, "role": "initiator" if i == 0 else "participant", "order": i} for i, p in enumerate(PEOPLE)],
        "knobs": {"graph": graph}, "expectations": [], "ttl_seconds": None, "tools": []}


def agents():
    return {p: FunctionAgent(lambda msg, tools: f"{tools.agent_id} read {len(msg)}", p) for p in PEOPLE}


def test_the_result_holds_every_turn_without_reading_the_log_again():
    async def inner():
        store = CountingStore(":memory:")
        hub = await Hub.open(store)
        res = await run_session(hub, spec(60), agents())
        decoded = store.decoded
        log = turns_of(hub.read(res.session_id))
        await hub.aclose()
        return res, decoded, log
    res, decoded, log = run(inner())
    assert (res.close_reason, len(res.turns)) == ("max_turns", 60)
    assert res.turns == log
    assert [t["speaker"] for t in res.turns[:4]] == ["planner", "coder", "reviewer", "planner"]
    assert decoded < 30  # (the first view reads the short log once; the result read all 60 turns again)


def test_a_continued_session_reports_its_earlier_turns_too():
    async def inner():
        hub = await Hub.open(SQLiteStore(":memory:"))
        stuck = asyncio.Event()

        async def third_turn_hangs(msg, tools):
            if len(msg) >= 2:
                stuck.set()
                await asyncio.Event().wait()  # cancelled from outside, like a batch worker losing its lease
            return "first part"
        first = asyncio.ensure_future(run_session(
            hub, spec(6), {"planner": FunctionAgent(third_turn_hangs, "planner"),
                           "coder": ScriptedAgent("coder", [{"say": "c1"}]),
                           "reviewer": ScriptedAgent("reviewer", [{"say": "r1"}])}, keep_open=True))
        await stuck.wait()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        sid = next(iter(hub.sessions))
        assert hub.metadata(sid).state.value == "active"
        second = await run_session(hub, spec(6), agents(), session_id=sid)
        log = turns_of(hub.read(sid))
        await hub.aclose()
        return second, log
    second, log = run(inner())
    assert second.close_reason == "max_turns"
    assert second.turns == log and len(log) == 6
    assert [t["body"] for t in second.turns[:3]] == ["first part", "c1", "r1"]
