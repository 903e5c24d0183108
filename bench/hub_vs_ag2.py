"""Hub end to end: the same 3-agent round-robin workflow session, N text posts through
turnflow's hub with the durable SQLite write-ahead log (a file; every post committed before
it is folded) and through AG2 1.2.1's in-process hub (MemoryKnowledgeStore), in one run.

    PYTHONPATH=src python3 bench/hub_vs_ag2.py [--posts 5000] [--durability process|full]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
import time

from ag2 import network as n
from ag2.knowledge import MemoryKnowledgeStore

from turnflow.runtime.envelope import EV_TEXT, Envelope
from turnflow.runtime.hub import Hub
from turnflow.runtime.store import SQLiteStore


def rr_graph(people, max_turns):
    return {"initial_speaker": people[0],
            "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}},
                             "priority": 0}],
            "default_target": {"name": "terminate", "args": {"reason": "round_robin_complete"}},
            "max_turns": max_turns}


async def ours(posts: int, path: str, durability: str) -> float:
    hub = await Hub.open(SQLiteStore(path, durability=durability))
    people = ["planner", "coder", "reviewer"]
    md = await hub.open_session("workflow", people, knobs={"graph": rr_graph(people, posts)})
    for p in people[1:]:
        await hub.ack(md.session_id, p)
    sid = md.session_id
    t0 = time.perf_counter()
    for i in range(posts):
        await hub.post(Envelope(sid, people[i % 3], None, EV_TEXT, {"text": f"t{i}"}))
    dt = time.perf_counter() - t0
    assert (md.state.value, md.close_reason) == ("closed", "max_turns"), md
    await hub.aclose()
    return dt


class AutoAck(n.BaseHubListener):
    def __init__(self, hub):
        self.hub = hub

    async def on_envelope_posted(self, envelope, metadata):
        if envelope.event_type == n.EV_CHANNEL_INVITE:
            for invitee in envelope.audience:
                await self.hub.post_envelope(n.Envelope(envelope.channel_id, invitee, [envelope.sender_id],
                                                        n.EV_CHANNEL_INVITE_ACK, {}))


async def theirs(posts: int) -> float:
    hub = await n.Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0, expectation_sweep_interval=0)
    hub.register_listener(AutoAck(hub))
    ids = [(await hub.register_identity(n.Passport(name=x), n.Resume())).agent_id
           for x in ("planner", "coder", "reviewer")]
    meta = await hub.create_channel(creator_id=ids[0], manifest_type="workflow", participants=ids,
                                    knobs={"graph": rr_graph(ids, posts)})
    cid = meta.channel_id
    t0 = time.perf_counter()
    for i in range(posts):
        await hub.post_envelope(n.Envelope(cid, ids[i % 3], None, n.EV_TEXT, {"text": f"t{i}"}))
    dt = time.perf_counter() - t0
    md = await hub.get_channel(cid)
    assert (md.state.value, md.close_reason) == ("closed", "max_turns"), md
    await hub.close()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--posts", type=int, default=5000)
    ap.add_argument("--durability", choices=("process", "full"), default="process")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs for each side, interleaved")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    ours_t, theirs_t = [], []
    with tempfile.TemporaryDirectory(prefix="turnflow-bench-") as tmp:
        for k in range(args.repeat):
            ours_t.append(asyncio.run(ours(args.posts, os.path.join(tmp, f"hub{k}.db"), args.durability)))
            theirs_t.append(asyncio.run(theirs(args.posts)))
    a, b = args.posts / min(ours_t), args.posts / min(theirs_t)
    print(f"posts: {args.posts} per session (3-agent round robin workflow)")
    print(f"turnflow hub, durable SQLite WAL ({args.durability}): {a:,.0f} posts/s ({1e6 / a:.0f} us/post)")
    print(f"ag2 1.2.1 in-process hub (MemoryKnowledgeStore): {b:,.0f} posts/s ({1e6 / b:.0f} us/post)")
    print(f"ratio: {a / b:.2f}")


if __name__ == "__main__":
    main()
