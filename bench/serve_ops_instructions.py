"""Machine instructions per consulting session of `turnflow serve`'s ops, counted by valgrind's
callgrind: a figure that does not move with the machine's load, for changes to serve/ops.py and
serve/wire.py too small for bench/serve_vs_ag2.py's CPU-time pairs on a shared machine (10 ms
ticks on ~0.4 s a round, ±5-10 % between rounds at load 3-5).

In one process, without sockets or frames: a hub on SQLite (`durability="process"`, as served),
its `Ops`, 25 askers and 25 answerers on 10 connections (objects that keep what is sent), and 25
lanes of sessions run concurrently, each session the requests and receipts AG2 1.2.1's client sent
per consulting session in bench/serve_vs_ag2.py's workload (recorded from its frames): get_agent,
create_channel, the invitee's receipt and ack, the question, get_channel, names_for,
find_envelope_by_causation, can_send, three read_wal, the answer, get_channel of the closed
channel, receipts; every answer built as the server builds it (`frames.response`). The count is
(instructions at N2 sessions - at N1) / (N2 - N1): start-up, imports and the warm-up cancel out.
Repeatable to about 0.2 % (string hashing differs per process); frames' decoding, the WebSocket
layer and the kernel are not in it.

With `--hub`, the whole served hub instead: a `turnflow serve` process under callgrind, driven by
bench/serve_vs_ag2.py's AG2 client workload (its warm-up, then N1 or N2 sessions; 50 agents on 10
connections): every instruction the hub process runs per session, frames and WebSocket layer
included. The hub runs ~50x slower under valgrind, so its group commits and socket reads gather
more than in a timed run, and the figure moves by 1-3 % between runs (run it twice).

    PYTHONPATH=src python3 bench/serve_ops_instructions.py [--baseline REV] [--sessions 100 600] [--hub]
    PYTHONPATH=src python3 bench/serve_ops_instructions.py --run 1000    # CPU µs per session, no valgrind

Needs valgrind for counts; each count takes 10-40 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LANES = 25


class Conn:
    def __init__(self, name: str) -> None:
        self.endpoint_id = name
        self.agents: set[str] = set()
        self.out: list[str] = []

    def send(self, text: str) -> None:
        self.out.append(text)


async def workload(sessions: int, warmup: int = 20) -> float:
    """CPU seconds of `sessions` consulting sessions' ops (after `warmup` more), on a fresh hub."""
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve import frames
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import Registry, SQLiteBackend

    workdir = tempfile.mkdtemp()
    hub = await Hub.open(SQLiteStore(os.path.join(workdir, "hub.db")))
    ops = Ops(hub, Registry(SQLiteBackend(os.path.join(workdir, "hub.agents"))), Auth())
    conns = [Conn(f"c{i}") for i in range(10)]
    lanes = []
    for i in range(LANES):
        asker_conn, answer_conn = conns[i % 5], conns[5 + i % 5]
        asker = (await ops.register(asker_conn, {"passport": {"name": f"ask{i}"}, "resume": None, "rule": None}))
        answerer = (await ops.register(answer_conn, {"passport": {"name": f"answer{i}"}, "resume": None,
                                                     "rule": None}))
        lanes.append((asker_conn, asker["agent_id"], answer_conn, answerer["agent_id"], f"answer{i}"))
    handler = ops.handler

    def answer(result: Any) -> str:
        return frames.response("18ec89ced3b6083410e1fdb16dc894a6", result)

    def receipt(conn: Conn, agent: str, sid: str, envelope_id: str) -> None:
        ops.receipt(conn, {"envelope_id": envelope_id, "status": "ack", "recipient_id": agent, "channel_id": sid,
                           "reason": "", "kind": "receipt"})

    def envelope(sid: str, sender: str, event_type: str, data: dict[str, Any], cause: Any) -> dict[str, Any]:
        return {"envelope": {"channel_id": sid, "sender_id": sender, "audience": None, "event_type": event_type,
                             "event_data": data, "envelope_id": "", "task_id": None, "causation_id": cause,
                             "trace_id": None, "priority": "normal", "depth": 0, "idempotency_key": None,
                             "created_at": "", "ttl_seconds": None}}

    async def one(k: int, lane: int) -> None:
        ca, a, cb, b, b_name = lanes[lane]
        answer(await handler("get_agent")(ca, {"name_or_id": b_name}))
        create = asyncio.ensure_future(handler("create_channel")(ca, {
            "creator_id": a, "manifest_type": "consulting", "manifest_version": 1, "participants": [b],
            "required_acks": None, "ttl": None, "knobs": None, "intent": None, "labels": None}))
        sid = None
        while sid is None:  # (the open's invite is out: its session is the one this lane's asker opens)
            await asyncio.sleep(0)
            sid = next((s for s in ops._opening if hub.sessions[s].metadata.creator_id == a), None)
        receipt(cb, b, sid, "0000000000000001")
        answer(await handler("post_envelope")(cb, envelope(sid, b, "ag2.channel.invite.ack", {"channel_id": sid},
                                                           "0000000000000001")))
        answer(await create)
        receipt(ca, a, sid, "0000000000000002")
        receipt(ca, a, sid, "0000000000000003")
        question = await handler("post_envelope")(ca, envelope(sid, a, "ag2.msg.text", {"text": f"question {k}"},
                                                               None))
        answer(question)
        receipt(cb, b, sid, "0000000000000003")
        answer(await handler("get_channel")(cb, {"channel_id": sid}))
        answer(await handler("names_for")(cb, {"agent_ids": [a]}))
        answer(await handler("find_envelope_by_causation")(cb, {"channel_id": sid, "sender_id": b,
                                                                "causation_id": question}))
        answer(await handler("can_send")(cb, {"channel_id": sid, "sender_id": b, "event_type": None}))
        for _ in range(3):
            answer(await handler("read_wal")(cb, {"channel_id": sid, "since": 0, "until": None}))
        answer(await handler("post_envelope")(cb, envelope(sid, b, "ag2.msg.text", {"text": "an answer"}, question)))
        answer(await handler("get_channel")(ca, {"channel_id": sid}))
        receipt(ca, a, sid, "0000000000000005")
        receipt(ca, a, sid, "0000000000000006")
        receipt(cb, b, sid, "0000000000000006")
        receipt(cb, b, sid, question)

    async def lane_of(ks: range, lane: int) -> None:
        for k in ks:
            await one(k, lane)

    try:
        await lane_of(range(warmup), 0)
        for conn in conns:
            conn.out.clear()
        c0 = time.process_time()
        await asyncio.gather(*(lane_of(range(i, sessions, LANES), i) for i in range(LANES)))
        return time.process_time() - c0
    finally:
        ops.registry.close()
        await hub.aclose()


