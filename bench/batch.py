"""Batch-run throughput: TASKS tasks x TURNS turns with function agents through
`turnflow run --tasks`, on SQLite (1 process) and on PostgreSQL (1, 2 and 4 worker processes
sharing one task list). Reports sessions/s and posts/s (wall clock: the work of several
processes), the CPU seconds of the workers and of the PostgreSQL server, and the median of paired
ratios of wall time against the 1-process SQLite run of the same round. Each round starts with
another configuration, and each PostgreSQL run gets a fresh database that is dropped afterwards.

    python bench/batch.py [--tasks 1000] [--turns 20] [--rounds 3] [--concurrency 16]
                          [--workers 1,2,4] [--fsync on|off] [--dsn postgresql://...]

Without --dsn a throw-away PostgreSQL server is started (tests/pg_server.py) with
`fsync` and `synchronous_commit` as --fsync says (default on: every commit reaches the disk).
SQLite runs with the store's default `durability="process"` (synchronous=NORMAL).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

AGENTS_PY = '''
def speak(msg, tools):
    return f"{tools.agent_id}: turn {len(msg)}"
'''


def spec(turns: int) -> dict:
    return {"kind": "workflow", "name": "chain",
            "participants": [{"agent_id": a, "role": "participant"} for a in "abc"],
            "knobs": {"graph": {"initial_speaker": "a", "transitions": [
                {"when": {"name": "from_speaker", "args": {"agent_id": x}},
                 "then": {"name": "agent", "args": {"agent_id": y}}, "priority": 0}
                for x, y in (("a", "b"), ("b", "c"), ("c", "a"))],
                "default_target": {"name": "terminate", "args": {"reason": "after_work"}}, "max_turns": turns}}}


def setup(tmp: str, tasks: int, turns: int) -> dict:
    with open(os.path.join(tmp, "flow.json"), "w") as fh:
        json.dump(spec(turns), fh)
    with open(os.path.join(tmp, "bench_batch_agents.py"), "w") as fh:
        fh.write(AGENTS_PY)
    with open(os.path.join(tmp, "agents.yaml"), "w") as fh:
        fh.write("agents:\n" + "".join(f'  {a}: {{kind: python, ref: "bench_batch_agents:speak"}}\n' for a in "abc"))
    with open(os.path.join(tmp, "tasks.jsonl"), "w") as fh:
        for i in range(tasks):
            fh.write(json.dumps({"id": f"t{i:05d}", "task": f"task {i}"}) + "\n")
    return {k: os.path.join(tmp, v) for k, v in
            (("flow", "flow.json"), ("agents", "agents.yaml"), ("tasks", "tasks.jsonl"))}


def server_cpu(postmaster: int = 0) -> float:
    """CPU seconds used so far by the PostgreSQL server whose postmaster is `postmaster`: its own,
    its exited backends' (the postmaster's children counters) and its live processes'. Other
    servers on the machine (a test suite's) are not counted; 0 without a postmaster pid."""
    if not postmaster:
        return 0.0
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(f[1])
        if pid == postmaster:
            total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
        elif ppid == postmaster:
            total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def worker_env() -> dict:
    """The workers' environment: without PYTHONDONTWRITEBYTECODE, so they import from the .pyc files
    an installed package has (the first run writes them) instead of compiling every module anew."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_workers(files: dict, store: str, workers: int, concurrency: int,
                postmaster: int = 0) -> tuple[float, float, float, int]:
    """Start `workers` processes on one store; returns (wall seconds, CPU seconds of the workers,
    CPU seconds of the PostgreSQL server, posts). The server's CPU includes a CHECKPOINT run after
    the workers finish: writing this run's pages out is this run's cost, not the next run's."""
    argv = [sys.executable, "-m", "turnflow", "run", files["flow"], "--agents", files["agents"],
            "--tasks", files["tasks"], "--store", store, "--concurrency", str(concurrency), "--format", "json"]
    pg = store.startswith("postgresql://")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = server_cpu(postmaster) if pg else 0.0
    # files, not pipes: a worker must never block on a full pipe nobody reads yet
    sinks = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(workers)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(argv, stdout=o, stderr=e, text=True, env=worker_env()) for o, e in sinks]
    for p in procs:
        p.wait()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server = 0.0
    if pg:
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        server = server_cpu(postmaster) - server_before
    outs = []
    for o, e in sinks:
        o.seek(0)
        e.seek(0)
        outs.append((o.read(), e.read()))
        o.close()
        e.close()
    posts = 0
    for p, (out, err) in zip(procs, outs):
        if p.returncode != 0:
            raise SystemExit(f"worker failed ({p.returncode}): {err[-2000:]}")
        if os.environ.get("BENCH_LOG"):
            with open(os.environ["BENCH_LOG"], "a") as fh:
                fh.write(err)
        for line in err.splitlines():
            if "note:" in line:
                print(line, file=sys.stderr)
        for line in out.splitlines():
            rec = json.loads(line)
            if not rec["skipped"]:
                posts += rec["turns"]
    return wall, cpu, server, posts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--fsync", choices=("on", "off"), default="on")
    ap.add_argument("--dsn", help="an existing PostgreSQL server (a database per run is created on it)")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]

    server = None
    postmaster = 0  # an external server's CPU is not measured (--dsn)
    if args.dsn is None:
        from pg_server import PgServer, find_bindir

        bindir = find_bindir()
        if bindir is None:
            raise SystemExit("no PostgreSQL binaries: install Debian's postgresql package or pass --dsn")
        server = PgServer(bindir, fsync=args.fsync == "on").start()
        postmaster = server.postmaster_pid()

    admin = server.url() if server is not None else args.dsn

    def new_db() -> str:
        name = "bench_" + uuid.uuid4().hex[:12]
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # a name we made, not user input
        return admin.rsplit("/", 1)[0] + "/" + name

    def drop_db(url: str) -> None:
        """A finished run's database goes, so the server's upkeep of it (autovacuum, checkpoints)
        does not run into the next run's figures."""
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
            conn.execute("CHECKPOINT")

    runs = [("sqlite x1", 1)] + [(f"postgresql x{w}", w) for w in workers]
    results: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name, _ in runs}
    try:
        with tempfile.TemporaryDirectory(prefix="turnflow-bench-batch-") as tmp:
            files = setup(tmp, args.tasks, args.turns)
            # warm-up, not measured: writes the .pyc files (and warms the disk cache) for every engine
            os.makedirs(os.path.join(tmp, "warm"))
            warm = setup(os.path.join(tmp, "warm"), 2, 3)
            run_workers(warm, os.path.join(tmp, "warm.db"), 1, 2)
            if postmaster or args.dsn:
                url = new_db()
                run_workers(warm, url, 1, 2, postmaster)
                drop_db(url)
            for r in range(args.rounds):
                # each round starts with another configuration: a drift of the machine's speed
                # during a round does not always favour the same one
                for name, w in runs[r % len(runs):] + runs[:r % len(runs)]:
                    if name.startswith("sqlite"):
                        results[name].append(run_workers(files, os.path.join(tmp, f"r{r}.db"), 1, args.concurrency))
                    else:
                        url = new_db()
                        results[name].append(run_workers(files, url, w, args.concurrency, postmaster))
                        drop_db(url)
                print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                    f"{k} {v[-1][0]:.1f}s" for k, v in results.items()), file=sys.stderr)
    finally:
        if server is not None:
            server.stop()

    base = results["sqlite x1"]
    print(f"{args.tasks} tasks x {args.turns} turns, concurrency {args.concurrency} per process, "
          f"{args.rounds} rounds, PostgreSQL fsync={args.fsync}; medians")
    print(f"{'run':<16} {'wall s':>7} {'sessions/s':>11} {'posts/s':>9} {'CPU s':>7} {'server':>7} "
          f"{'vs sqlite x1':>13}   (CPU s: the workers; server: the PostgreSQL server it started, "
          "with a CHECKPOINT after the run; not measured with --dsn)")
    for name, rs in results.items():
        wall = statistics.median(x[0] for x in rs)
        cpu = statistics.median(x[1] for x in rs)
        srv = statistics.median(x[2] for x in rs)
        posts = statistics.median(x[3] for x in rs)
        ratio = statistics.median(b[0] / x[0] for b, x in zip(base, rs))
        print(f"{name:<16} {wall:>7.2f} {args.tasks / wall:>11.1f} {posts / wall:>9.0f} {cpu:>7.2f} {srv:>7.2f} "
              f"{ratio:>12.2f}x")


if __name__ == "__main__":
    main()
