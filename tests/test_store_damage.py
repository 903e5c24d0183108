"""Damaged SQLite stores (issue #25, item 3): flipped bytes and bytes that are not UTF-8 are
reported (exit 2 for a damaged file, the damaged sessions named, the readable ones shown),
never an internal error; `run` refuses a damaged store before writing anything."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from batch_helpers import cli, here, run_to_end, write_batch

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("damage")
    files = write_batch(tmp, 12)
    db = str(tmp / "runs.db")
    res = run_to_end(files, db)
    assert res.returncode == 0, res.stderr
    return files, Path(db)


def _inspect(db: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "turnflow", "inspect", str(db), *extra], capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def inspect_here(capsys):
    """`_inspect` through turnflow.cli.main in this process (the flipped-bytes test runs it as a
    real process too)."""
    return lambda db, *extra: here(capsys, "inspect", str(db), *extra)


def test_flipped_bytes_are_exit_2_with_the_damage_and_the_readable_sessions(store, tmp_path, inspect_here):
    files, good = store
    data = bytearray(good.read_bytes())
    rnd = random.Random(7)
    for _ in range(300):  # past the header page: tables and indexes
        i = rnd.randrange(4096, len(data))
        data[i] ^= 0xFF
    bad = tmp_path / "flipped.db"
    bad.write_bytes(bytes(data))
    for extra in ((), ("--summary",), ("--format", "json")):
        res = (inspect_here if extra else _inspect)(bad, *extra)
        assert res.returncode == 2, (extra, res.stderr[-1500:])
        assert "internal error" not in res.stderr and "damaged" in res.stderr, res.stderr[-1500:]
    copy = tmp_path / "run.db"
    copy.write_bytes(bytes(data))
    before = copy.read_bytes()
    res = subprocess.run(cli(files, str(copy)), capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "damaged" in res.stderr, res.stderr[-1500:]
    assert copy.read_bytes() == before  # nothing written to it


def test_a_record_that_is_not_utf8_is_reported_and_the_others_shown(store, tmp_path, inspect_here):
    _, good = store
    data = bytearray(good.read_bytes())
    at = data.find(b'"body":"b says')  # inside one envelope's record
    assert at > 0
    data[at + 9] = 0xFF  # not UTF-8 (and not a checksum match)
    bad = tmp_path / "utf8.db"
    bad.write_bytes(bytes(data))
    res = inspect_here(bad)
    assert res.returncode == 1, res.stderr[-1500:]  # a corrupt record is a finding, the file is sound
    assert "checksum mismatch" in res.stderr and "internal error" not in res.stderr
    assert "12 sessions" in res.stdout  # every session is still listed


def test_json_and_text_name_each_damaged_session_with_its_record_and_kind(store, tmp_path, inspect_here):
    import json
    import sqlite3

    _, good = store
    data = bytearray(good.read_bytes())
    at = data.find(b'"body":"b says')
    data[at + 9] = 0xFF  # one envelope fails its checksum
    bad = tmp_path / "detail.db"
    bad.write_bytes(bytes(data))
    db = sqlite3.connect(bad)
    hit = db.execute("SELECT session_id, seq FROM envelopes WHERE instr(CAST(record AS BLOB), X'FF') > 0").fetchone()
    gone = db.execute("SELECT session_id FROM sessions WHERE session_id != ? ORDER BY n LIMIT 1", (hit[0],)).fetchone()[0]
    db.execute("UPDATE sessions SET crc = crc + 1 WHERE session_id = ?", (gone,))  # its creation record fails
    db.commit()
    db.close()
    res = inspect_here(bad, "--format", "json")
    assert res.returncode == 1, res.stderr[-1500:]
    rows = {r["session_id"]: r for r in json.loads(res.stdout)}
    assert len(rows) == 12  # the 11 readable sessions and the one that cannot be read
    assert rows[hit[0]]["damage"] == [{"seq": hit[1], "kind": "checksum", "detail": "checksum mismatch"}]
    assert rows[hit[0]]["state"] != "closed" and rows[hit[0]]["turn_count"] < 12  # folded up to the damage
    assert rows[gone]["state"] == "unreadable" and rows[gone]["damage"][0]["seq"] == 0
    assert rows[gone]["damage"][0]["kind"] == "checksum"
    sound = [r for sid, r in rows.items() if sid not in (hit[0], gone)]
    assert all(r["damage"] == [] and r["state"] == "closed" for r in sound)
    text = inspect_here(bad)
    assert text.returncode == 1
    lines = {ln.split()[0]: ln for ln in text.stdout.splitlines()[1:-1]}
    assert " damaged " in lines[hit[0]] and " unreadable" in lines[gone]
    assert text.stdout.endswith("12 sessions, 2 damaged\n")
    assert f"session {hit[0]} seq {hit[1]}: checksum mismatch" in text.stderr
    events = inspect_here(bad, "--session", hit[0])
    assert f"damaged: seq {hit[1]} checksum: checksum mismatch" in events.stdout
