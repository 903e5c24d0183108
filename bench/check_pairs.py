"""Paired before/after of `turnflow check` at scale: another revision's tree and this one run
alternately (separate processes, CPU seconds as each bench script reports them), so that a
shared, loaded machine slows both sides alike; prints each side's figures and the median of the
paired ratios (this tree / the baseline).

    python3 bench/check_pairs.py --baseline 7fc19ec --pairs 5 check_scale.py --no-subprocess --repeat 1 --sizes 2000
    python3 bench/check_pairs.py --baseline 7fc19ec --pairs 3 check_blocks.py --sizes 40000

The baseline's `src/` and `bench/` are extracted with `git archive` into a temporary folder; each
side runs its own copy of the bench script (they put their own `src/` first on the path). The
figures read are the in-process CPU seconds (`cpu X` of check_scale.py, `check X s CPU` of
check_blocks.py) and the parse alone.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CPU = re.compile(r"cpu (\d+\.\d+)|check\s+(\d+\.\d+) s CPU")
PARSE = re.compile(r"of which parse (\d+\.\d+)|parse alone\s+(\d+\.\d+)")


def extract(rev: str, into: str) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src", "bench"], check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into)


def run(tree: Path, script: str, args: list[str]) -> tuple[list[float], list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, str(tree / "bench" / script), *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    return ([float(a or b) for a, b in CPU.findall(out)], [float(a or b) for a, b in PARSE.findall(out)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="REV")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("script", help="check_scale.py or check_blocks.py")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.baseline, tmp)
        sides = {"baseline": Path(tmp), "this tree": REPO}
        results: dict[str, list[tuple[list[float], list[float]]]] = {name: [] for name in sides}
        for i in range(args.pairs):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for name in order:
                results[name].append(run(sides[name], args.script, args.args))
    for k in range(len(results["baseline"][0][0])):
        old = [r[0][k] for r in results["baseline"]]
        new = [r[0][k] for r in results["this tree"]]
        ratios = sorted(n / o for o, n in zip(old, new))
        parse_old = [r[1][k] for r in results["baseline"] if k < len(r[1])]
        parse_new = [r[1][k] for r in results["this tree"] if k < len(r[1])]
        print(f"input {k + 1}: baseline {' '.join(f'{x:.2f}' for x in old)} s CPU "
              f"(parse {' '.join(f'{x:.2f}' for x in parse_old)}); this tree {' '.join(f'{x:.2f}' for x in new)} "
              f"(parse {' '.join(f'{x:.2f}' for x in parse_new)}); this tree / baseline, median of pairs "
              f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
