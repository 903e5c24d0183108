"""Seeded random damage to a small SQLite store with unfinished tasks (issue #33, item 5): whatever
is damaged, `run --tasks` and `inspect` (text, `--summary`, `--format json`) never exit 3, and
`run` never writes to a damaged file — it either finds nothing wrong and finishes the batch
(exit 0), or refuses before writing anything (exit 2, "damaged"), the file's bytes unchanged.

The damages (DAMAGES of them, 40 by default; TF_DAMAGES=400 for a longer run) flip bytes, zero or
scramble a span, truncate the file, or edit one row in place through SQLite the way a bad disk
or a stray tool could (a task row's JSON, a record's text, a meta key, NULLs)."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from batch_helpers import interrupt, start, write_batch

from turnflow.cli import main

DAMAGES = int(os.environ.get("TF_DAMAGES", "40"))


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory):
    """(batch files, a store a run was interrupted on: some tasks done, some running, some pending)."""
    tmp = tmp_path_factory.mktemp("randomdamage")
    files = write_batch(tmp, 10)
    db = tmp / "runs.db"
    proc = start(files, str(db), "--concurrency", "3", delay=0.02)
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until some tasks are done and others are under way
        time.sleep(0.1)
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            done = con.execute("SELECT COUNT(*) FROM turnflow_tasks WHERE state = 'done'").fetchone()[0]
            con.close()
        except sqlite3.Error:
            continue
        if done >= 3:
            break
    code, _, err = interrupt(proc)
    assert code == 130, err
    con = sqlite3.connect(db)
    states = {r[0] for r in con.execute("SELECT state FROM turnflow_tasks")}
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    assert "done" in states and states & {"pending", "running"}, states
    return files, db


def _row_edit(rnd: random.Random, path: Path) -> None:
    """One row edited in place, as damage that SQLite's page checks cannot see."""
    con = sqlite3.connect(path)
    edits = [
        "UPDATE turnflow_tasks SET context = substr(context, 1, length(context) - 1) WHERE rowid = {r}",
        "UPDATE turnflow_tasks SET result = '{{\"id\": ' WHERE rowid = {r} AND result IS NOT NULL",
        "UPDATE turnflow_tasks SET result = 'null' WHERE rowid = {r} AND result IS NOT NULL",
        "UPDATE turnflow_tasks SET context = NULL, task = X'FF00' WHERE rowid = {r}",
        "UPDATE turnflow_tasks SET state = 'exploded' WHERE rowid = {r}",
        "UPDATE turnflow_tasks SET attempts = 'many' WHERE rowid = {r}",
        "UPDATE envelopes SET record = substr(record, 2) WHERE rowid = {r}",
        "UPDATE envelopes SET record = NULL WHERE rowid = {r}",
        "UPDATE envelopes SET crc = NULL WHERE rowid = {r}",
        "UPDATE sessions SET record = X'7B22' WHERE rowid = {r}",
        "UPDATE sessions SET session_id = NULL WHERE rowid = {r}",
        "UPDATE meta SET key = 'store_jd' WHERE key = 'store_id'",
        "UPDATE meta SET value = X'FFFE' WHERE key = 'store_id'",
    ]
    try:
        con.execute(rnd.choice(edits).format(r=rnd.randint(1, 8)))
        con.commit()
    except sqlite3.IntegrityError:  # a NOT NULL column: SQLite itself refuses that damage
        pass
    con.close()


def _damage(rnd: random.Random, good: Path, bad: Path) -> str:
    shutil.copyfile(good, bad)
    kind = rnd.choice(["flip", "zero", "scramble", "truncate", "row", "row"])
    if kind == "row":
        _row_edit(rnd, bad)
        return kind
    data = bytearray(bad.read_bytes())
    if kind == "flip":
        for _ in range(rnd.randint(1, 6)):
            data[rnd.randrange(100, len(data))] ^= 1 << rnd.randrange(8)
    elif kind in ("zero", "scramble"):
        at, n = rnd.randrange(100, len(data)), rnd.randint(1, 600)
        fill = bytes(n) if kind == "zero" else bytes(rnd.randrange(256) for _ in range(n))
        data[at:at + n] = fill[:len(data) - at]
    else:
        del data[rnd.randrange(100, len(data)):]
    bad.write_bytes(bytes(data))
    return kind


def _run(files, db) -> int:
    return main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", str(db)])


def test_random_damage_is_never_exit_3_and_run_never_writes_to_a_damaged_file(unfinished, tmp_path, capsys):
    files, good = unfinished
    rnd = random.Random(3301)
    seen: dict[str, int] = {}
    for i in range(DAMAGES):
        bad = tmp_path / f"d{i}.db"
        kind = _damage(rnd, good, bad)
        for extra in ([], ["--summary"], ["--format", "json"]):
            code = main(["inspect", str(bad), *extra])
            err = capsys.readouterr().err
            assert code in (0, 1, 2) and "internal error" not in err, (i, kind, extra, err[-3000:])
        before = bad.read_bytes()
        code = _run(files, bad)
        err = capsys.readouterr().err
        assert code in (0, 2) and "internal error" not in err, (i, kind, code, err[-3000:])
        if code == 2:
            assert "damaged" in err or "not a database" in err, (i, kind, err[-3000:])
            assert bad.read_bytes() == before, (i, kind, "written to")
        seen[f"{kind}:{code}"] = seen.get(f"{kind}:{code}", 0) + 1
        for p in (bad, Path(f"{bad}.lock")):
            p.unlink(missing_ok=True)
    assert any(k.endswith(":2") for k in seen), seen  # the damage was found, not always missed


@pytest.mark.parametrize("edit", [
    "UPDATE meta SET key = 'store_jd' WHERE key = 'store_id'",  # the id unreadable: no new one is made
    "UPDATE turnflow_tasks SET result = '{\"id\": ' WHERE rowid = 2",
    "UPDATE envelopes SET crc = crc + 1 WHERE rowid = 5",
])
def test_a_damaged_store_whose_tasks_are_all_done_is_not_written_to(tmp_path, capsys, edit):
    files = write_batch(tmp_path, 3)
    db = tmp_path / "done.db"
    assert _run(files, db) == 0
    capsys.readouterr()
    con = sqlite3.connect(db)
    con.execute(edit)
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = db.read_bytes()
    for extra in ([], ["--summary"], ["--format", "json"]):  # every read path: the damage, what is readable
        code = main(["inspect", str(db), *extra])
        shown = capsys.readouterr()
        if "envelopes" in edit and "--summary" in extra:  # SQL aggregates: the record decodes, no checksums read
            assert code == 0
        elif "envelopes" in edit:  # one record failing its checksum: a finding (exit 1), the file sound
            assert code == 1 and "checksum mismatch" in shown.err, shown.err
        else:
            assert code == 2 and "the store is damaged" in shown.err, shown.err
        assert "3 sessions" in shown.out or shown.out.count('"session_id"') == 3, shown.out
    assert _run(files, db) == 2
    err = capsys.readouterr().err
    assert "the store is damaged" in err and "nothing was written" in err, err
    assert db.read_bytes() == before
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM meta WHERE key = 'store_id'").fetchone()[0] == ("store_jd" not in edit)
    con.close()
