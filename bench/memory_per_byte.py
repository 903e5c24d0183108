"""Memory per input byte (issue 33, item 9): the peak memory of parsing a `.flow` (tracemalloc:
this process's own allocations) divided by its size, for inputs whose bulk is one kind of
token, and the max RSS of the whole `turnflow check` command on one long string literal.
Before: ~230 bytes per byte for a string literal (8 MB -> 1.86 GB RSS).

    PYTHONPATH=src python3 bench/memory_per_byte.py [--size 1000000] [--check-mb 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

HEAD = "workflow w {\n participant a initiator\n participant b\n start a\n"


def flows(size: int) -> dict[str, str]:
    return {
        "one string literal": HEAD + ' a -> b when text contains "' + "x" * size + '"\n b -> terminate\n}\n',
        "escapes (1 in 4 bytes)": HEAD + ' a -> b when text contains "' + "ab\\\\" * (size // 4) + '"\n}\n',
        "blank run in a separator": HEAD + " a -> b;" + " \t" * (size // 2) + ";\n b -> terminate\n}\n",
        "comment lines": HEAD + " a -> b\n" + "  # note\n" * (size // 9) + " b -> terminate\n}\n",
        "rules (60k)": HEAD + "".join(f" a -> b when context.k{i} == {i}\n" for i in range(size // 30)) + "}\n",
    }


def main(argv=None) -> int:
    from turnflow.dsl.parser import parse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="bytes of the bulk of each input")
    ap.add_argument("--check-mb", type=int, default=8, help="MB of the string literal `turnflow check` reads")
    args = ap.parse_args(argv)
    # the command first, while this process is small (Linux counts a forked child's max RSS from its parent's)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.flow")
        with open(path, "w") as fh:
            fh.write(HEAD.replace(" participant a initiator", ' participant a "' + "x" * (args.check_mb * 10**6)
                                  + '" initiator') + " a -> b\n b -> terminate\n}\n")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        proc = subprocess.Popen([sys.executable, "-m", "turnflow", "check", "--no-cache", path],
                                stdout=subprocess.DEVNULL, env=env)
        _, _, usage = os.wait4(proc.pid, 0)
        print(f"turnflow check, one {args.check_mb} MB string literal: max RSS {usage.ru_maxrss / 1024:.0f} MB")
    parse(HEAD + "}\n", "warm.flow")
    print(f"{'input':<28} {'bytes':>10} {'peak MB':>8} {'bytes/byte':>10}")
    for name, text in flows(args.size).items():
        tracemalloc.start()
        parse(text, "bench.flow")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"{name:<28} {len(text):>10} {peak / 1e6:>8.1f} {peak / len(text):>10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
