"""Child process of the crash test: runs a long workflow session on a file store and prints the
session id, then the sequence number of every envelope right after its post returned."""

from __future__ import annotations

import asyncio
import sys

from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, packet
from turnflow.runtime.hub import Hub
from turnflow.runtime.store import SQLiteStore

GRAPH = {"initial_speaker": "a", "transitions": [
    {"when": {"name": "from_speaker", "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 0},
    {"when": {"name": "from_speaker", "args": {"agent_id": "b"}}, "then": {"name": "agent", "args": {"agent_id": "c"}}, "priority": 0},
    {"when": {"name": "from_speaker", "args": {"agent_id": "c"}}, "then": {"name": "agent", "args": {"agent_id": "a"}}, "priority": 0}],
    "default_target": {"name": "terminate", "args": {"reason": "after_work"}}, "max_turns": None}


def nth(i: int, expected: str, sid: str) -> Envelope:
    """The i-th post of the deterministic stream."""
    if i % 5 == 4:
        return Envelope(sid, "abc"[i % 3], None, EV_CONTEXT_SET, {"set": {"ctx": i}, "delete": ["n"] if i % 10 == 9 else []})
    if i % 2:
        return Envelope(sid, expected, None, EV_PACKET, packet(f"round {i}", set={"n": i}))
    return Envelope(sid, expected, None, EV_TEXT, {"text": f"turn {i}"})


async def open_session(hub: Hub):
    md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": GRAPH},
                                expectations=[{"name": "turn_within", "params": {"seconds": 10 ** 9}, "on_violation": "warn"}])
    await hub.ack(md.session_id, "b")
    await hub.ack(md.session_id, "c")
    return md


async def post_n(hub: Hub, sid: str, start: int, n: int, report=None) -> None:
    for i in range(start, start + n):
        env = await hub.post(nth(i, hub.expected_next(sid), sid))
        if report:
            report(env.seq)


async def main(path: str, count: int) -> None:
    hub = await Hub.open(SQLiteStore(path))
    md = await open_session(hub)
    print(md.session_id, flush=True)

    def report(seq: int) -> None:
        sys.stdout.write(f"{seq}\n")
        sys.stdout.flush()
    await post_n(hub, md.session_id, 0, count, report)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
