import pytest


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def update_goldens(request):
    return request.config.getoption("--update-goldens")


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
