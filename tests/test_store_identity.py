"""One store, one writer, whatever its name (issue #33, items 1 and 6): the writer's lock is taken
on the file itself, so `--store w.db` and a symbolic or hard link to it cannot both write; and the
`.lock` file beside a store is not trusted — a symbolic link planted there is never followed (its
target is never truncated), a FIFO never hangs `run` or `inspect`: either is refused, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from batch_helpers import cli, here, run_here, run_to_end, write_batch

from turnflow.cli import main
from turnflow.runtime.errors import StoreError
from turnflow.runtime.store import SQLiteStore


@pytest.fixture()
def store(tmp_path, capsys):
    files = write_batch(tmp_path, 2)
    db = tmp_path / "w.db"
    assert run_here(capsys, files, str(db)).returncode == 0  # made in this process: the tests' commands are real
    return files, db


def _other_name(db, kind):
    other = db.parent / f"{kind}.db"
    (os.symlink if kind == "symlink" else os.link)(db, other)
    return other


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_link_to_a_store_being_written_is_in_use(store, kind, capsys):
    files, db = store
    other = _other_name(db, kind)
    holder = SQLiteStore(str(db))  # a `run --store w.db` writing now
    try:
        with pytest.raises(StoreError, match="store in use by"):
            SQLiteStore(str(other))
        assert main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
                     "--store", str(other)]) == 2
        assert "store in use by" in capsys.readouterr().err
    finally:
        holder.close()
    second = SQLiteStore(str(other))  # and the other way round
    try:
        with pytest.raises(StoreError, match="store in use by"):
            SQLiteStore(str(db))
    finally:
        second.close()


def test_both_names_never_write_at_once_in_two_processes(store):
    """Two `run --tasks` through the two names of one store: one runs the batch, the other is
    refused (exit 2) before writing; no task fails for it."""
    files, db = store
    other = _other_name(db, "symlink")
    (db.parent / "tasks.jsonl").write_text("".join(f'{{"id": "n{i}"}}\n' for i in range(6)))
    env = {**os.environ, "TF_DELAY": "0.05"}
    procs = [subprocess.Popen(cli(files, str(name)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for name in (db, other)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 2], [0, 0]), results  # [0, 0]: the first was done before the second began
    assert all("in use" in err for code, err in results if code == 2)
    import sqlite3

    con = sqlite3.connect(db)
    try:
        states = dict(con.execute("SELECT id, state FROM turnflow_tasks").fetchall())
    finally:
        con.close()
    assert {states[f"n{i}"] for i in range(6)} == {"done"}, states


def test_a_symlink_planted_as_the_lock_file_is_refused_and_its_target_untouched(store, tmp_path, capsys):
    files, db = store
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate me\n" * 20)
    before = victim.read_bytes()
    os.unlink(str(db) + ".lock")
    os.symlink(victim, str(db) + ".lock")
    res = run_here(capsys, files, str(db))  # in this process (the FIFO test below runs real processes)
    assert res.returncode == 2, res.stderr
    assert f"{db}.lock" in res.stderr and "symbolic link" in res.stderr and "Traceback" not in res.stderr
    assert victim.read_bytes() == before
    assert here(capsys, "inspect", str(db)).returncode == 0  # reading needs no lock: the planted link is ignored
    assert victim.read_bytes() == before


def test_a_fifo_as_the_lock_file_never_hangs_run_or_inspect(store):
    files, db = store
    os.unlink(str(db) + ".lock")
    os.mkfifo(str(db) + ".lock")
    res = run_to_end(files, str(db), timeout=30)
    assert res.returncode == 2 and "not a regular file" in res.stderr, res.stderr
    for extra in ([], ["--summary"], ["--format", "json"]):
        shown = _tf("inspect", str(db), *extra)
        assert shown.returncode == 0, shown.stderr


def _tf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "turnflow", *args], capture_output=True, text=True, timeout=30)
