"""`turnflow graph` and `turnflow simulate` as participants double (issue 33, item 9): each
command run in a fresh process on bench/check_scale.py's generated workflow (N participants,
10 rules each: handoffs, tool, text and context rules, priorities), its wall time and peak
memory (max RSS, from the child's own rusage) and the ratio to the previous size: ~2x per
doubling is linear, ~4x quadratic.

    PYTHONPATH=src python3 bench/graph_simulate_scaling.py [--sizes 500 1000 2000 4000] [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))


def measure(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, max RSS in MB) of `python -m turnflow ARGV` in its own process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "turnflow", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"turnflow {' '.join(argv)} failed ({status})")
    return wall, usage.ru_maxrss / 1024


def main(argv=None) -> int:
    from check_scale import generate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--runs", type=int, default=200, help="simulated sessions per size (simulate's default)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        last: dict[str, float] = {}
        print(f"{'participants':>12}  {'command':<8} {'wall s':>8} {'x prev':>6} {'max RSS MB':>10}")
        for n in args.sizes:
            path = os.path.join(tmp, f"scale_{n}.flow")
            with open(path, "w") as fh:
                fh.write(generate(n))
            for name, cmd in (("graph", ["graph", path, "-o", os.path.join(tmp, "out.dot")]),
                              ("simulate", ["simulate", path, "--runs", str(args.runs)])):
                wall, rss = measure(cmd)
                ratio = f"{wall / last[name]:.2f}" if name in last else "-"
                last[name] = wall
                print(f"{n:>12}  {name:<8} {wall:>8.2f} {ratio:>6} {rss:>10.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
