"""`turnflow migrate NOTEBOOK.ipynb`: diagnostics point at the cell and the line within it, as
Jupyter, ruff (`nb.ipynb:cell 3:5:24: ...`) and nbqa show them, not at the raw JSON of the file;
the machine formats keep the file position and add the cell position alongside (docs/cli.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from turnflow.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "notebook" / "two_agents.ipynb"
# cell 1 is Markdown; cell 3, line 5: `    is_termination_msg=lambda m: ...endswith("DONE"))` (TF405 at the lambda)
TERMINATION_LINE = '    is_termination_msg=lambda m: m.get("content", "").rstrip().endswith("DONE"))'


def _copy(tmp_path: Path, edit=None) -> Path:
    nb = tmp_path / "two_agents.ipynb"
    if edit is None:
        shutil.copy(FIXTURE, nb)
    else:
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        edit(data["cells"])
        nb.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return nb


def _migrate(nb: Path, tmp_path: Path, *fmt: str) -> tuple[int, str]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["migrate", str(nb), "-o", str(tmp_path / "out.flow"), *fmt])
    return code, buf.getvalue()


def test_text_output_names_the_cell_and_the_line_in_it(tmp_path):
    nb = _copy(tmp_path)
    code, out = _migrate(nb, tmp_path)
    assert code == 0
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "TF405" in line)
    assert lines[head].startswith(f"{nb}:cell 3:5:24: TF405 warning: the manager's `is_termination_msg` uses")
    # the source shown is the cell's Python line (no JSON quoting), numbered as in the cell
    assert lines[head + 1] == f"   5 | {TERMINATION_LINE}"
    assert lines[head + 2].index("^") == len("   5 | ") + 23


def test_concise_and_grouped_name_the_cell(tmp_path):
    nb = _copy(tmp_path)
    _, concise = _migrate(nb, tmp_path, "--format", "concise")
    assert f"{nb}:cell 3:5:24: TF405 warning: " in concise
    _, grouped = _migrate(nb, tmp_path, "--format", "grouped")
    assert "  cell 3:5:24 TF405 warning: " in grouped


def test_json_keeps_the_file_position_and_adds_the_cell(tmp_path):
    nb = _copy(tmp_path)
    _, out = _migrate(nb, tmp_path, "--format", "json")
    found = [d for d in json.loads(out) if d["code"] == "TF405"]
    assert len(found) == 1
    d = found[0]
    raw = nb.read_text(encoding="utf-8").splitlines()
    assert "is_termination_msg=lambda" in raw[d["line"] - 1]  # line/column: the .ipynb file itself
    assert d["cell"] == {"cell": 3, "line": 5, "column": 24, "end_line": 5,
                         "end_column": len(TERMINATION_LINE)}  # the lambda, end exclusive: up to the call's `)`


def test_sarif_result_carries_the_cell(tmp_path):
    nb = _copy(tmp_path)
    _, out = _migrate(nb, tmp_path, "--format", "sarif")
    results = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "TF405"]
    assert results[0]["properties"] == {"cell": 3, "cellLine": 5, "cellColumn": 24}


def test_a_cell_held_as_one_string_maps_every_line(tmp_path):
    """nbformat allows `source` as one string: line 5 of the cell is still line 5, not line 1."""
    def join(cells):
        cells[2]["source"] = "".join(cells[2]["source"])

    nb = _copy(tmp_path, join)
    _, out = _migrate(nb, tmp_path, "--format", "concise")
    assert f"{nb}:cell 3:5:24: TF405 warning: " in out


def test_a_syntax_error_names_its_cell(tmp_path):
    def broken(cells):
        cells[4]["source"] = ["planner.initiate_chat(manager, message=\"Plan it.\")\n", "x = = 1\n"]

    nb = _copy(tmp_path, broken)
    code, out = _migrate(nb, tmp_path)
    assert code == 1
    assert out.startswith(f"{nb}:cell 5:2:5: TF401 error: Python syntax error: invalid syntax\n   2 | x = = 1\n")
    assert not (tmp_path / "out.flow").exists()
    # the Python API says the same
    from turnflow.migrate import MigrateError, migrate

    with pytest.raises(MigrateError) as err:
        migrate(nb.read_text(encoding="utf-8"), "nb.ipynb")
    assert str(err.value).startswith("nb.ipynb:cell 5:2:5: TF401 Python syntax error")
    assert err.value.diagnostics[0].cell is not None and err.value.diagnostics[0].cell.text == "x = = 1"
