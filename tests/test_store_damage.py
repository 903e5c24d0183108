"""Damaged SQLite stores (issue #25, item 3): flipped bytes and bytes that are not UTF-8 are
reported (exit 2 for a damaged file, the damaged sessions named, the readable ones shown),
never an internal error; `run` refuses a damaged store before writing anything."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from batch_helpers import cli, run_to_end, write_batch

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


def test_flipped_bytes_are_exit_2_with_the_damage_and_the_readable_sessions(store, tmp_path):
    files, good = store
    data = bytearray(good.read_bytes())
    rnd = random.Random(7)
    for _ in range(300):  # past the header page: tables and indexes
        i = rnd.randrange(4096, len(data))
        data[i] ^= 0xFF
    bad = tmp_path / "flipped.db"
    bad.write_bytes(bytes(data))
    for extra in ((), ("--summary",), ("--format", "json")):
        res = _inspect(bad, *extra)
        assert res.returncode == 2, (extra, res.stderr[-1500:])
        assert "internal error" not in res.stderr and "damaged" in res.stderr, res.stderr[-1500:]
    copy = tmp_path / "run.db"
    copy.write_bytes(bytes(data))
    before = copy.read_bytes()
    res = subprocess.run(cli(files, str(copy)), capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "damaged" in res.stderr, res.stderr[-1500:]
    assert copy.read_bytes() == before  # nothing written to it


def test_a_record_that_is_not_utf8_is_reported_and_the_others_shown(store, tmp_path):
    _, good = store
    data = bytearray(good.read_bytes())
    at = data.find(b'"body":"b says')  # inside one envelope's record
    assert at > 0
    data[at + 9] = 0xFF  # not UTF-8 (and not a checksum match)
    bad = tmp_path / "utf8.db"
    bad.write_bytes(bytes(data))
    res = _inspect(bad)
    assert res.returncode == 1, res.stderr[-1500:]  # a corrupt record is a finding, the file is sound
    assert "checksum mismatch" in res.stderr and "internal error" not in res.stderr
    assert "12 sessions" in res.stdout  # every session is still listed
