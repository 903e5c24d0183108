"""Issue 23: no function in `src/turnflow/migrate/` above cyclomatic complexity 20 (the issue asked
for 25; the front ends' last offenders were split since), as radon counts it (its nested functions
included); tests/test_complexity.py holds the rest of the package to the same 20 (the
frameworks' readers, `turnflow/frameworks/*/reader*.py`, among it)."""

from __future__ import annotations

from pathlib import Path

from scan_gc import collector_paused

MIGRATE = Path(__file__).resolve().parents[1] / "src" / "turnflow" / "migrate"
LIMIT = 20


def test_no_migrate_function_above_20():
    from radon.complexity import cc_visit
    from radon.visitors import Function

    found = {}
    with collector_paused():  # (tests/scan_gc.py)
        for path in sorted(MIGRATE.rglob("*.py")):
            for block in cc_visit(path.read_text(encoding="utf-8")):
                if isinstance(block, Function) and block.complexity > LIMIT:
                    found[f"{path.name}:{block.fullname}"] = block.complexity
    assert not found, found
