"""Paired before/after of the parse alone (`parse_source` of a valid file, the fast path): another
revision's tree and this one run alternately, one process each, each printing the best of N
parses (CPU seconds, GC off); prints each side's figures and the median of the paired ratios
(this tree / the baseline). Finer than bench/check_pairs.py for a change to the parser, whose
share of a whole `check` is small beside the checks' own noise on a shared machine.

    python3 bench/parse_pairs.py --baseline e4d332e --pairs 4 scale 2000     # bench/check_scale.py's file
    python3 bench/parse_pairs.py --baseline e4d332e --pairs 3 blocks 10000   # bench/check_blocks.py's file

The baseline's `src/` and `bench/` are extracted with `git archive` (as bench/check_pairs.py
does); both sides parse the same text, made by this tree's generators.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from check_pairs import extract  # noqa: E402  (bench/ is not a package)

#: run in each tree: `python3 -c PROBE TEXTFILE REPEAT` prints the best parse time
PROBE = """
import gc, sys, time
from turnflow.dsl.parser import build_parser, parse_source
build_parser()
text = open(sys.argv[1], encoding="utf-8").read()
gc.disable()
best = float("inf")
for _ in range(int(sys.argv[2])):
    t0 = time.process_time()
    flow, diagnostics = parse_source(text)
    best = min(best, time.process_time() - t0)
    assert flow is not None and not diagnostics
    del flow
print(best)
"""


def text_of(kind: str, size: int) -> str:
    if kind == "scale":
        from check_scale import generate

        return generate(size)
    from check_blocks import blocks

    return blocks(size)


def run(tree: Path, path: str, repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, "-c", PROBE, path, str(repeat)], env=env, check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
    return float(out.split()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, metavar="REV")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5, help="best of N parses in each process")
    ap.add_argument("kind", choices=["scale", "blocks"])
    ap.add_argument("size", type=int)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        extract(args.baseline, tmp)
        path = os.path.join(tmp, "input.flow")
        Path(path).write_text(text_of(args.kind, args.size), encoding="utf-8")
        sides = {"baseline": Path(tmp), "this tree": REPO}
        results: dict[str, list[float]] = {name: [] for name in sides}
        for i in range(args.pairs):
            for name in (list(sides) if i % 2 == 0 else list(reversed(sides))):
                results[name].append(run(sides[name], path, args.repeat))
    old, new = results["baseline"], results["this tree"]
    ratios = sorted(n / o for o, n in zip(old, new))
    print(f"{args.kind} {args.size}: parse baseline {' '.join(f'{x:.4f}' for x in old)} s CPU; this tree "
          f"{' '.join(f'{x:.4f}' for x in new)}; this tree / baseline, median of pairs "
          f"{statistics.median(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
