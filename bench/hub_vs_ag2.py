"""Hub end to end vs AG2 1.2.1's hub, swept over session length and concurrency.

Every scenario runs the same 3-agent round-robin workflow sessions (`max_turns` = posts per
session) through both hubs in one process: turnflow's hub on its SQLite write-ahead log (a file;
every post committed before it returns) and AG2's `network.Hub` on a knowledge store (in memory,
or AG2's own SQLite store for durable-vs-durable). A session's whole life is timed: open, the
invites acked ("open"), then every text post up to the close by `max_turns` ("posts"); all the
sessions of a scenario are opened concurrently, then posted to concurrently (asyncio tasks).
Throughput is text posts per second, for the posts phase alone ([posts]) and for the whole
life ([life] = open + posts). Each repeat runs both sides back to back (alternating which goes first); the
reported ratio is the median of the per-repeat ratios of CPU time (theirs / ours: > 1 means
turnflow is faster), with wall-clock ratios beside them (the number that counts when fsync waits).

    PYTHONPATH=src python3 bench/hub_vs_ag2.py                      # the default sweep
    PYTHONPATH=src python3 bench/hub_vs_ag2.py --only concurrency --repeat 5
    PYTHONPATH=src python3 bench/hub_vs_ag2.py --only durable       # turnflow full vs AG2 SqliteKnowledgeStore

Scenarios: `length` — one session of 10 / 1,000 / 10,000 posts; `concurrency` — 1 / 100 / 10,000
concurrent sessions of 10 posts each; `durable` — 100 concurrent sessions of 10 posts with
turnflow `durability="full"` (fsync per group commit) vs AG2's `SqliteKnowledgeStore` (SQLite's
default synchronous=FULL). `--ours-only` measures turnflow alone (no AG2 needed), e.g. before
and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import statistics
import tempfile
import time

from turnflow.runtime.envelope import EV_TEXT, Envelope
from turnflow.runtime.hub import Hub
from turnflow.runtime.store import SQLiteStore

PEOPLE = ["planner", "coder", "reviewer"]


def rr_graph(people, max_turns):
    return {"initial_speaker": people[0],
            "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}},
                             "priority": 0}],
            "default_target": {"name": "terminate", "args": {"reason": "round_robin_complete"}},
            "max_turns": max_turns}


def clocks() -> tuple:
    return time.process_time(), time.perf_counter()


def since(t: tuple) -> tuple:
    c, w = clocks()
    return c - t[0], w - t[1]


async def ours(sessions: int, posts: int, path: str, durability: str) -> dict:
    """Open every session (invites acked), then post to all of them concurrently; both phases timed."""
    hub = await Hub.open(SQLiteStore(path, durability=durability))

    async def open_one():
        md = await hub.open_session("workflow", PEOPLE, knobs={"graph": rr_graph(PEOPLE, posts)})
        for p in PEOPLE[1:]:
            await hub.ack(md.session_id, p)
        return md

    async def post_all(md) -> None:
        sid = md.session_id
        for i in range(posts):
            await hub.post(Envelope(sid, PEOPLE[i % 3], None, EV_TEXT, {"text": f"t{i}"}))
        assert (md.state.value, md.close_reason) == ("closed", "max_turns"), md

    t = clocks()
    mds = await asyncio.gather(*(open_one() for _ in range(sessions)))
    opened = since(t)
    t = clocks()
    await asyncio.gather(*(post_all(md) for md in mds))
    posted = since(t)
    await hub.aclose()
    return {"open": opened, "posts": posted}


async def theirs(sessions: int, posts: int, store_kind: str, folder: str) -> int:
    from ag2 import network as n
    from ag2.knowledge import MemoryKnowledgeStore

    if store_kind == "sqlite":
        from ag2.knowledge.sqlite import SqliteKnowledgeStore
        store = SqliteKnowledgeStore(os.path.join(folder, "ag2.db"))
    else:
        store = MemoryKnowledgeStore()

    class AutoAck(n.BaseHubListener):
        async def on_envelope_posted(self, envelope, metadata):
            if envelope.event_type == n.EV_CHANNEL_INVITE:
                for invitee in envelope.audience:
                    await hub.post_envelope(n.Envelope(envelope.channel_id, invitee, [envelope.sender_id],
                                                       n.EV_CHANNEL_INVITE_ACK, {}))

    hub = await n.Hub.open(store, ttl_sweep_interval=0, expectation_sweep_interval=0)
    hub.register_listener(AutoAck())
    ids = [(await hub.register_identity(n.Passport(name=x), n.Resume())).agent_id for x in PEOPLE]

    async def open_one():
        return (await hub.create_channel(creator_id=ids[0], manifest_type="workflow", participants=ids,
                                         knobs={"graph": rr_graph(ids, posts)})).channel_id

    async def post_all(cid) -> None:
        for i in range(posts):
            await hub.post_envelope(n.Envelope(cid, ids[i % 3], None, n.EV_TEXT, {"text": f"t{i}"}))
        md = await hub.get_channel(cid)
        assert (md.state.value, md.close_reason) == ("closed", "max_turns"), md

    t = clocks()
    cids = await asyncio.gather(*(open_one() for _ in range(sessions)))
    opened = since(t)
    t = clocks()
    await asyncio.gather(*(post_all(c) for c in cids))
    posted = since(t)
    await hub.close()
    return {"open": opened, "posts": posted}


def scenario(label: str, sessions: int, posts: int, durability: str, peer: str, repeat: int, ours_only: bool) -> None:
    """Prints two lines: the posts phase alone, and the whole life (open + acks + posts + close)."""
    rows = []
    if not ours_only:  # both sides' modules are loaded before the first measured run (AG2's import
        import ag2.network  # noqa: F401  leaves ~200,000 objects that every full GC scans: the first
        import ag2.knowledge  # noqa: F401  run must not be the only one without them)
    with tempfile.TemporaryDirectory(prefix="turnflow-bench-") as tmp:
        for k in range(repeat):
            def run_ours(k=k):
                gc.collect()
                return asyncio.run(ours(sessions, posts, os.path.join(tmp, f"hub{k}.db"), durability))

            def run_theirs(k=k):
                gc.collect()
                folder = os.path.join(tmp, f"ag2-{k}")
                os.makedirs(folder, exist_ok=True)
                return asyncio.run(theirs(sessions, posts, peer, folder))
            if ours_only:
                rows.append((run_ours(), None))
            elif k % 2:
                b = run_theirs()
                rows.append((run_ours(), b))
            else:
                a = run_ours()
                rows.append((a, run_theirs()))
    total = sessions * posts
    for phase in ("posts", "life"):
        def t(r, i):  # (cpu, wall) of a phase
            return r["posts"][i] + (r["open"][i] if phase == "life" else 0)
        oc = statistics.median(t(r[0], 0) for r in rows)
        ow = statistics.median(t(r[0], 1) for r in rows)
        line = f"{label + (' [posts]' if phase == 'posts' else ' [life]'):<58} turnflow {total / oc:>8,.0f}/s CPU {total / ow:>8,.0f}/s wall"
        if not ours_only:
            tc = statistics.median(t(r[1], 0) for r in rows)
            tw = statistics.median(t(r[1], 1) for r in rows)
            cpu_ratio = statistics.median(t(r[1], 0) / t(r[0], 0) for r in rows)
            wall_ratio = statistics.median(t(r[1], 1) / t(r[0], 1) for r in rows)
            line += (f" | ag2 {total / tc:>7,.0f}/s CPU {total / tw:>7,.0f}/s wall"
                     f" | ratio CPU {cpu_ratio:5.2f}x wall {wall_ratio:5.2f}x")
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("length", "concurrency", "durable"), action="append")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lengths", type=int, nargs="*", default=[10, 1_000, 10_000])
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 100, 10_000])
    ap.add_argument("--posts", type=int, default=10, help="posts per session in the concurrency/durable sweeps")
    ap.add_argument("--durable-sessions", type=int, default=100)
    ap.add_argument("--ours-only", action="store_true")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    only = args.only or ["length", "concurrency", "durable"]
    print(f"median of {args.repeat} paired runs; ratio = AG2 time / turnflow time (> 1: turnflow faster)")
    if "length" in only:
        for n in args.lengths:
            scenario(f"1 session x {n:,} posts (process vs memory)", 1, n, "process", "memory", args.repeat,
                     args.ours_only)
    if "concurrency" in only:
        for c in args.concurrency:
            scenario(f"{c:,} sessions x {args.posts} posts (process vs memory)", c, args.posts, "process", "memory",
                     args.repeat, args.ours_only)
    if "durable" in only:
        scenario(f"{args.durable_sessions:,} sessions x {args.posts} posts (full vs ag2 sqlite)",
                 args.durable_sessions, args.posts, "full", "sqlite", args.repeat, args.ours_only)


if __name__ == "__main__":
    main()
