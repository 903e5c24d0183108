"""`turnflow serve` against AG2 1.2.1's own WebSocket hub (`serve_ws` over `Hub.open(MemoryKnowledgeStore())`),
driven by the same AG2 client workload in one run, alternated: AGENTS agents (half ask, half
answer) on CLIENTS connections, SESSIONS consulting sessions opened concurrently, each one question
and one answer (answered by AG2's default notify handler with a scripted model). Each round starts a
fresh hub process; the figure is sessions per CPU second *of the hub process* (the clients' CPU is
the same code for both and is not counted). turnflow serve runs on its durable default store
(SQLite, `durability="process"`), AG2's hub on its in-memory store. Beside the CPU each round
prints the hub's sleeps per session: the times it gave up the CPU to wait for the clients (its
voluntary context switches), each of which costs a wake-up.

Then memory per idle connection: IDLE connections each registering one agent and doing nothing,
opened in IDLE_STEPS equal steps after 50 warm-up connections, the hub's RSS read after each step;
the figure is the least-squares slope of RSS over the connection count (one step's heap growth —
an arena or a resized table landing in it — moves a slope over many steps far less than it moves
the plain after-minus-before quotient, which is printed beside it).

    python bench/serve_vs_ag2.py [--agents 50] [--clients 10] [--sessions 2000] [--rounds 2] [--idle 400]
                                 [--idle-steps 8] [--warmup 10] [--timeout 3600] [--compare SRC]

`--compare SRC` runs a third hub each round: `turnflow serve` from another source tree (SRC is its
`src` directory, e.g. `git archive BASE src | tar -x -C /tmp/base`, then `--compare /tmp/base/src`),
so a change is measured old/new against AG2 in the same run; the order of the three hubs rotates
round by round, and the median of the paired new/old ratios is printed too; with `--no-ag2` the two
turnflow hubs alone (quicker, for judging a change over more rounds).

With SERVE_VS_AG2_PROFILE=PATH in the environment, each turnflow hub runs under cProfile and writes
its profile to PATH.<n> when it stops (its CPU figure then includes the profiler's overhead).

AG2's hub runs with WebSocket pings off (`serve_ws(..., ping_interval=None)`) and a 600 s invite-ack
timeout (at its default 30 s, an AG2 round of 1,000 sessions on a loaded machine failed with
"ack timeout": the one client process acks late), turnflow serve on its defaults (pings every 20 s, a
late pong closes nothing; invite timeout 30 s) but for its per-client limits, raised out of the way as
for a load test: every client comes from 127.0.0.1 and one client process queues thousands of turns.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
TICK = os.sysconf("SC_CLK_TCK")

AG2_HUB = """
import asyncio, sys
from ag2.network import Hub
from ag2.network.transport.ws import serve_ws
from ag2.knowledge import MemoryKnowledgeStore

