"""`turnflow simulate` throughput on the examples, in process and end to end.

    PYTHONPATH=src python3 bench/simulate_bench.py [RUNS]

For each example with a workflow block: the time of `Simulator.run(RUNS)` (best of 3),
sessions and turns per second, and the wall time of the whole command
(`python -m turnflow simulate FILE --runs RUNS`, interpreter start-up included).
Also a reference: RUNS / 10 sessions of the same block through the full hub
(SQLite in memory, `run_session` with ScriptedAgents replaying simulated rounds).
Not part of the test suite."""

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import turnflow
from turnflow.runtime.agents import ScriptedAgent
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.simulate import Simulator, run_rng
from turnflow.runtime.store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent


def hub_rate(spec: dict, sim: Simulator, n: int) -> float:
    scripts = []
    for i in range(n):
        rounds: list = []
        sim.run_one(run_rng(99, spec["name"], i), rounds=rounds)
        steps: dict = {p["agent_id"]: [] for p in spec["participants"]}
        for speaker, r in rounds:
            step = {"say": r["body"]}
            if r["tool"]:
                step["tool"] = r["tool"]
            if r["set"]:
                step["set"] = r["set"]
            if r["kind"] == "finish":
                step["finish"] = ""
            steps[speaker].append(step)
        scripts.append(steps)

    async def go() -> float:
        hub = await Hub.open(SQLiteStore(":memory:"))
        t = time.perf_counter()
        for steps in scripts:
            agents = {k: ScriptedAgent(k, v or [{"say": "-"}]) for k, v in steps.items()}
            await run_session(hub, spec, agents)
        dt = time.perf_counter() - t
        await hub.aclose()
        return dt
    return asyncio.run(go())


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    print(f"{'example':<20} {'block':<10} {'runs':>6} {'sim s':>7} {'turns/s':>9} {'cli s':>7} {'hub s/run':>10}")
    for path in sorted((ROOT / "examples").glob("*.flow")):
        for spec in turnflow.compile(path.read_text(), path=str(path)):
            if spec["kind"] != "workflow":
                continue
            sim = Simulator(spec)
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                rep = sim.run(runs, 0)
                best = min(best, time.perf_counter() - t)
            turns = sum(rep.turns)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "turnflow", "simulate", str(path), "--runs", str(runs)],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            cli = time.perf_counter() - t
            n_hub = max(1, runs // 10)
            hub = hub_rate(spec, sim, n_hub) / n_hub
            print(f"{path.name:<20} {spec['name']:<10} {runs:>6} {best:>7.3f} {turns / best:>9.0f} {cli:>7.2f} "
                  f"{hub * 1000:>8.2f}ms")


if __name__ == "__main__":
    main()
