"""`turnflow serve` on a PostgreSQL store (the agents kept in the same database) on asyncio's own
event loop: the README's AG2 example runs against it, and again after a restart on the same
database (the names it freed are free, its first session is still there).

uvloop (the default where it is installed) on PostgreSQL across a restart is tests/test_serve.py's:
its two PostgreSQL tests serve on the default loop and check that it is uvloop. The example runs
here in this process (AG2 is imported here already): as the README runs it, in a process of its
own, it is tests/test_serve.py::test_the_readme_example_runs_against_a_served_hub's."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("websockets")
pytest.importorskip("ag2")

from serve_process import ServeProcess  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ag2_consult.py"


def consult(url: str, monkeypatch) -> str:
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), url])
    with contextlib.redirect_stdout(io.StringIO()) as out:
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["alice: Why is the orders query slow?", "bob: Add an index on orders(user_id, created_at)."]
    assert lines[2].startswith("session ") and lines[2].endswith(": consulting_complete")
    return lines[2].split()[1].rstrip(":")


def test_the_readme_example_runs_against_a_hub_on_postgresql_across_a_restart(pg_url, monkeypatch):
    import psycopg

    first = ServeProcess(pg_url, "--loop", "asyncio")
    try:
        one = consult(first.url, monkeypatch)
    finally:
        first.stop()
    assert "event loop asyncio" in first.stderr().splitlines()[0]
    again = ServeProcess(pg_url, "--loop", "asyncio")
    try:
        two = consult(again.url, monkeypatch)
    finally:
        again.stop()
    assert one != two
    with psycopg.connect(pg_url) as conn:
        stored = {row[0] for row in conn.execute("SELECT session_id FROM turnflow_sessions")}
    assert {one, two} <= stored
