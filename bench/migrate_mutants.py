"""`turnflow.migrate.migrate` over the mutants of tests/test_migrate_mutations.py (the fixtures
with one construct wrapped, rebound, moved into `async def main()`, or a framework call written
in its other argument form): 1,308 small real-world-shaped modules, the suite's heaviest user of
migrate.

    python3 bench/migrate_mutants.py TREE [REPEATS]

TREE is a checkout (its `src` and `tests` go first on `sys.path`). Prints the number of mutants,
the best CPU time of REPEATS passes, and a hash of every output text and diagnostic (equal
hashes: the same output) — run it on two checkouts alternately to compare.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import time


def main() -> None:
    tree = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sys.path[:0] = [tree + "/src", tree + "/tests"]
    mutations = importlib.import_module("test_migrate_mutations")
    from turnflow.migrate import MigrateError, migrate

    texts = [t for p in mutations.FILES for _, t, _ in mutations._mutants(p)]
    texts += [t for p in mutations.FILES for _, t in mutations._forms(p)]
    best, digest = float("inf"), ""
    for _ in range(repeats):
        h = hashlib.sha256()
        started = time.process_time()
        for text in texts:
            try:
                r = migrate(text, "mutant.py")
                h.update(r.text.encode())
                h.update(repr([(d.code, d.message, d.span.line) for d in r.diagnostics]).encode())
            except MigrateError as err:
                h.update(repr([(d.code, d.message) for d in err.diagnostics]).encode())
        best = min(best, time.process_time() - started)
        digest = h.hexdigest()[:16]
    print(f"{len(texts)} mutants, best of {repeats}: {best:.3f} s CPU, output {digest}")


if __name__ == "__main__":
    main()