async def main():
    hub = await Hub.open(MemoryKnowledgeStore(), invite_ack_timeout=600)
    async with serve_ws(hub, "127.0.0.1", 0, ping_interval=None) as server:
        print("listening on ws://127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


def start(kind: str, workdir: str, src: str = SRC) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if kind == "ag2":
        cmd = [sys.executable, "-c", AG2_HUB]
    else:
        store = os.path.join(workdir, f"hub-{time.monotonic_ns()}.db")
        profile = os.environ.get("SERVE_VS_AG2_PROFILE")  # a path: cProfile the turnflow hub into PATH.N
        prof = ["-m", "cProfile", "-o", f"{profile}.{time.monotonic_ns()}"] if profile else []
        cmd = [sys.executable, *prof, "-m", "turnflow", "serve", "--listen", "127.0.0.1:0", "--store", store,
               "--send-queue", "100000", "--max-connections", "100000", "--max-per-peer", "0",
               "--send-buffer-bytes", str(1 << 30), "--total-send-bytes", str(4 << 30)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "listening on " in line:
            return proc, line.split("listening on ", 1)[1].split()[0]
    raise SystemExit(f"{kind} hub did not start")


def cpu_seconds(pid: int) -> float:
    """The process's CPU time: the sum of its threads' time on a CPU in nanoseconds
    (/proc/PID/task/*/schedstat) where the kernel keeps it, else user + system time in clock
    ticks (/proc/PID/stat: 10 ms steps, 3 % of a 500-session round)."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[0])
        if total:
            return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def sleeps(pid: int) -> int:
    """How many times the process's threads have given up the CPU to wait (their voluntary context
    switches: for an event loop, each time it found nothing to do and blocked in `epoll_wait`)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                for line in fh:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
    except (OSError, ValueError):
        return 0
    return total


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def make_client(url: str):
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink

    return HubClient(WsLink(url, ping_interval=None), rpc_timeout=3600)


async def workload(url: str, agents: int, clients: int, sessions: int, timeout: float, prefix: str = "") -> float:
    from ag2 import Agent
    from ag2.testing import TestConfig

    askers_n = agents // 2
    ask_clients = [make_client(url) for _ in range(max(clients // 2, 1))]
    answer_clients = [make_client(url) for _ in range(max(clients - len(ask_clients), 1))]
    askers = [await ask_clients[i % len(ask_clients)].register(Agent(f"{prefix}ask{i}", config=TestConfig("-")))
              for i in range(askers_n)]
    for i in range(agents - askers_n):
        await answer_clients[i % len(answer_clients)].register(Agent(f"{prefix}answer{i}", config=TestConfig("an answer")))

    async def one(k: int) -> None:
        asker = askers[k % len(askers)]
        ch = await asker.open(type="consulting", target=f"{prefix}answer{k % (agents - askers_n)}")
        asker.ensure_channel_inbox(ch.channel_id)
        await ch.send(f"question {k}")
        await asker.wait_for_channel_event(channel_id=ch.channel_id, timeout=3600,
                                           predicate=lambda e: e.event_type == "ag2.channel.closed")
        asker.discard_channel_inbox(ch.channel_id)

    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(asyncio.gather(*(one(k) for k in range(sessions))), timeout)
    except asyncio.TimeoutError:
        raise SystemExit(f"{sessions} sessions did not finish within {timeout:.0f} s") from None
    wall = time.perf_counter() - t0
    await asyncio.wait_for(asyncio.gather(*(c.close() for c in ask_clients + answer_clients), return_exceptions=True), 60)
    return wall


async def idle_connections(url: str, n: int, steps: int, pid: int) -> tuple[float, float]:
    """KiB of hub RSS per idle connection holding one registered agent (the frames AG2's
    `HubClient.register` sends, over plain WebSocket connections that then stay idle): the
    least-squares slope of RSS over the count, read after each of `steps` steps; and the plain
    (after - before) / n."""
    import json

    from websockets.asyncio.client import connect

    async def hold(name: str):
        ws = await connect(url, ping_interval=None)
        await ws.send(json.dumps({"kind": "request", "request_id": "r", "op": "register", "params": {
            "passport": {"name": name}, "resume": {}, "skill_md": None, "rule": {}}}))
        reply = json.loads(await ws.recv())
        assert reply.get("ok"), reply
        return ws

    held = [await hold(f"warm{i}") for i in range(50)]
    points = [(0, rss_kib(pid))]
    for step in range(steps):
        upto = n * (step + 1) // steps
        held += [await hold(f"idle{i}") for i in range(points[-1][0], upto)]
        await asyncio.sleep(0.05)  # (the hub's side of the last handshakes settles)
        points.append((upto, rss_kib(pid)))
    await asyncio.wait_for(asyncio.gather(*(ws.close() for ws in held), return_exceptions=True), 60)
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return slope, (points[-1][1] - points[0][1]) / n

def run_loop(coro):
    """Run `coro` on a fresh loop, then drop the loop without waiting for leftover tasks (AG2's client
    can leave notify tasks behind that do not end when cancelled, hanging `asyncio.run`'s shutdown)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def one_round(kind: str, args, workdir: str) -> dict:
    proc, url = start("turnflow" if kind == "base" else kind, workdir, args.compare if kind == "base" else SRC)
    try:  # idle connections first, on the fresh process (memory the workload freed would hide them)
        idle, plain = run_loop(idle_connections(url, args.idle, args.idle_steps, proc.pid)) if args.idle else (0.0, 0.0)
        if args.warmup:  # first-use costs (lazy imports, caches) out of the figure, for both hubs alike
            run_loop(workload(url, 2, 2, args.warmup, args.timeout, prefix="warm"))
        cpu0, sleeps0 = cpu_seconds(proc.pid), sleeps(proc.pid)
        wall = run_loop(workload(url, args.agents, args.clients, args.sessions, args.timeout))
        cpu, slept = cpu_seconds(proc.pid) - cpu0, sleeps(proc.pid) - sleeps0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"kind": kind, "wall": wall, "cpu": cpu, "per_cpu": args.sessions / cpu if cpu else float("inf"),
            "idle_kib": idle, "idle_plain": plain, "sleeps": slept / args.sessions}

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--idle", type=int, default=400, help="idle connections for the memory figure (0: none)")
    ap.add_argument("--idle-steps", type=int, default=8, help="RSS read after each of this many equal steps")
    ap.add_argument("--warmup", type=int, default=10, help="sessions run on each fresh hub before measuring")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds a round's sessions may take (then exit 1)")
    ap.add_argument("--compare", metavar="SRC", help="also run turnflow serve from this source tree (its src dir)")
    ap.add_argument("--no-ag2", action="store_true", help="with --compare: the two turnflow hubs alone (quicker)")
    args = ap.parse_args()
    if args.idle and args.idle_steps < 2:
        ap.error("--idle-steps must be at least 2")
    if args.no_ag2 and not args.compare:
        ap.error("--no-ag2 needs --compare")
    kinds = ([] if args.no_ag2 else ["ag2"]) + ["turnflow"] + (["base"] if args.compare else [])
    import logging

    logging.disable(logging.CRITICAL)  # AG2's client logs its notify tasks cancelled at close
    ratios, base_ratios, news, rows = [], [], [], []
    print("load average at start: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            pair = {}
            for kind in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
                res = one_round(kind, args, workdir)
                pair[kind] = res
                rows.append(res)
                idle = (f"; idle connection {res['idle_kib']:.1f} KiB (plain quotient {res['idle_plain']:.1f})"
                        if args.idle else "")
                print(f"round {r + 1} {kind:8}: {args.sessions} sessions, wall {res['wall']:.2f} s, hub CPU "
                      f"{res['cpu']:.3f} s -> {res['per_cpu']:.0f} sessions per hub CPU s, {res['sleeps']:.1f} sleeps "
                      f"per session{idle}", flush=True)
            if not args.no_ag2:
                ratios.append(pair["turnflow"]["per_cpu"] / pair["ag2"]["per_cpu"])
            if args.compare:
                if not args.no_ag2:
                    base_ratios.append(pair["base"]["per_cpu"] / pair["ag2"]["per_cpu"])
                news.append(pair["turnflow"]["per_cpu"] / pair["base"]["per_cpu"])
    if not args.no_ag2:
        print(f"turnflow serve / AG2 serve_ws, sessions per hub CPU second: median of paired ratios "
              f"{statistics.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)})")
    if base_ratios:
        print(f"--compare {args.compare} / AG2 serve_ws: median of paired ratios "
              f"{statistics.median(base_ratios):.2f}x ({', '.join(f'{x:.2f}' for x in base_ratios)})")
    if args.compare:
        print(f"turnflow serve / --compare: median of paired ratios "
              f"{statistics.median(news):.2f}x ({', '.join(f'{x:.2f}' for x in news)})")
    print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
    if args.idle:
        for kind in kinds:
            kib = [r["idle_kib"] for r in rows if r["kind"] == kind]
            plain = [r["idle_plain"] for r in rows if r["kind"] == kind]
            print(f"{kind}: memory per idle connection (median slope over {args.idle} connections) "
                  f"{statistics.median(kib):.1f} KiB ({', '.join(f'{x:.1f}' for x in kib)}; plain quotient "
                  f"{', '.join(f'{x:.1f}' for x in plain)})")

if __name__ == "__main__":
    try:
        main()
    except (Exception, SystemExit) as exc:  # a failed round: exit now (AG2 client threads left behind would hang exit)
        if not isinstance(exc, SystemExit) or exc.code:
            print(f"serve_vs_ag2: {exc}", file=sys.stderr, flush=True)
            os._exit(1)