def count(src: str, sessions: int) -> int:
    """Instructions of one child running `sessions` sessions on the tree `src`."""
    env = dict(os.environ, PYTHONPATH=src)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
           "--run", str(sessions)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind gave no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def count_hub(src: str, sessions: int) -> int:
    """Instructions of a `turnflow serve` process (tree `src`) over the AG2 workload's warm-up and
    `sessions` sessions."""
    sys.path.insert(0, str(HERE))
    import serve_vs_ag2 as bench

    workdir = tempfile.mkdtemp()
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m", "turnflow",
           "serve", "--listen", "127.0.0.1:0", "--store", os.path.join(workdir, "hub.db"), "--send-queue", "100000",
           "--max-connections", "100000", "--max-per-peer", "0", "--send-buffer-bytes", str(1 << 30),
           "--total-send-bytes", str(4 << 30)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=src))
    assert proc.stdout is not None
    url = ""
    for line in proc.stdout:
        if "listening on " in line:
            url = line.split("listening on ", 1)[1].split()[0]
            break
    if not url:
        raise SystemExit("the hub did not start under valgrind")
    bench.run_loop(bench.workload(url, 2, 2, 10, 600, prefix="warm"))
    if sessions:
        bench.run_loop(bench.workload(url, 50, 10, sessions, 3600))
    proc.send_signal(2)  # SIGINT: the hub stops, valgrind writes its count
    found = re.search(r"Collected : (\d+)", proc.communicate()[1])
    if found is None:
        raise SystemExit("valgrind gave no count for the hub")
    return int(found.group(1))


def per_session(src: str, low: int, high: int, hub: bool = False) -> int:
    counted = count_hub if hub else count
    return (counted(src, high) - counted(src, low)) // (high - low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=int, help="run this many sessions here and print CPU µs per session")
    parser.add_argument("--baseline", help="a git revision counted the same way beside this tree")
    parser.add_argument("--sessions", type=int, nargs=2, default=None, metavar=("N1", "N2"),
                        help="the two session counts (default 100 600; with --hub 50 250)")
    parser.add_argument("--hub", action="store_true", help="count a served hub over the AG2 workload")
    args = parser.parse_args()
    if args.run is not None:
        cpu = asyncio.run(workload(args.run))
        print(f"{cpu / args.run * 1e6:.1f} µs CPU per session")
        return
    low, high = args.sessions or ((50, 250) if args.hub else (100, 600))
    here = per_session(str(HERE.parent / "src"), low, high, args.hub)
    print(f"this tree: {here:,} instructions per session")
    if args.baseline:
        sys.path.insert(0, str(HERE))
        from revision import extract

        with tempfile.TemporaryDirectory() as tmp:
            base = per_session(str(extract(args.baseline, Path(tmp))), low, high, args.hub)
        print(f"{args.baseline}: {base:,} instructions per session; this tree / {args.baseline}: {here / base:.3f}")


if __name__ == "__main__":
    main()
