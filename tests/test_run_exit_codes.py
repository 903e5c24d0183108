"""Exit codes of `turnflow run --tasks` against the command-line policy (docs/cli.md): 2 when
the store cannot be used (not a turnflow store, in use, unreachable: as a single `run`), 1 for a
task file with a bad line — malformed JSON as much as a bad field (docs/scale.md) — and never an
internal error (3) whatever a line holds."""

from __future__ import annotations

import sqlite3

import pytest
from batch_helpers import write_batch

from turnflow.cli import main


def _run(files, tasks=None, store=None):
    argv = ["run", files["flow"], "--agents", files["agents"], "--tasks", tasks or files["tasks"]]
    return main(argv + (["--store", store] if store else []))


@pytest.mark.parametrize("line, message", [
    ("[" * 100_000, "not valid JSON: JSON nested more than 200 levels deep (column 201)"),
    ('{"id": "b", "context": {"x": NaN}}', "not valid JSON: NaN is not valid JSON (column 30)"),
    ('{"id": "b", "task": "\\ud800"}', "not valid JSON: a string holds a lone surrogate"),
    ('{"id": "b", ', "not valid JSON: Expecting property name enclosed in double quotes (column 13)"),
    ('{"id": "b", "prompt": "x"}', "unknown key 'prompt'"),
])
def test_a_bad_task_line_is_exit_1_with_its_line_never_an_internal_error(tmp_path, capsys, line, message):
    files = write_batch(tmp_path, 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n' + line + "\n")
    assert _run(files, str(bad), str(tmp_path / "hub.db")) == 1
    err = capsys.readouterr().err
    assert f"turnflow run: {bad}:2: {message}" in err and "internal error" not in err
    assert not (tmp_path / "hub.db").exists()  # nothing was started


def test_a_sqlite_file_that_is_not_a_turnflow_store_is_exit_2_as_for_a_single_run(tmp_path, capsys):
    files = write_batch(tmp_path, 1)
    foreign = tmp_path / "notes.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE notes (t TEXT)")
    db.commit()
    db.close()
    before = foreign.read_bytes()
    assert main(["run", files["flow"], "--agents", files["agents"], "--store", str(foreign)]) == 2
    single = capsys.readouterr().err
    assert _run(files, store=str(foreign)) == 2
    err = capsys.readouterr().err
    assert "not a turnflow store (it has tables ['notes'])" in err and err == single
    assert foreign.read_bytes() == before


def test_a_store_in_use_by_another_run_is_exit_2(tmp_path, capsys):
    from turnflow.runtime.store import SQLiteStore

    files = write_batch(tmp_path, 1)
    path = str(tmp_path / "hub.db")
    holder = SQLiteStore(path)  # holds the writer's lock, as a running `turnflow run` does
    try:
        assert _run(files, store=path) == 2
        assert "store in use by pid" in capsys.readouterr().err
    finally:
        holder.close()
    assert _run(files, store=path) == 0
