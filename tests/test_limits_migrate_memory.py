"""Issue 33, item 9: `turnflow migrate` of 20,000 agents needed 2.3 GB. What the command holds
while it checks the flow it wrote is the text alone (the migrated tree and typed model are let
go first), the model's statements and the printer's lines are slotted, and the printer lets
each line's item go once the line is made. Measured (tracemalloc, deterministic) as the
command's peak per byte of migrated flow on bench/migrate_agents.py's 500-agent "everyone"
chat: ~32 bytes now, ~41 before."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

from turnflow.cli import main

_BENCH = Path(__file__).resolve().parents[1] / "bench" / "migrate_agents.py"
_spec = importlib.util.spec_from_file_location("migrate_agents_bench", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_migrate_command_memory_per_output_byte(tmp_path, capsys):
    src, out = tmp_path / "team.py", tmp_path / "team.flow"
    src.write_text(bench.SOURCES["everyone"](500))
    assert main(["migrate", str(src), "-o", str(out), "-q"]) == 0  # warm: imports, parser tables
    tracemalloc.start()
    try:
        assert main(["migrate", str(src), "-o", str(out), "-q"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    capsys.readouterr()
    per_byte = peak / out.stat().st_size
    assert per_byte < 36, f"{per_byte:.1f} bytes of memory per byte of migrated flow"
