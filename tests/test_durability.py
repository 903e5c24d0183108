"""`turnflow run --durability process|full` (single runs and `--tasks`) reaches the store on both
engines: SQLite's `PRAGMA synchronous` (NORMAL / FULL) and PostgreSQL's `synchronous_commit`
(off / on) on the store's own pool connections. A bad value is a usage error (exit 2)."""

from __future__ import annotations

import pytest
from batch_helpers import write_batch

from turnflow.cli import main


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "hub.db")
    return request.getfixturevalue("pg_url")


def _setting(store) -> str:
    """What the open store promises, read from its own connection."""
    if store.dialect.name == "postgresql":
        with store.pool.connection() as conn:
            return {"off": "process", "on": "full"}[conn.execute("SHOW synchronous_commit").fetchone()[0]]
    return {1: "process", 2: "full"}[store.db.execute("PRAGMA synchronous").fetchone()[0]]


def _watch_stores(monkeypatch) -> list[str]:
    """Record the setting of every store `turnflow run` opens, just before it is closed."""
    from turnflow.runtime import store as stores

    seen: list[str] = []
    real = stores.open_store

    def spy(*a, **kw):
        s = real(*a, **kw)
        close = s.close

        def checked_close():
            seen.append(_setting(s))
            close()

        s.close = checked_close
        return s

    monkeypatch.setattr(stores, "open_store", spy)
    return seen


@pytest.mark.parametrize("mode", ["process", "full", None])
@pytest.mark.parametrize("batch", [False, True], ids=["single", "tasks"])
def test_durability_reaches_the_store(store, tmp_path, monkeypatch, capsys, mode, batch):
    files = write_batch(tmp_path, 2)
    seen = _watch_stores(monkeypatch)
    argv = ["run", files["flow"], "--agents", files["agents"], "--store", store]
    if batch:
        argv += ["--tasks", files["tasks"]]
    if mode is not None:
        argv += ["--durability", mode]
    assert main(argv) == 0, capsys.readouterr().err
    assert seen == [mode or "process"]  # the default is "process"


def test_a_bad_durability_is_a_usage_error(tmp_path, capsys):
    files = write_batch(tmp_path, 1)
    with pytest.raises(SystemExit) as exc:
        main(["run", files["flow"], "--agents", files["agents"], "--durability", "fast"])
    assert exc.value.code == 2
    assert "--durability: invalid choice: 'fast' (choose from 'process', 'full')" in capsys.readouterr().err


def test_open_store_refuses_an_unknown_durability(tmp_path):
    from turnflow.runtime.errors import StoreError
    from turnflow.runtime.store import open_store

    with pytest.raises(StoreError, match="durability must be 'process' or 'full', got 'fast'"):
        open_store(str(tmp_path / "hub.db"), durability="fast")
