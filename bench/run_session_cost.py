"""What one `run_session` costs per turn, all of it: opening the session, the handshakes, every
turn (view → agent → round → post → fold, the sweeper running), closing, and building the
result. CPU time (`time.process_time`) of the `run_session` call in a child process, divided by
the number of turns; one 3-agent round-robin workflow of async function agents, SQLite store.

    PYTHONPATH=src python3 bench/run_session_cost.py                    # this tree only
    PYTHONPATH=src python3 bench/run_session_cost.py --baseline main    # paired against a revision

With `--baseline REV` the `src/` of REV is extracted (`git archive`) and the two trees run
alternately (same machine load); the report gives each tree's median µs per turn and the median
of the paired ratios (baseline / this tree).
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
from pathlib import Path

from revision import extract

REPO = Path(__file__).resolve().parent.parent
PEOPLE = ["planner", "coder", "reviewer"]


def spec(turns: int) -> dict:
    graph = {"initial_speaker": "planner", "max_turns": turns,
             "transitions": [{"when": {"name": "always", "args": {}}, "then": {"name": "round_robin", "args": {}},
                              "priority": 0}],
             "default_target": {"name": "terminate", "args": {"reason": "after_work"}}}
    return {"kind": "workflow", "name": "long", "participants": [
        {"agent_id": p, "role": "initiator" if i == 0 else "participant", "order": i} for i, p in enumerate(PEOPLE)],
        "knobs": {"graph": graph}, "expectations": [], "ttl_seconds": None, "tools": []}


async def one_run(turns: int, path: str) -> float:
    """CPU seconds of one `run_session` of `turns` turns (in this process, whatever `turnflow` is on the path)."""
    from turnflow.runtime.agents import FunctionAgent
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.runner import run_session
    from turnflow.runtime.store import SQLiteStore

    hub = await Hub.open(SQLiteStore(path))

    async def reply(msg, tools):
        return f"{tools.agent_id}: I read {len(msg)} messages " + "x" * 40
    agents = {p: FunctionAgent(reply, p) for p in PEOPLE}
    t0 = time.process_time()
    res = await run_session(hub, spec(turns), agents)
    spent = time.process_time() - t0
    assert (res.close_reason, len(res.turns)) == ("max_turns", turns), res
    await hub.aclose()
    return spent


def child(src: Path, turns: int, tmp: str) -> float:
    """µs of CPU per turn of one run in a child process with `src` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, __file__, "--child", "--turns", str(turns), "--db", tmp], env=env,
                         cwd=REPO / "bench", capture_output=True, text=True, check=True).stdout
    return float(out.strip()) / turns * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", metavar="REV", help="a git revision to compare against (e.g. main)")
    ap.add_argument("--turns", type=int, default=3000)
    ap.add_argument("-n", "--repeat", type=int, default=9, help="runs per tree (default 9)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        path = os.path.join(args.db, f"hub-{os.getpid()}.db")
        print(asyncio.run(one_run(args.turns, path)))
        os.unlink(path)
        return 0
    trees = {"this tree": REPO / "src"}
    with tempfile.TemporaryDirectory(prefix="turnflow-runcost-") as tmp:
        if args.baseline:
            trees = {f"baseline {args.baseline}": extract(args.baseline, Path(tmp)), **trees}
        samples: dict[str, list[float]] = {name: [] for name in trees}
        for src in trees.values():  # warm-up (.pyc files) outside the timing
            child(src, 10, tmp)
        for _ in range(args.repeat):
            for name, src in trees.items():
                samples[name].append(child(src, args.turns, tmp))
        print(f"run_session, {args.turns:,} turns, µs CPU per turn (median of {args.repeat}):")
        for name, s in samples.items():
            print(f"  {name:<20} {statistics.median(s):8.1f}")
        if args.baseline:
            base, this = list(samples.values())
            print(f"  median of paired ratios (baseline / this tree): {statistics.median(b / t for b, t in zip(base, this)):.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
