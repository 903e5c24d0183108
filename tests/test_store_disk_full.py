"""A disk that fills up under `run --tasks` (issue #33, item 4) is the store's failure, not the
agents' and not turnflow's: exit 2 naming the store — as a single `run` says — never an internal
error (exit 3), and no task is recorded failed for it: what did not finish stays unfinished, so
the same command continues once there is room again.

The full disk is SQLite's own: `PRAGMA max_page_count` caps the file a few pages above its size,
so the next writes that need a new page fail with SQLITE_FULL ("database or disk is full"),
exactly as on a full file system."""

from __future__ import annotations

import sqlite3

import pytest
from batch_helpers import StoreReader, write_batch

import turnflow.runtime.store as stores
from turnflow.cli import main


@pytest.fixture()
def full_disk(monkeypatch):
    """Every SQLite store opened for writing gets `room` pages more than it holds."""
    room = {"pages": 0}
    real = stores.open_store

    def capped(value, **kw):
        store = real(value, **kw)
        if not kw.get("read_only") and hasattr(store, "db"):
            pages = store.db.execute("PRAGMA page_count").fetchone()[0]
            store.db.execute(f"PRAGMA max_page_count = {pages + room['pages']}")
        return store

    monkeypatch.setattr(stores, "open_store", capped)
    return room


def _batch(files, store):
    return main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store])


@pytest.mark.parametrize("pages", [0, 6, 30, 40])
def test_a_disk_full_during_a_batch_is_exit_2_naming_the_store_and_fails_no_task(tmp_path, capsys, full_disk, pages,
                                                                                  monkeypatch):
    files = write_batch(tmp_path, 40)
    db = str(tmp_path / "hub.db")
    con = sqlite3.connect(db)  # an existing store, so the cap applies to the batch's own writes
    con.close()
    full_disk["pages"] = pages
    code = _batch(files, db)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert f"turnflow run: {db}" in captured.err and "full" in captured.err, captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    try:
        states = {row[0] for row in StoreReader(db).tasks().values()}
    except sqlite3.OperationalError:  # full before the task list could be made
        states = set()
    assert "failed" not in states and "done" in states | ({"done"} if pages < 30 else set()), states
    monkeypatch.undo()  # room again: the same command finishes the batch
    assert _batch(files, db) == 0
    assert {row[0] for row in StoreReader(db).tasks().values()} == {"done"}
