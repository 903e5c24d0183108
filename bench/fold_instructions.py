"""Machine instructions per envelope of bench/fold_vs_ag2.py's loop (validate_send + fold +
on_accepted, our workflow adapter), counted by valgrind's callgrind: a figure that does not move
with the machine's load, for changes too small for CPU-time pairs on a shared machine. Only the
timed loop is counted (callgrind collects inside `itertools.starmap`, which runs it), after one
warm-up pass (the interpreter's specialisation, the adapter's memos).

    PYTHONPATH=src python3 bench/fold_instructions.py [--old-adapter FILE] [--envelopes 20000]

`--old-adapter FILE`: another revision's `runtime/adapters/workflow.py`
(`git show REV:src/turnflow/runtime/adapters/workflow.py > FILE`), counted the same way beside
this tree's. Needs valgrind; each count takes a minute or more (the interpreter's start-up runs
under valgrind too).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import itertools
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child(path: str, envelopes: int, loops: int) -> None:
    sys.path.insert(0, str(HERE))
    import fold_vs_ag2 as bench

    from turnflow.runtime.envelope import Envelope
    from turnflow.runtime.session import Participant, SessionMetadata

    if path:
        spec = importlib.util.spec_from_file_location("_counted_workflow", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        adapter = mod.WorkflowAdapter()
    else:
        from turnflow.runtime.adapters.workflow import WorkflowAdapter

        adapter = WorkflowAdapter()
    items = bench.stream(envelopes)
    md = SessionMetadata("0" * 32, adapter.manifest, "planner",
                         [Participant(p, "participant", i) for i, p in enumerate(bench.PEOPLE)], {"graph": bench.GRAPH},
                         0.0)
    envs = [Envelope(md.session_id, s, None, et, d, f"e{i}") for i, (s, et, d) in enumerate(items)]

    def loop() -> None:
        st = adapter.initial_state(md)
        validate, fold, accepted = adapter.validate_send, adapter.fold, adapter.on_accepted
        for env in envs:
            validate(md, env, st)
            st = fold(env, st)
            accepted(md, env, st)

    gc.disable()
    loop()  # warm-up, not counted
    for _ in range(loops):
        list(itertools.starmap(loop, [()]))  # counted: callgrind --toggle-collect=starmap_next


def count(path: str, envelopes: int, loops: int) -> float:
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next", "--callgrind-out-file=/dev/null",
           sys.executable, __file__, "--child", path, "--envelopes", str(envelopes), "--loops", str(loops)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    found = re.search(r"Collected\s*:\s*([\d,]+)", out)
    assert found, out[-2000:]
    return int(found.group(1).replace(",", "")) / (envelopes * loops)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-adapter", metavar="FILE", help="another revision's runtime/adapters/workflow.py")
    ap.add_argument("--envelopes", type=int, default=20_000)
    ap.add_argument("--loops", type=int, default=1)
    ap.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, args.envelopes, args.loops)
        return
    if args.old_adapter:
        print(f"old ({args.old_adapter}): {count(args.old_adapter, args.envelopes, args.loops):,.0f} instructions/envelope")
    print(f"this tree: {count('', args.envelopes, args.loops):,.0f} instructions/envelope")


if __name__ == "__main__":
    main()
