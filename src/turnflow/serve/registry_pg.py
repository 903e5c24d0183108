"""The served hub's agent registry in the PostgreSQL database that holds its sessions: tables
`turnflow_hub_agents` and `turnflow_hub_cursors` (created when missing), so a hub restarted on
another machine on the same database finds the same agents and delivery cursors. One connection,
autocommit; a connection the server dropped is replaced once before a statement fails. Statements
run on the hub's event loop, as the SQLite registry's do: registrations are rare and cursors are
written once a second, in one transaction."""

from __future__ import annotations

from typing import Any, Callable, Optional

from turnflow.runtime.errors import StoreError

AgentRow = tuple[str, str, str, str, str, Optional[str]]  # as registry.py's (no import: registry.py loads this)
CursorRow = tuple[str, str, str]

_DDL = [
    """CREATE TABLE IF NOT EXISTS turnflow_hub_agents (agent_id text PRIMARY KEY, name text UNIQUE NOT NULL,
        passport text NOT NULL, resume text NOT NULL, rule text NOT NULL, skill text)""",
    """CREATE TABLE IF NOT EXISTS turnflow_hub_cursors (agent_id text NOT NULL, channel_id text NOT NULL,
        envelope_id text NOT NULL, PRIMARY KEY (agent_id, channel_id))""",
]
_UPSERT_CURSOR = ("INSERT INTO turnflow_hub_cursors (agent_id, channel_id, envelope_id) VALUES (%s, %s, %s) "
                  "ON CONFLICT (agent_id, channel_id) DO UPDATE SET envelope_id = EXCLUDED.envelope_id")


class PostgresBackend:
    def __init__(self, url: str, connect_timeout: float = 10.0) -> None:
        from turnflow.runtime.store.postgres import _import_psycopg, redact

        self._psycopg, _ = _import_psycopg()
        self.url = url
        self.where = redact(url)
        self._timeout = max(1, int(connect_timeout))
        self._conn: Any = None
        self._run(self._create)

    def _create(self, conn: Any) -> None:
        with conn.transaction():
            for stmt in _DDL:
                conn.execute(stmt)

    def _connect(self) -> Any:
        try:
            return self._psycopg.connect(self.url, autocommit=True, connect_timeout=self._timeout)
        except self._psycopg.Error as exc:
            raise StoreError(f"{self.where}: cannot open the agent registry: {str(exc).strip().splitlines()[0]}") \
                from None

    def _run(self, fn: Callable[[Any], Any]) -> Any:
        """`fn(connection)`, once more on a new connection when the server dropped this one."""
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        try:
            return fn(self._conn)
        except self._psycopg.OperationalError:
            if not self._conn.closed:
                raise
            self._conn = self._connect()
            return fn(self._conn)

    def agents(self) -> list[AgentRow]:
        rows: list[AgentRow] = self._run(lambda c: c.execute(
            "SELECT agent_id, name, passport, resume, rule, skill FROM turnflow_hub_agents ORDER BY name").fetchall())
        return rows

    def cursors(self) -> list[CursorRow]:
        rows: list[CursorRow] = self._run(lambda c: c.execute(
            "SELECT agent_id, channel_id, envelope_id FROM turnflow_hub_cursors").fetchall())
        return rows

    def insert(self, row: AgentRow) -> None:
        self._run(lambda c: c.execute(
            "INSERT INTO turnflow_hub_agents (agent_id, name, passport, resume, rule, skill) "
            "VALUES (%s, %s, %s, %s, %s, %s)", row))

    def update(self, agent_id: str, resume: str, rule: str, skill: Optional[str]) -> None:
        self._run(lambda c: c.execute("UPDATE turnflow_hub_agents SET resume = %s, rule = %s, skill = %s "
                                      "WHERE agent_id = %s", (resume, rule, skill, agent_id)))

    def delete(self, agent_id: str) -> None:
        def go(c: Any) -> None:
            with c.transaction():
                c.execute("DELETE FROM turnflow_hub_agents WHERE agent_id = %s", (agent_id,))
                c.execute("DELETE FROM turnflow_hub_cursors WHERE agent_id = %s", (agent_id,))
        self._run(go)

    def write_cursors(self, rows: list[CursorRow]) -> None:
        def go(c: Any) -> None:
            with c.transaction(), c.cursor() as cur:
                cur.executemany(_UPSERT_CURSOR, rows)
        self._run(go)

    def import_rows(self, agents: list[AgentRow], cursors: list[CursorRow]) -> bool:
        """The agents and cursors of an older registry file, written only while the database holds
        no agent yet (a migration, done once: later starts leave the tables as they are)."""
        def go(c: Any) -> bool:
            with c.transaction(), c.cursor() as cur:
                cur.execute("LOCK TABLE turnflow_hub_agents IN EXCLUSIVE MODE")
                if cur.execute("SELECT EXISTS (SELECT 1 FROM turnflow_hub_agents)").fetchone()[0]:
                    return False
                cur.executemany("INSERT INTO turnflow_hub_agents (agent_id, name, passport, resume, rule, skill) "
                                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", agents)
                cur.executemany("INSERT INTO turnflow_hub_cursors (agent_id, channel_id, envelope_id) "
                                "SELECT %s, %s, %s WHERE EXISTS (SELECT 1 FROM turnflow_hub_agents WHERE agent_id = %s) "
                                "ON CONFLICT DO NOTHING", [(*r, r[0]) for r in cursors])
            return True
        done: bool = self._run(go)
        return done

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def registered_names(url: str, connect_timeout: float = 10.0) -> dict[str, str]:
    """Agent id -> name from `turnflow_hub_agents`, read only ({} when the table does not exist:
    no hub was served on this database)."""
    from turnflow.runtime.store.postgres import _import_psycopg

    psycopg, _ = _import_psycopg()
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout))) as conn:
            if conn.execute("SELECT to_regclass('turnflow_hub_agents')").fetchone()[0] is None:
                return {}
            rows = conn.execute("SELECT agent_id, name FROM turnflow_hub_agents").fetchall()
    except psycopg.Error:
        return {}
    return {str(a): str(n) for a, n in rows}
