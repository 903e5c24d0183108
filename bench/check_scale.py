"""How `turnflow check` scales: generated workflows of 2,000 and 4,000 participants
with 10 rules each (docs/benchmarks.md: under 3 s for 2,000 / 20,000, doubling at most ~2.2x).

    PYTHONPATH=src python3 bench/check_scale.py            # in-process + subprocess, best of 3
    PYTHONPATH=src python3 bench/check_scale.py --sizes 2000 4000 8000 --repeat 1
    PYTHONPATH=src python3 bench/check_scale.py --no-subprocess --sizes 2000 --peer 7   # vs LangGraph

Every generated file is valid and error-free (so every graph rule runs), and every rule
is live: per participant `pI` (with `tools [tI]`):

    handoff pI -> pJ via hI_0 "Route to pJ"          (two handoffs)
    pI -> pJ when tool tI
    pI -> pJ when text contains "kwN"               (three)
    pI -> terminate "done" when context.done == true
    pI -> pJ when text contains "fast" and context.mode == "fast"
    pI -> pJ when tool tI and context.done == true priority -1
    pI -> pNEXT priority 2                          (the rule that always decides, last)

with random targets, `max_turns 1000` and two context variables; the graph is one big
strongly connected tangle, so SCC, BFS and longest-path code all do full work.

`--peer N`: N rounds, each timing `turnflow.check` of the file and LangGraph building and
compiling the same speaker graph (a `StateGraph` with one node per participant and one
conditional edge per participant whose path map is that participant's successors in the
flow, END included), one after the other in this process; prints the median of the
per-round CPU ratios (turnflow / LangGraph). LangGraph's `compile()` checks only that the
nodes the edges name exist.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


def generate(n: int, rules_per: int = 10, seed: int = 0) -> str:
    assert rules_per == 10, "the mix below is 10 rules per participant"
    rnd = random.Random(seed)
    out = [f'workflow scale_{n} "generated: {n} participants, {n * rules_per} rules" {{']
    for i in range(n):
        out.append(f'    participant p{i} "agent number {i}" tools [t{i}]')
    out += ["    start p0", "    max_turns 1000", "    context done = false", '    context mode = "slow"']
    for i in range(n):
        def pick() -> str:
            return f"p{rnd.randrange(n)}"
        a, b = pick(), pick()
        out.append(f'    handoff p{i} -> {a} via h{i}_0 "Route to {a}"')
        out.append(f'    handoff p{i} -> {b} via h{i}_1 "Route to {b}"')
        out.append(f"    p{i} -> {pick()} when tool t{i}")
        for k in range(3):
            out.append(f'    p{i} -> {pick()} when text contains "kw{k}"')
        out.append(f'    p{i} -> terminate "done" when context.done == true')
        out.append(f'    p{i} -> {pick()} when text contains "fast" and context.mode == "fast"')
        out.append(f"    p{i} -> {pick()} when tool t{i} and context.done == true priority -1")
        out.append(f"    p{i} -> p{(i + 1) % n} priority 2")
    out.append('    otherwise -> terminate "after_work"')
    out.append("}")
    return "\n".join(out) + "\n"


def in_process(text: str) -> dict:
    """Wall and CPU time of `turnflow.check(text)` (parser already built) run the way the
    `turnflow check` command runs it (its process switches on, the GC paused around the
    analysis; both done at the command's edge, never by a library call), with a breakdown
    (CPU) of the same work: parsing (the fast path's reading, building the AST), all checks."""
    import turnflow
    from turnflow import process
    from turnflow.compiler.checks import run_checks
    from turnflow.dsl.parser import build_parser, gc_paused, parse_source

    process.enable_cli_switches()  # the switches `turnflow check` turns on for its own process
    build_parser()
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    with gc_paused():  # as `turnflow check` runs `analyse` (turnflow/cli/commands/check.py)
        diags = turnflow.check(text, path="scale.flow")
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert not [d for d in diags if d.severity != "info"], diags[:3]
    # breakdown (same work, measured separately)
    gc.collect()
    with gc_paused():
        t1 = time.process_time()
        flow, _ = parse_source(text)
        t2 = time.process_time()
        run_checks(flow)
        t3 = time.process_time()
    return {"total": total, "cpu": cpu, "parse": t2 - t1, "checks": t3 - t2,
            "diagnostics": len(diags)}


def langgraph_edges(text: str) -> dict[str, list[str]]:
    """Per participant, its successors in the flow's speaker graph (turnflow's END as
    LangGraph's END), in declaration order: what the LangGraph build is given (not timed)."""
    from turnflow.compiler.speaker_graph import build_graph
    from turnflow.dsl.parser import parse_source

    flow, _ = parse_source(text)
    graph = build_graph(flow.blocks[0])
    return {p: graph.sorted_names(graph.g.successors(p)) for p in graph.participants}


def langgraph_build(edges: dict[str, list[str]], start: str) -> float:
    """CPU seconds to build and compile the speaker graph as a LangGraph `StateGraph`."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from turnflow.compiler.speaker_graph import END as FLOW_END

    class State(TypedDict):
        turn: int

    def speak(state: State) -> dict:
        return {"turn": state["turn"] + 1}

    gc.collect()
    c0 = time.process_time()
    g = StateGraph(State)
    for name in edges:
        g.add_node(name, speak)
    for name, nexts in edges.items():
        path = [END if n == FLOW_END else n for n in nexts]
        g.add_conditional_edges(name, lambda state, first=path[0]: first, path)
    g.add_edge(START, start)
    g.compile()
    return time.process_time() - c0


def peer_rounds(text: str, rounds: int) -> None:
    import statistics

    edges = langgraph_edges(text)
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(in_process(text)["cpu"])
        theirs.append(langgraph_build(edges, "p0"))
    ratios = sorted(a / b for a, b in zip(ours, theirs))
    print(f"    vs LangGraph build+compile, {rounds} rounds: turnflow check {statistics.median(ours):.3f} s CPU, "
          f"LangGraph {statistics.median(theirs):.3f} s (medians); turnflow / LangGraph paired median "
          f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})", flush=True)


def subprocess_time(path: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "turnflow", "check", "-q", path], env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"turnflow check failed ({proc.returncode}):\n{proc.stdout[:2000]}{proc.stderr[:2000]}")
    return elapsed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 4000])
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs")
    ap.add_argument("--no-subprocess", action="store_true")
    ap.add_argument("--peer", type=int, default=0, metavar="N",
                    help="N paired rounds against LangGraph's build+compile of the same graph")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            text = generate(n)
            path = os.path.join(tmp, f"scale_{n}.flow")
            Path(path).write_text(text, encoding="utf-8")
            runs = [in_process(text) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["cpu"])  # CPU time: steady when the machine is shared
            sub = None if args.no_subprocess else min(subprocess_time(path) for _ in range(args.repeat))
            rows.append((n, len(text.splitlines()), best, sub))
            sub_text = "" if sub is None else f"  subprocess {sub:6.2f} s"
            print(f"{n:6d} participants {n * 10:7d} rules {len(text) / 1e6:5.2f} MB: in-process {best['total']:6.2f} s "
                  f"(cpu {best['cpu']:.3f}; of which parse {best['parse']:.3f}, checks {best['checks']:.3f}){sub_text}", flush=True)
            if args.peer:
                peer_rounds(text, args.peer)
    for (n1, _, r1, s1), (n2, _, r2, s2) in zip(rows, rows[1:]):
        ratio = r2["total"] / r1["total"]
        line = f"ratio {n2}/{n1}: in-process {ratio:.2f}x (cpu {r2['cpu'] / r1['cpu']:.2f}x)"
        if s1 is not None and s2 is not None:
            line += f", subprocess {s2 / s1:.2f}x"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
