"""`turnflow serve` on a PostgreSQL store (the agents kept in the same database), on each event
loop it can run on: the README's AG2 example runs against it, and again after a restart on the same
database (the names it freed are free, its first session is still there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("websockets")
pytest.importorskip("ag2")

from serve_process import ServeProcess  # noqa: E402

try:
    import uvloop  # noqa: F401
except ImportError:  # (Windows, or the serve extra not installed)
    HAS_UVLOOP = False
else:
    HAS_UVLOOP = True

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ag2_consult.py"


def consult(url: str) -> str:
    out = subprocess.run([sys.executable, str(EXAMPLE), url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["alice: Why is the orders query slow?", "bob: Add an index on orders(user_id, created_at)."]
    assert lines[2].startswith("session ") and lines[2].endswith(": consulting_complete")
    return lines[2].split()[1].rstrip(":")


@pytest.mark.parametrize("loop", ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(
    not HAS_UVLOOP, reason="uvloop is not installed (the serve extra installs it, not on Windows)"))])
def test_the_readme_example_runs_against_a_hub_on_postgresql_across_a_restart(pg_url, loop):
    import psycopg

    first = ServeProcess(pg_url, "--loop", loop)
    try:
        one = consult(first.url)
    finally:
        first.stop()
    assert f"event loop {loop}" in first.stderr().splitlines()[0]
    again = ServeProcess(pg_url, "--loop", loop)
    try:
        two = consult(again.url)
    finally:
        again.stop()
    assert one != two
    with psycopg.connect(pg_url) as conn:
        stored = {row[0] for row in conn.execute("SELECT session_id FROM turnflow_sessions")}
    assert {one, two} <= stored
