"""`turnflow inspect postgresql://...` (with and without `--session`, and `--summary`) on a real
throw-away PostgreSQL server: the same report as on a SQLite file, read-only (nothing is ever
written, not even the schema), and a database that is not a turnflow store is refused untouched
with exit 2."""

from __future__ import annotations

import json

import pytest
from batch_helpers import TURNS, StoreReader, write_batch

from turnflow.cli import main


def _run_batch(tmp_path, store, n=3, fail=(1,)):
    files = write_batch(tmp_path, n, fail=fail)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store])
    assert rc == (1 if fail else 0)


def _fingerprint(url):
    """Every table of the database's public schema with its row count and contents' hash."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")]
        out = {}
        for t in tables:
            # a name read from the catalogue, quoted as an identifier: not user input
            q = psycopg.sql.SQL("SELECT COUNT(*), md5(COALESCE(string_agg(x::text, ',' ORDER BY x::text), '')) "
                                "FROM {} x").format(psycopg.sql.Identifier(t))
            out[t] = conn.execute(q).fetchone()
        seq = conn.execute("SELECT to_regclass('turnflow_gseq') IS NOT NULL").fetchone()[0]
        out["gseq"] = conn.execute("SELECT last_value, is_called FROM turnflow_gseq").fetchone() if seq else None
    return out


def _shape(report):
    """A session report without its ids (they differ between two runs of the same tasks)."""
    return sorted((s["kind"], s["state"], s["close_reason"], s["turn_count"], s["envelope_count"],
                   s["expected_next"], len(s["telemetry"])) for s in report)


def test_inspect_a_postgres_store_like_a_sqlite_file(pg_url, tmp_path, capsys):
    lite = str(tmp_path / "hub.db")
    (tmp_path / "lite").mkdir()
    (tmp_path / "pg").mkdir()
    _run_batch(tmp_path / "lite", lite)
    _run_batch(tmp_path / "pg", pg_url)
    capsys.readouterr()
    reports = {}
    for name, store in (("sqlite", lite), ("postgresql", pg_url)):
        assert main(["inspect", store, "--format", "json"]) == 0, capsys.readouterr().err
        reports[name] = json.loads(capsys.readouterr().out)
    assert len(reports["postgresql"]) == 3
    assert _shape(reports["postgresql"]) == _shape(reports["sqlite"])
    assert sorted(s["close_reason"] for s in reports["postgresql"]) == ["agent_error", "max_turns", "max_turns"]
    assert max(s["turn_count"] for s in reports["postgresql"]) == TURNS

    before = _fingerprint(pg_url)
    assert main(["inspect", pg_url, "--events"]) == 0
    text = capsys.readouterr().out
    logs = StoreReader(pg_url).logs()
    sections: dict = {}
    for line in text.splitlines()[1:-1]:  # the header, the sessions (each with its events), `N sessions`
        if not line.startswith(" "):
            sid = line.split()[0]
            sections[sid] = ""
        sections[sid] += line + "\n"
    assert sorted(sections) == sorted(logs)
    for sid, log in logs.items():  # every envelope of every session is listed, in seq order
        seqs = [int(line.split()[0]) for line in sections[sid].splitlines()[1:] if line.split()[0].isdigit()]
        assert seqs == [seq for seq, _ in log]
    assert "telemetry a handshake" in text
    assert _fingerprint(pg_url) == before  # read-only: not a row, not a sequence value changed


def test_inspect_one_session_of_a_postgres_store(pg_url, tmp_path, capsys):
    _run_batch(tmp_path, pg_url)
    capsys.readouterr()
    logs = StoreReader(pg_url).logs()
    sid = sorted(logs)[0]
    assert main(["inspect", pg_url, "--session", sid, "--format", "json"]) == 0
    [one] = json.loads(capsys.readouterr().out)
    assert one["session_id"] == sid and one["envelope_count"] == len(logs[sid])
    assert one["state"] == "closed"
    assert main(["inspect", pg_url, "--session", sid]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].split()[0] == sid and text.splitlines()[1].split()[2] == "chain"
    assert sum(1 for line in text.splitlines() if line.startswith("  ") and line.split()[0].isdigit()) == len(logs[sid])
    assert not any(other in text for other in logs if other != sid)

    assert main(["inspect", pg_url, "--session", "0" * 32]) == 2
    assert f"no session {'0' * 32}" in capsys.readouterr().err
    assert main(["inspect", pg_url, "--session", "bad id!"]) == 2
    assert "invalid session id 'bad id!'" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["postgresql", "sqlite"])
def test_inspect_one_session_reads_only_that_session(engine, request, tmp_path, capsys, monkeypatch):
    """`--session` never streams the whole envelope table (nor every session record) into memory."""
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.store.postgres import PostgresStore

    if engine == "postgresql":
        store, cls = request.getfixturevalue("pg_url"), PostgresStore
    else:
        store, cls = str(tmp_path / "hub.db"), SQLiteStore
    _run_batch(tmp_path, store)
    sid = sorted(StoreReader(store).logs())[1]
    capsys.readouterr()

    def refuse(self):
        raise AssertionError("inspect --session read the whole store")

    monkeypatch.setattr(cls, "stream", refuse)
    monkeypatch.setattr(cls, "sessions", refuse)
    assert main(["inspect", store, "--session", sid, "--format", "json"]) == 0
    assert [s["session_id"] for s in json.loads(capsys.readouterr().out)] == [sid]


def test_a_corrupt_record_of_the_inspected_session_is_exit_1(pg_url, tmp_path, capsys):
    import psycopg

    _run_batch(tmp_path, pg_url, n=2, fail=())
    sid = sorted(StoreReader(pg_url).logs())[0]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE turnflow_envelopes SET crc = crc + 1 WHERE session_id = %s AND seq = 5", (sid,))
    capsys.readouterr()
    assert main(["inspect", pg_url, "--session", sid, "--format", "json"]) == 1
    assert f"corrupt record: session {sid} seq 5: checksum mismatch" in capsys.readouterr().err


def test_the_read_only_store_cannot_write(pg_url):
    import psycopg

    from turnflow.runtime.store.postgres import PostgresStore

    PostgresStore(pg_url).close()  # a turnflow store
    store = PostgresStore(pg_url, read_only=True)
    try:
        with store.pool.connection() as conn:
            assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute("INSERT INTO turnflow_schema (version) VALUES (2)")
    finally:
        store.close()


@pytest.mark.parametrize("summary", [False, True], ids=["report", "summary"])
@pytest.mark.parametrize("setup, message", [
    ("", "not a turnflow store (it has no turnflow_schema table)"),
    ("CREATE TABLE invoices (id int); INSERT INTO invoices VALUES (1)",
     "not a turnflow store (it has no turnflow_schema table)"),
    ("CREATE TABLE turnflow_schema (version integer NOT NULL); INSERT INTO turnflow_schema VALUES (1)",
     "not a turnflow store (it has no table turnflow_sessions"),
])
def test_a_database_that_is_not_a_turnflow_store_is_refused_untouched(pg_url, capsys, setup, message, summary):
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        for stmt in filter(None, setup.split("; ")):
            conn.execute(stmt)
    before = _fingerprint(pg_url)
    assert main(["inspect", pg_url, *(["--summary"] if summary else [])]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert _fingerprint(pg_url) == before  # no table was created


def test_another_schema_version_is_refused_untouched(pg_url, tmp_path, capsys):
    import psycopg

    _run_batch(tmp_path, pg_url, n=1, fail=())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE turnflow_schema SET version = 99")
    before = _fingerprint(pg_url)
    capsys.readouterr()
    for extra in ([], ["--summary"]):
        assert main(["inspect", pg_url, *extra]) == 2
        assert "unsupported store schema version 99 (expected 1)" in capsys.readouterr().err
    assert _fingerprint(pg_url) == before


def test_an_unreachable_server_is_exit_2(capsys):
    pytest.importorskip("psycopg")
    url = "postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=1"
    assert main(["inspect", url]) == 2
    err = capsys.readouterr().err
    assert "cannot open as a turnflow store" in err and "secret" not in err and "Traceback" not in err


def test_a_role_with_select_only_can_inspect(pg_url, tmp_path, capsys):
    import uuid

    import psycopg

    _run_batch(tmp_path, pg_url, n=2, fail=())
    role = "reader_" + uuid.uuid4().hex[:8]  # roles are server-wide; the server uses trust authentication
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")  # a name made here, not user input
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = pg_url.replace("postgresql://turnflow@", f"postgresql://{role}@")
    capsys.readouterr()
    assert main(["inspect", reader, "--format", "json"]) == 0, capsys.readouterr().err
    assert [s["state"] for s in json.loads(capsys.readouterr().out)] == ["closed", "closed"]
    assert main(["inspect", reader, "--summary", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["done"] == 2
