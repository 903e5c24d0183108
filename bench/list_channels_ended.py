"""`list_channels` over many ended channels, on `turnflow serve` (a subprocess running `--src`'s
code on a copy of one store), through plain WebSocket clients:

- the store: one agent ("alice") with N ended consulting channels (each opened, acked, two texts,
  closed) and one live, built once by the last `--src` tree (so it holds that tree's end records;
  an older tree ignores them);
- one `list_channels` of alice's channels (limit 1,000, the most one answer holds) on a hub just
  started: none of them in the hub's memory (the case of docs/serve.md: a listing of channels not
  among the last 1,024 read, or an attacker alternating two such agents), then the same again;
- meanwhile another connection pings the hub without pause: the longest ping round trip during the
  listing is the longest time the hub answered nobody else (its event loop's longest stall), next
  to the median round trip before the listing;
- the hub's CPU for the listing (its process's CPU time, /proc/PID/task/*/schedstat);
- then, in a process of its own per tree (no socket), the listing's thread CPU time and its
  longest slice of CPU without a turn of the event loop for anyone else: the stall another client
  would see on an idle machine (the ping figure also holds the machine's own scheduling).

`--older` also measures the last tree on a copy without end records (a store written before they
existed: the first listing reads the channels back from their logs and writes their records).
Each figure is the median over `--rounds` fresh hubs per tree, trees alternated within a round.

    python3 bench/list_channels_ended.py --src /tmp/base/src --src src [--n 1000 10000] [--rounds 3] [--older]
    python3 bench/list_channels_ended.py --src /tmp/base/src --src src --write-cost [--n 5000] [--rounds 6]

`--write-cost` measures instead what writing sessions costs each tree: the CPU per session of the
hub and ops `turnflow serve` runs, driven in process (consulting sessions opened, acked, talked in
and closed), in a fresh process per tree and round, trees alternated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


async def _build(path: str, n: int) -> None:
    """The store (and its registry) of `n` ended channels of alice's and one live one, made by
    the hub and ops `turnflow serve` runs (no socket)."""
    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.session import Participant
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry

    class Conn:
        endpoint_id = "bench"
        agents: set[str] = set()

        def send(self, text: str) -> None:
            pass

    registry = open_registry(path)
    hub = await Hub.open(SQLiteStore(path), keep_ended=False)
    ops = Ops(hub, registry, Auth())
    conn = Conn()
    ids = [(await ops.register(conn, {"passport": {"name": name}}))["agent_id"] for name in ("alice", "bob")]
    ops.unbind_all(conn)
    a, b = ids
    pair = [Participant(a, "initiator", 0), Participant(b, "respondent", 1)]
    for i in range(n + 1):
        md = await hub.open_session("consulting", pair, creator_id=a, labels={"n": i})
        await hub.ack(md.session_id, b)
        await hub.post(Envelope(md.session_id, a, None, EV_TEXT, {"text": f"question {i} " + "x" * 60}))
        if i < n:
            await hub.post(Envelope(md.session_id, b, None, EV_TEXT, {"text": f"answer {i} " + "y" * 60}))
            if md.session_id in hub.sessions and not hub.sessions[md.session_id].metadata.state.terminal:
                await hub.close(md.session_id, "done")
    await hub.aclose()
    registry.close()


async def _write_cost(path: str, n: int) -> float:
    """CPU seconds per session of the hub and ops `turnflow serve` runs (in process, no socket):
    `n` consulting sessions opened, acked, talked in and closed, after a warm-up of 500."""
    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.session import Participant
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry

    registry = open_registry(path)
    hub = await Hub.open(SQLiteStore(path), keep_ended=False)
    Ops(hub, registry, Auth())
    pair = [Participant("a" * 32, "initiator", 0), Participant("b" * 32, "respondent", 1)]

    async def sessions(k: int) -> None:
        for i in range(k):
            md = await hub.open_session("consulting", pair, creator_id="a" * 32, labels={"n": i})
            await hub.ack(md.session_id, "b" * 32)
            await hub.post(Envelope(md.session_id, "a" * 32, None, EV_TEXT, {"text": f"question {i} " + "x" * 60}))
            await hub.post(Envelope(md.session_id, "b" * 32, None, EV_TEXT, {"text": f"answer {i} " + "y" * 60}))
            if md.session_id in hub.sessions and not hub.sessions[md.session_id].metadata.state.terminal:
                await hub.close(md.session_id, "done")

    await sessions(500)
    t = time.process_time()
    await sessions(n)
    cpu = (time.process_time() - t) / n
    await hub.aclose()
    registry.close()
    return cpu


def write_cost(srcs: list[str], n: int, rounds: int, workdir: str) -> None:
    got: dict[str, list[float]] = {s: [] for s in srcs}
    for r in range(rounds):
        for src in (srcs if r % 2 == 0 else srcs[::-1]):
            path = os.path.join(workdir, f"write-{time.monotonic_ns()}.db")
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--write-cost-in", path, "--n", str(n)],
                                 env=dict(os.environ, PYTHONPATH=src), check=True, capture_output=True, text=True)
            got[src].append(float(out.stdout.split()[-1]))
    print(f"per-session CPU of the served hub, {n} consulting sessions (open, ack, 2 texts, close), "
          f"median of {rounds} processes per tree, alternated:")
    for src, cpus in got.items():
        print(f"  {src}: {statistics.median(cpus) * 1e6:6.1f} µs  (all: {', '.join(f'{c * 1e6:.1f}' for c in cpus)})")
    if len(srcs) > 1:  # (each round's pair, the last tree over the first)
        ratios = [b / a for a, b in zip(got[srcs[0]], got[srcs[-1]])]
        print(f"  last / first, paired by round: median {statistics.median(ratios):.3f} "
              f"({', '.join(f'{r:.2f}' for r in ratios)})")


async def _slices(path: str) -> list[float]:
    """(In a process of its own, on a copy of the store:) the hub and ops `turnflow serve` runs, and
    one `list_channels` of alice's (limit 1,000) run beside a task that measures the thread CPU time
    between its own turns: the listing's total CPU, and its longest slice without a turn for anyone
    else (CPU, not wall time: what another client waits for on an idle machine)."""
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry

    registry = open_registry(path)
    hub = await Hub.open(SQLiteStore(path), keep_ended=False)
    ops = Ops(hub, registry, Auth())

    class Conn:
        endpoint_id = "bench"

        def __init__(self) -> None:
            self.agents = {registry.by_name["alice"]}

        def send(self, text: str) -> None:
            pass

    gaps: list[float] = []
    done = False

    async def watch() -> None:
        last = time.thread_time()
        while not done:
            await asyncio.sleep(0)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    out: list[float] = []
    for _ in range(2):
        gaps.clear()
        done = False
        task = asyncio.get_running_loop().create_task(watch())
        await asyncio.sleep(0)
        t = time.thread_time()
        listed = await ops.list_channels(Conn(), {"agent_id": registry.by_name["alice"], "limit": 1000})
        cpu = time.thread_time() - t
        done = True
        await task  # (its last turn measures the slice the listing ended with)
        out += [cpu, max(gaps, default=0.0)]
        assert len(json.loads(listed) if isinstance(listed, str) else listed) == 1000
    await hub.aclose()
    registry.close()
    return out


def slices(srcs: list[str], store: str, rounds: int, workdir: str) -> None:
    got: dict[str, list[list[float]]] = {s: [] for s in srcs}
    for r in range(rounds):
        for src in (srcs if r % 2 == 0 else srcs[::-1]):
            copy = _copy(store, workdir, False)
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--slices-in", copy],
                                 env=dict(os.environ, PYTHONPATH=src), check=True, capture_output=True, text=True)
            got[src].append(json.loads(out.stdout.splitlines()[-1]))
    print(f"  in process (thread CPU; medians of {rounds}): total / longest slice without a turn for others")
    for src, rows in got.items():
        med = [statistics.median(row[i] for row in rows) * 1e3 for i in range(4)]
        print(f"  {src}: first {med[0]:6.1f} / {med[1]:6.1f} ms, again {med[2]:6.1f} / {med[3]:6.1f} ms")


def build(src: str, n: int, workdir: str) -> str:
    path = os.path.join(workdir, f"ended-{n}.db")
    env = dict(os.environ, PYTHONPATH=src)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--build", path, "--n", str(n)], env=env, check=True)
    return path


def _copy(path: str, workdir: str, older: bool) -> str:
    """A copy of the store and its registry (no lock file: a fresh writer's), without end records when `older`."""
    dest = os.path.join(workdir, f"copy-{time.monotonic_ns()}.db")
    for suffix in ("", ".agents"):
        shutil.copyfile(path + suffix, dest + suffix)
    if older:
        db = sqlite3.connect(dest)
        db.execute("DROP TABLE IF EXISTS session_ends")
        db.commit()
        db.close()
    return dest


def _start(src: str, store: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=src)
    cmd = [sys.executable, "-m", "turnflow", "serve", "--listen", "127.0.0.1:0", "--store", store]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "listening on " in line:
            return proc, line.split("listening on ", 1)[1].split()[0]
    raise SystemExit("the hub did not start")


async def _rounds(url: str, pid: int) -> dict[str, float]:
    from serve_vs_ag2 import cpu_seconds
    from websockets.asyncio.client import connect

    lister = await connect(url, ping_interval=None, max_size=None)
    await lister.send(json.dumps({"kind": "hello", "name": "alice"}))
    await lister.recv()  # welcome
    n = 0

    async def rpc(op: str, params: dict) -> object:
        nonlocal n
        n += 1
        await lister.send(json.dumps({"kind": "request", "request_id": str(n), "op": op, "params": params}))
        while True:
            frame = json.loads(await lister.recv())
            if frame.get("kind") == "response" and frame["request_id"] == str(n):
                assert frame["ok"], frame
                return frame["result"]

    alice = await rpc("find_agent_id", {"name": "alice"})
    # the pings from a process of their own (this one decodes the listing's answer meanwhile)
    env = dict(os.environ)
    pinger = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--pinger", url], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert pinger.stdout is not None and pinger.stdin is not None
    pinger.stdout.readline()  # (connected)
    await asyncio.sleep(0.5)
    windows = []
    out: dict[str, float] = {}
    for run in ("cold", "warm"):
        c0, t0 = cpu_seconds(pid), time.perf_counter()
        listed = await rpc("list_channels", {"agent_id": alice, "limit": 1000})
        t1 = time.perf_counter()
        c1 = cpu_seconds(pid)
        assert isinstance(listed, list) and len(listed) == 1000, len(listed) if isinstance(listed, list) else listed
        windows.append((run, t0, t1))
        out[f"{run}_wall"] = t1 - t0
        out[f"{run}_cpu"] = c1 - c0
        await asyncio.sleep(0.3)
    pinger.stdin.close()
    rtts = [tuple(map(float, line.split())) for line in pinger.stdout]  # (sent at, round trip)
    pinger.wait(timeout=60)
    out["ping_median"] = statistics.median(r for t, r in rtts if t < windows[0][1])
    for run, t0, t1 in windows:
        out[f"{run}_stall"] = max((r for t, r in rtts if t0 - r <= t <= t1), default=0.0)  # (overlapping the listing)
    await lister.close()
    return out


async def _ping(url: str) -> None:
    """(The pinger's process: pings without pause until its stdin closes, then prints each ping's
    send time and round trip, perf_counter's clock being the system's monotonic one.)"""
    from websockets.asyncio.client import connect

    conn = await connect(url, ping_interval=None)
    print("connected", flush=True)
    done = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    rtts: list[tuple[float, float]] = []
    while not done.done():
        t0 = time.perf_counter()
        await conn.send('{"kind":"ping"}')
        await conn.recv()
        rtts.append((t0, time.perf_counter() - t0))
    await conn.close()
    sys.stdout.write("".join(f"{t!r} {r!r}\n" for t, r in rtts))


def measure(src: str, store: str, workdir: str, older: bool) -> dict[str, float]:
    from serve_vs_ag2 import run_loop

    copy = _copy(store, workdir, older)
    proc, url = _start(src, copy)
    try:
        time.sleep(0.3)
        return dict(run_loop(_rounds(url, proc.pid)))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", action="append", help="a source tree's src directory (repeat to compare)")
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000], help="ended channels of the agent")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--older", action="store_true", help="the last tree on a store without end records too")
    ap.add_argument("--build", help=argparse.SUPPRESS)
    ap.add_argument("--pinger", help=argparse.SUPPRESS)
    ap.add_argument("--write-cost", action="store_true",
                    help="instead: each tree's per-session CPU writing sessions (--n of them, default 5000)")
    ap.add_argument("--write-cost-in", help=argparse.SUPPRESS)
    ap.add_argument("--slices-in", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.slices_in:
        print(json.dumps(asyncio.run(_slices(args.slices_in))))
        return
    if args.write_cost_in:
        print(asyncio.run(_write_cost(args.write_cost_in, args.n[0])))
        return
    if args.pinger:
        asyncio.run(_ping(args.pinger))
        return
    if args.build:
        asyncio.run(_build(args.build, args.n[0]))
        return
    srcs = [os.path.abspath(s) for s in (args.src or [os.path.join(os.path.dirname(HERE), "src")])]
    runs = [(s, False) for s in srcs] + ([(srcs[-1], True)] if args.older else [])
    workdir = tempfile.mkdtemp(prefix="list-ended-")
    if args.write_cost:
        try:
            write_cost(srcs, args.n[0] if args.n != [1000, 10000] else 5000, args.rounds, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    try:
        for n in args.n:
            store = build(srcs[-1], n, workdir)
            got: dict[tuple[str, bool], list[dict[str, float]]] = {run: [] for run in runs}
            for r in range(args.rounds):
                for run in (runs if r % 2 == 0 else runs[::-1]):
                    got[run].append(measure(run[0], store, workdir, run[1]))
            print(f"{n} ended channels, list_channels limit 1000 (medians of {args.rounds} fresh hubs; "
                  f"load {os.getloadavg()[0]:.1f}):")
            for (src, older), rows in got.items():
                med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
                print(f"  {src}{' (no end records)' if older else ''}:\n"
                      f"    first: {med['cold_wall'] * 1e3:7.1f} ms, hub CPU {med['cold_cpu'] * 1e3:7.1f} ms, "
                      f"longest ping {med['cold_stall'] * 1e3:6.1f} ms\n"
                      f"    again: {med['warm_wall'] * 1e3:7.1f} ms, hub CPU {med['warm_cpu'] * 1e3:7.1f} ms, "
                      f"longest ping {med['warm_stall'] * 1e3:6.1f} ms   (median ping {med['ping_median'] * 1e3:.2f} ms)")
            slices(srcs, store, args.rounds, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
