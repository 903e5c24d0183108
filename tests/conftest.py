import gc
import os
import sys

import pytest

# Bytecode is kept for the suite and every process it starts, whatever the environment says
# (PYTHONDONTWRITEBYTECODE=1 is set on this project's development machines): both workers import every
# test module, pytest rewrites each one's asserts, and the tests start hundreds of Python
# processes that import turnflow; without the cache all of that is compiled again every time
# (`pytest --collect-only`: 8.5 s -> 5.0 s of a worker's start). The caches are the usual
# gitignored __pycache__ folders.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# A full (oldest-generation) collection of a test process walks its whole heap: by the middle of the
# suite a worker holds 550,000-650,000 objects (ag2, LangGraph, AutoGen, hypothesis, the collected
# tests), ~0.3 s a collection, and CPython ran one after every 10 collections of the middle
# generation: 13-22 of them in a quarter of the suite, 9% of its CPU. One after every 100 (the
# young generations unchanged: what a test drops is collected as before) leaves 2-3; a test that
# needs a full collection calls gc.collect(). The processes the tests start keep Python's defaults.
gc.set_threshold(700, 10, 100)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """After the last test: one full collection, then the survivors frozen.

    pytest's clean-up collects five times more (to report exceptions raised in finalizers), and the
    interpreter once at exit; each full collection walked a worker's whole heap (~1 s per worker at
    the end of the suite). The first collection here still runs every pending finalizer; what
    they leave behind is new, unfrozen and collected by pytest's passes as before.
    """
    gc.collect()
    gc.freeze()


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def update_goldens(request):
    return request.config.getoption("--update-goldens")


@pytest.fixture(autouse=True)
def _cli_switches_restored():
    """A test that runs `turnflow.cli.main` in its own process turns on the command's process switches
    (the collector paused while parsing, parser tables cached per user: turnflow/process.py); they
    are put back after it, so the library-level tests after it run as a library user's code does."""
    from turnflow import process

    before = process.switches()
    yield
    process.set_switches(before)


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch):
    """Output comparisons expect plain text even where the environment forces colour."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture(scope="session")
def pg_server():
    """A real throw-away PostgreSQL server (tests/pg_server.py), shared by the session's tests."""
    from pg_server import PgServer, find_bindir

    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 / psycopg_pool are not installed (pip install -e '.[test]')")
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl, postgres) on PATH or in "
                    "/usr/lib/postgresql/*/bin; install Debian's `postgresql` package")
    server = PgServer(bindir).start()
    server.databases = server.fresh_databases()
    try:
        yield server
    finally:
        server.databases.close()
        server.stop(wait=False)  # a throw-away server: stopped and removed by a detached process


@pytest.fixture
def pg_url(pg_server, request):
    """A fresh, empty database on the shared server for one test."""
    import re
    import uuid

    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    return pg_server.databases.take(name)
