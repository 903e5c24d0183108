"""The dead-rule analysis (`turnflow.compiler.firing.Firing`) of another revision against this
tree's, in one process: the other `firing.py` is loaded as a module of its own, both analyse the
same speaker graphs (bench/check_scale.py's 2,000 / 20,000, or bench/check_blocks.py's 10,000
blocks), alternately, CPU seconds; prints the medians and the median of the paired ratios, and
checks that both give the same answers.

    git show 7fc19ec:src/turnflow/compiler/firing.py > /tmp/firing_old.py
    PYTHONPATH=src python3 bench/firing_pair.py /tmp/firing_old.py scale 10
    PYTHONPATH=src python3 bench/firing_pair.py /tmp/firing_old.py blocks 10
"""
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import check_blocks  # noqa: E402
import check_scale  # noqa: E402
from turnflow.dsl.parser import parse_source  # noqa: E402
from turnflow.compiler.speaker_graph import build_graph  # noqa: E402
from turnflow.compiler import firing as new  # noqa: E402
spec = importlib.util.spec_from_file_location("firing_old", sys.argv[1])
assert spec is not None and spec.loader is not None
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
which = sys.argv[2]
text = check_scale.generate(2000) if which == "scale" else check_blocks.blocks(10000)
flow, _ = parse_source(text)
gs = [build_graph(b) for b in flow.blocks]
gc.disable()
ratios, to, tn = [], [], []
for i in range(int(sys.argv[3])):
    for mod in ((old, new) if i % 2 == 0 else (new, old)):
        c = time.process_time()
        fs = [mod.Firing(g) for g in gs]
        t = time.process_time() - c
        (to if mod is old else tn).append(t)
        answers = [(f.fired, f.speaks, f.default) for f in fs]
        if mod is new:
            res_new = answers
        else:
            res_old = answers
    ratios.append(tn[-1] / to[-1])
assert res_new == res_old
print(f"{which}: old {statistics.median(to):.3f} new {statistics.median(tn):.3f} s CPU (medians), "
      f"new/old median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
