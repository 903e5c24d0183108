"""Compile and decompile throughput on generated workflows.

    PYTHONPATH=src python3 bench/compile_bench.py [PARTICIPANTS] [RULES]

Prints, for N and 2N, the time of `turnflow.compile` (parse + check + emit),
`turnflow.decompile` (build AST + print + verify by recompiling) and the
doubling ratio. Not part of the test suite."""

import random
import sys
import time

import turnflow
from turnflow.compiler.emit.spec import compile_block


def make_flow(participants: int, rules: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    names = [f"p{i}" for i in range(participants)]
    lines = ["workflow big {"]
    for i, n in enumerate(names):
        lines.append(f"    participant {n} \"agent {i}\" tools [t{i}]")
    lines += ["    start p0", "    max_turns 1000", "    context status = \"open\""]
    for r in range(rules):
        src = rnd.choice(names + ["*"])
        dst = rnd.choice(names + ["terminate", "next", "stay"])
        kind = r % 4
        if kind == 0 and src != "*":
            lines.append(f"    handoff {src} -> {dst} via h{r} \"handoff {r}\"")
        elif kind == 1:
            lines.append(f"    {src} -> {dst} when context.status == \"s{r % 7}\" priority {r % 5}")
        elif kind == 2 and src != "*":
            lines.append(f"    {src} -> {dst} when tool t{names.index(src)}")
        else:
            lines.append(f"    {src} -> {dst} when text contains \"w{r}\" and context.status == \"x\"")
    lines.append("}")
    return "\n".join(lines) + "\n"


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rows = []
    for scale in (1, 2):
        text = make_flow(n * scale, m * scale)
        specs = turnflow.compile(text)
        flow = turnflow.parse(text)
        tc = best(lambda: turnflow.compile(text))
        te = best(lambda: [compile_block(b) for b in flow.blocks])
        td = best(lambda: turnflow.decompile(specs))
        rows.append((tc, te, td))
        print(f"{n * scale:>6} participants {m * scale:>7} rules: compile {tc * 1e3:8.1f} ms "
              f"(emit only {te * 1e3:6.1f} ms), decompile {td * 1e3:8.1f} ms")
    print("doubling ratio: " + ", ".join(f"{what} {b / a:.2f}x" for what, a, b in
                                         zip(("compile", "emit", "decompile"), rows[0], rows[1])))


if __name__ == "__main__":
    main()
