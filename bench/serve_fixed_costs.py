"""What a served hub costs outside its sessions, `turnflow serve` against AG2's `serve_ws` (the
hubs bench/serve_vs_ag2.py starts, on the same settings): hub CPU per WebSocket handshake and per
close (N plain WebSocket connections opened one after another, then closed together), per
registration (N agents registered one after another by AG2's `HubClient` on 10 connections, as
AG2's `register` sends them), and per second of an idle hub. Each figure is the median over ROUNDS
fresh hubs of each kind, alternated; CPU from /proc/PID/task/*/schedstat (see serve_vs_ag2.py).

    python3 bench/serve_fixed_costs.py [--n 200] [--rounds 3] [--src SRC]

These are the fixed part of a serve_vs_ag2.py round: its 10 handshakes, 50 registrations and
closes, spread over a round of a few seconds of wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import serve_vs_ag2 as bench  # noqa: E402

SETTLE = 0.2  # seconds after a phase, for the hub's side of it to finish (its idle CPU is subtracted)


async def phases(url: str, pid: int, n: int) -> dict[str, float]:
    from ag2 import Agent
    from ag2.testing import TestConfig
    from websockets.asyncio.client import connect

    cpu = bench.cpu_seconds
    c0 = cpu(pid)
    await asyncio.sleep(1.0)
    idle = cpu(pid) - c0  # per second
    c0 = cpu(pid)
    conns = [await connect(url, ping_interval=None) for _ in range(n)]
    await asyncio.sleep(SETTLE)
    c1 = cpu(pid)
    await asyncio.gather(*(c.close() for c in conns))
    await asyncio.sleep(SETTLE)
    c2 = cpu(pid)
    clients = [bench.make_client(url) for _ in range(10)]
    await clients[0].register(Agent("first", config=TestConfig("-")))  # (the first connection's handshake)
    for c in clients[1:]:
        await c.register(Agent(f"first{id(c)}", config=TestConfig("-")))
    c3 = cpu(pid)
    for i in range(n):
        await clients[i % len(clients)].register(Agent(f"agent{i}", config=TestConfig("-")))
    await asyncio.sleep(SETTLE)
    c4 = cpu(pid)
    await asyncio.wait_for(asyncio.gather(*(c.close() for c in clients), return_exceptions=True), 60)
    settle = idle * SETTLE
    return {"handshake": (c1 - c0 - settle) / n, "close": (c2 - c1 - settle) / n,
            "register": (c4 - c3 - settle) / n, "idle": idle}


def one(kind: str, src: str, n: int) -> dict[str, float]:
    proc, url = bench.start(kind, tempfile.mkdtemp(), src)
    try:
        bench.run_loop(bench.workload(url, 2, 2, 10, 600, prefix="warm"))
        time.sleep(0.3)
        return bench.run_loop(phases(url, proc.pid, n))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="connections opened and agents registered")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--src", default=bench.SRC, help="the turnflow source tree's src directory")
    args = ap.parse_args()
    results: dict[str, list[dict[str, float]]] = {"turnflow": [], "ag2": []}
    for r in range(args.rounds):
        for kind in (("turnflow", "ag2") if r % 2 == 0 else ("ag2", "turnflow")):
            results[kind].append(one(kind, args.src, args.n))
    for kind, rows in results.items():
        med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
        print(f"{kind:8}: handshake {med['handshake'] * 1e6:6.0f} µs, close {med['close'] * 1e6:5.0f} µs, "
              f"register {med['register'] * 1e6:6.0f} µs, idle {med['idle'] * 1e3:5.2f} ms of CPU per second "
              f"(medians of {len(rows)} hubs, hub CPU per connection / agent)")


if __name__ == "__main__":
    main()
