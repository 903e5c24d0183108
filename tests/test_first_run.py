"""Issue 35, part 2, item 7: one vocabulary on the command line and docs that match what runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import turnflow
from turnflow.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_invalid_json_is_reported_one_way_by_run_decompile_and_migrate(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": \n')
    want = f"{bad}:2:1: TF401 error: invalid JSON: Expecting value"
    agents = str(ROOT / "examples" / "support_agents.yaml")
    for argv in (["run", str(bad), "--agents", agents], ["decompile", str(bad)], ["migrate", str(bad)]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        first = err.splitlines()[0].removeprefix("turnflow run: ")
        assert first == want, (argv, err)


def test_one_turn_is_one_turn():
    text = "workflow w {\n    participant a\n    participant b\n    start a\n    max_turns 3\n    a -> terminate\n}\n"
    tf211 = [d.message for d in turnflow.check(text) if d.code == "TF211"]
    assert tf211 and tf211[0].endswith("a -> terminate, takes 1 turn"), tf211


def test_graph_stats_is_the_per_block_option_and_stats_its_old_name(capsys):
    flow = str(ROOT / "examples" / "support.flow")
    assert main(["check", "--graph-stats", flow]) == 0
    new = capsys.readouterr().out
    assert main(["check", "--stats", flow]) == 0
    assert capsys.readouterr().out == new and "workflow support: 4 participants" in new
    assert main(["check", "--statistics", flow]) == 0
    assert "workflow support" not in capsys.readouterr().out  # counts findings per code instead


def test_a_folder_without_flows_exits_0_as_the_readme_says(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 0
    assert "No .flow files found" in capsys.readouterr().err
    readme = (ROOT / "README.md").read_text()
    assert "a folder without `.flow` files, a binary" not in readme
    assert "A folder without `.flow` files is not an error" in readme


def _python_block_after(doc: str, marker: str) -> str:
    text = (ROOT / doc).read_text()
    start = text.index("```python\n", text.index(marker)) + len("```python\n")
    return text[start:text.index("```", start)]


def test_the_register_extensions_script_in_docs_compiler_md_runs():
    pytest.importorskip("ag2")
    code = _python_block_after("docs/compiler.md", "A whole script (run from the repository root")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"opened a workflow channel with 4 participants\n", proc.stdout), proc.stdout
