"""A SQLite store whose `-wal` file was lost after a crash (issue #25, item 3): the records
committed to the WAL but never copied into the main file are gone. Every command says so
(exit 2): `inspect`, `inspect --summary`, `inspect --format json`, a single `run` and
`run --tasks`, which must not run again the tasks it reported done. A store deleted on purpose
(its `.lock` left behind) is a new store, not a damaged one."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from batch_helpers import cli, here, run_here, run_to_end, write_batch


def _tf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "turnflow", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def lost(tmp_path_factory):
    """(batch files, a store whose -wal was lost after 11 tasks were reported done, the intact store)."""
    tmp = tmp_path_factory.mktemp("lostwal")
    files = write_batch(tmp, 1)
    db = tmp / "runs.db"
    assert run_to_end(files, str(db)).returncode == 0  # one task, closed cleanly: in the main file
    holder = sqlite3.connect(db)  # a second connection: the batch's close cannot checkpoint the WAL
    try:
        holder.execute("SELECT COUNT(*) FROM sessions").fetchone()
        files = write_batch(tmp, 12)
        res = run_to_end(files, str(db))
        assert res.returncode == 0 and "done 12" in res.stdout and "skipped 1" in res.stdout, res.stdout
        assert (tmp / "runs.db-wal").stat().st_size > 0
        copy = tmp / "lost.db"  # the store as a crash and a deleted -wal leave it: the main file alone
        shutil.copyfile(db, copy)
        shutil.copyfile(str(db) + ".lock", str(copy) + ".lock")
    finally:
        holder.close()
    return files, copy, db


def test_inspect_says_records_are_missing_in_every_form(lost, capsys):
    _, copy, good = lost
    for extra in ((), ("--summary",), ("--format", "json"), ("--summary", "--format", "json")):
        # the first form as a real process, the others through turnflow.cli.main in this process
        res = _tf("inspect", str(copy), *extra) if not extra else here(capsys, "inspect", str(copy), *extra)
        assert res.returncode == 2, (extra, res.stdout[-800:], res.stderr[-800:])
        assert "records are missing" in res.stderr and "-wal" in res.stderr, (extra, res.stderr[-800:])
        assert "internal error" not in res.stderr
        if not extra:
            assert "1 session\n" in res.stdout  # what survived is still shown
    ok = here(capsys, "inspect", str(good), "--summary")  # the intact store (its -wal kept): no false alarm
    assert ok.returncode == 0 and "missing" not in ok.stderr, ok.stderr
    assert "done 12" in ok.stdout


def test_run_tasks_refuses_instead_of_running_done_tasks_again(lost):
    files, copy, _ = lost
    before = copy.read_bytes()
    res = subprocess.run(cli(files, str(copy)), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, (res.stdout[-800:], res.stderr[-800:])
    assert "records are missing" in res.stderr and "nothing was written" in res.stderr, res.stderr
    assert "done" not in res.stdout  # no task ran again
    assert copy.read_bytes() == before
    single = _tf("run", files["flow"], "--agents", files["agents"], "--task", "hello", "--store", str(copy))
    assert single.returncode == 2 and "records are missing" in single.stderr, single.stderr[-800:]
    assert copy.read_bytes() == before
    serve = _tf("serve", "--store", str(copy), "--listen", "127.0.0.1:0")
    assert serve.returncode == 2 and "records are missing" in serve.stderr, serve.stderr[-800:]
    assert copy.read_bytes() == before


def test_deleting_the_lock_file_carries_on_from_what_survived(lost, tmp_path, capsys):
    files, copy, _ = lost
    mine = tmp_path / "mine.db"
    shutil.copyfile(copy, mine)
    shutil.copyfile(str(copy) + ".lock", str(mine) + ".lock")
    res = subprocess.run(cli(files, str(mine)), capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and f"delete {mine}.lock" in res.stderr, res.stderr  # the refusal says how
    Path(str(mine) + ".lock").unlink()
    res = run_here(capsys, files, str(mine))
    assert res.returncode == 0 and "done 12" in res.stdout and "skipped 1" in res.stdout, res.stdout
    assert here(capsys, "inspect", str(mine), "--summary").returncode == 0


def test_a_store_deleted_on_purpose_is_a_new_store(lost, tmp_path, capsys):
    files, _, good = lost
    fresh = tmp_path / "fresh.db"
    shutil.copyfile(str(good) + ".lock", str(fresh) + ".lock")  # the old store's lock file left behind
    res = run_here(capsys, files, str(fresh))
    assert res.returncode == 0 and "done 12" in res.stdout and "skipped" not in res.stdout, res.stdout
    ins = here(capsys, "inspect", str(fresh))
    assert ins.returncode == 0 and "missing" not in ins.stderr, ins.stderr
