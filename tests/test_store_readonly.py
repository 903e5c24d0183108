"""A SQLite store that cannot be written (issue #25, item 3): a read-only file or a read-only
folder is exit 2 with a clear line for every command that writes (`run`, `run --tasks`,
`serve`), never an internal error, and nothing is changed; `inspect` still reads it.

Run as root, the commands run without CAP_DAC_OVERRIDE (as an ordinary user would), so that
file modes apply to them."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from batch_helpers import cli, run_to_end, write_batch

_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE = 24, 1


def _as_a_user() -> None:  # in the child, before exec: root loses the right to ignore file modes
    if os.geteuid() == 0:
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_CAPBSET_DROP, _CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _run(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, preexec_fn=_as_a_user)


def _tf(*args: str) -> list[str]:
    return [sys.executable, "-m", "turnflow", *args]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    if not sys.platform.startswith("linux"):
        pytest.skip("file modes and capabilities as on Linux")
    tmp = tmp_path_factory.mktemp("rostore")
    files = write_batch(tmp, 5)
    db = tmp / "made.db"
    assert run_to_end(files, str(db)).returncode == 0
    try:
        probe = _run([sys.executable, "-c", "open(__import__('sys').argv[1], 'a')", str(tmp / "probe")])
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot drop CAP_DAC_OVERRIDE here: {exc}")
    os.chmod(tmp, 0o755)
    assert probe.returncode == 0, probe.stderr
    return files, db


def _check_every_command(files: dict, store: Path) -> None:
    before = {p.name: p.read_bytes() for p in store.parent.iterdir() if p.name.startswith(store.name)}
    for extra in ((), ("--summary",), ("--format", "json")):
        res = _run(_tf("inspect", str(store), *extra))
        assert res.returncode == 0, (extra, res.stderr[-600:])
        if not extra:
            assert "5 sessions" in res.stdout
    writers = {
        "run --tasks": cli(files, str(store)),
        "run": _tf("run", files["flow"], "--agents", files["agents"], "--task", "hi", "--store", str(store)),
        "serve": _tf("serve", "--store", str(store), "--listen", "127.0.0.1:0"),
    }
    for name, argv in writers.items():
        res = _run(argv)
        assert res.returncode == 2, (name, res.stdout[-600:], res.stderr[-600:])
        assert "cannot be written" in res.stderr and "internal error" not in res.stderr, (name, res.stderr[-600:])
    after = {p.name: p.read_bytes() for p in store.parent.iterdir() if p.name.startswith(store.name)}
    assert {k: v for k, v in after.items() if k in before} == before  # nothing changed
    assert not any(k.endswith((".agents", ".lock")) for k in set(after) - set(before))


def test_a_read_only_store_file(batch, tmp_path):
    files, made = batch
    os.chmod(tmp_path, 0o755)
    store = tmp_path / "ro.db"
    shutil.copyfile(made, store)
    store.chmod(0o444)
    _check_every_command(files, store)


def test_a_store_in_a_read_only_folder(batch, tmp_path):
    files, made = batch
    folder = tmp_path / "ro"
    folder.mkdir()
    store = folder / "runs.db"
    shutil.copyfile(made, store)
    folder.chmod(0o555)
    try:
        _check_every_command(files, store)
        fresh = _run(cli(files, str(folder / "new.db")))  # a new store there: the same line
        assert fresh.returncode == 2 and "cannot be written" in fresh.stderr, fresh.stderr[-600:]
    finally:
        folder.chmod(0o755)


def test_a_read_only_folder_whose_wal_holds_records_is_a_clear_line(batch, tmp_path):
    import sqlite3

    _, made = batch
    folder = tmp_path / "ro"
    folder.mkdir()
    store = folder / "runs.db"
    shutil.copyfile(made, store)
    holder = sqlite3.connect(store)  # keeps the -wal a writer leaves behind
    try:
        holder.execute("SELECT COUNT(*) FROM sessions").fetchone()
        writer = sqlite3.connect(store)
        writer.execute("INSERT INTO telemetry (session_id, record) VALUES ('s', '{}')")
        writer.commit()
        writer.close()
        assert (folder / "runs.db-wal").stat().st_size > 0
        os.remove(folder / "runs.db-shm")
        folder.chmod(0o555)
        res = _run(_tf("inspect", str(store)))
        assert res.returncode == 2 and "internal error" not in res.stderr, res.stderr[-600:]
        assert "-wal file holds records" in res.stderr and "writable folder" in res.stderr, res.stderr
    finally:
        folder.chmod(0o755)
        holder.close()
