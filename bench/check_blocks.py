"""`turnflow check` of many small blocks (issue 36: 40,000 blocks, about 9 MB, the language
server's large-document case, tests/test_lsp_scale.py's generator): in-process CPU seconds,
run the way the `turnflow check` command runs it (its process switches on), with the parse alone.

    PYTHONPATH=src python3 bench/check_blocks.py                 # 10,000 and 40,000 blocks
    PYTHONPATH=src python3 bench/check_blocks.py --sizes 40000
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


def blocks(n: int) -> str:
    """N small workflow blocks (as tests/test_lsp_scale.py's `blocks`)."""
    return "\n".join(
        f'workflow w{i} "Block {i}" {{\n    participant a{i} "Agent {i}." tools [look_{i}]\n    participant b\n'
        f"    context n = {i}\n    start a{i}\n    max_turns 8\n    a{i} -> b when tool look_{i}\n"
        "    b -> terminate\n}\n" for i in range(n))


def measure(text: str) -> tuple[float, float, int]:
    import turnflow
    from turnflow import process
    from turnflow.dsl.parser import build_parser, gc_paused, parse_source

    process.enable_cli_switches()
    build_parser()
    gc.collect()
    c0 = time.process_time()
    with gc_paused():
        diags = turnflow.check(text, path="blocks.flow")
    cpu = time.process_time() - c0
    gc.collect()
    c0 = time.process_time()
    with gc_paused():
        parse_source(text)
    return cpu, time.process_time() - c0, len(diags)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000])
    args = ap.parse_args(argv)
    for n in args.sizes:
        text = blocks(n)
        cpu, parse, count = measure(text)
        print(f"{n:6d} blocks {len(text) / 1e6:5.2f} MB: check {cpu:6.2f} s CPU (parse alone {parse:5.2f} s), "
              f"{count} diagnostics", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
