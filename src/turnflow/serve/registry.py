"""The agents a served hub knows: passports (without their credential), résumés, rules and skill
texts as AG2's client sends them, and each agent's delivery cursors (the last envelope it acked per
session, so a reconnect replays only what it has not seen).

Kept where the sessions are (`open_registry`): with a PostgreSQL store, in two tables of that
database (`turnflow_hub_agents`, `turnflow_hub_cursors`, registry_pg.py), so a hub restarted on
another machine finds the same agents; with a SQLite store, in a small SQLite file beside it
(`PATH.agents`): the store file is one writer's log with a checked format, and cursor writes
would otherwise share its write lock with every group commit. Registration changes are written
through; cursors are written in batches (`flush`), so after a crash a client may be sent again
what it acked in the last second (AG2's client skips a turn it has already answered: delivery is
at least once, as with AG2's own hub).

Records are checked on the way in (ops.py, shapes.py); a row an earlier version stored unchecked
is read leniently (`Agent.from_row`): an unknown field dropped, a mistyped one replaced by AG2's
default, an unreadable row skipped, each with a logged warning, so one bad record cannot break
discovery for every client."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import uuid
from typing import Any, Iterable, Optional, Protocol

from turnflow.serve import shapes

log = logging.getLogger("turnflow.serve")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agents (agent_id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, passport TEXT NOT NULL,
    resume TEXT NOT NULL, rule TEXT NOT NULL, skill TEXT);
CREATE TABLE IF NOT EXISTS cursors (agent_id TEXT NOT NULL, channel_id TEXT NOT NULL, envelope_id TEXT NOT NULL,
    PRIMARY KEY (agent_id, channel_id));
"""

AgentRow = tuple[str, str, str, str, str, Optional[str]]  # agent_id, name, passport, resume, rule (JSON), skill
CursorRow = tuple[str, str, str]  # agent_id, channel_id, envelope_id


class Agent:
    __slots__ = ("agent_id", "name", "passport", "resume", "rule", "skill", "size")

    def __init__(self, agent_id: str, name: str, passport: dict[str, Any], resume: dict[str, Any], rule: dict[str, Any],
                 skill: Optional[str]) -> None:
        self.agent_id = agent_id
        self.name = name
        self.passport = passport
        self.resume = resume
        self.rule = rule
        self.skill = skill
        self.size = 0  # characters of its stored row's records (`row_size`), counted by the registry holding it

    def row(self) -> AgentRow:
        return (self.agent_id, self.name, json.dumps(self.passport), shapes.text(self.resume), shapes.text(self.rule),
                self.skill)

    @classmethod
    def from_row(cls, row: Iterable[Any]) -> Optional["Agent"]:
        """The agent of a stored row, repaired where an earlier version stored it unchecked;
        None (with a warning) when it cannot be served at all."""
        agent_id, name, passport, resume, rule, skill = row
        what = f"registered agent {str(agent_id)[:40]!r}"
        try:
            records = [json.loads(passport), json.loads(resume), json.loads(rule)]
        except (TypeError, ValueError, RecursionError):
            log.warning("%s: its stored record is not JSON; skipped", what)
            return None
        pp, rs, rl = (shapes.repair(shape, value, what)
                      for shape, value in zip((shapes.PASSPORT, shapes.RESUME, shapes.RULE), records))
        if pp is None or rs is None or rl is None or not isinstance(name, str) or pp["name"] != name:
            log.warning("%s: its stored name or passport cannot be read; skipped", what)
            return None
        pp.update(agent_id=agent_id)
        agent = cls(agent_id, name, pp, shapes.shared(rs), shapes.shared(rl), skill if isinstance(skill, str) else None)
        agent.size = row_size(passport, resume, rule, agent.skill)
        return agent


def row_size(passport: str, resume: str, rule: str, skill: Optional[str]) -> int:
    """What an agent's records count against the registry's budget (`--max-registry-bytes`): the
    characters of their JSON as stored, and of its skill text."""
    return len(passport) + len(resume) + len(rule) + len(skill or "")


def records_size(agent: Agent, resume: Optional[dict[str, Any]] = None, rule: Optional[dict[str, Any]] = None,
                 skill: Any = ...) -> int:
    """The agent's `row_size` as it is stored (`Agent.row`), with the records given instead of its own."""
    return row_size(json.dumps(agent.passport), shapes.text(agent.resume if resume is None else resume),
                    shapes.text(agent.rule if rule is None else rule), agent.skill if skill is ... else skill)


def new_agent_id() -> str:
    return uuid.uuid4().hex


class Backend(Protocol):
    """Where the registry's rows live (a SQLite file, or tables of the PostgreSQL store)."""

    where: str  # for messages

    def agents(self) -> list[AgentRow]: ...
    def cursors(self) -> list[CursorRow]: ...
    def insert(self, row: AgentRow) -> None: ...
    def update(self, agent_id: str, resume: str, rule: str, skill: Optional[str]) -> None: ...
    def delete(self, agent_id: str) -> None: ...
    def write_cursors(self, rows: list[CursorRow]) -> None: ...
    def close(self) -> None: ...


class SQLiteBackend:
    def __init__(self, path: str) -> None:
        self.where = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def agents(self) -> list[AgentRow]:
        return self._db.execute("SELECT agent_id, name, passport, resume, rule, skill FROM agents").fetchall()

    def cursors(self) -> list[CursorRow]:
        return self._db.execute("SELECT agent_id, channel_id, envelope_id FROM cursors").fetchall()

    def insert(self, row: AgentRow) -> None:
        self._db.execute("INSERT INTO agents VALUES (?, ?, ?, ?, ?, ?)", row)

    def update(self, agent_id: str, resume: str, rule: str, skill: Optional[str]) -> None:
        self._db.execute("UPDATE agents SET resume = ?, rule = ?, skill = ? WHERE agent_id = ?",
                         (resume, rule, skill, agent_id))

    def delete(self, agent_id: str) -> None:
        self._db.execute("DELETE FROM agents WHERE agent_id = ?", (agent_id,))
        self._db.execute("DELETE FROM cursors WHERE agent_id = ?", (agent_id,))

    def write_cursors(self, rows: list[CursorRow]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany("INSERT OR REPLACE INTO cursors VALUES (?, ?, ?)", rows)
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()


class Registry:
    """The agents in memory (every op reads them), written through to a `Backend`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.note = ""  # what opening it did that the operator should hear of (an import)
        self.by_id: dict[str, Agent] = {}
        self.by_name: dict[str, str] = {}
        self.cursors: dict[str, dict[str, str]] = {}
        self.size = 0  # `Agent.size` of every agent held (docs/serve.md, "Limits": --max-registry-bytes)
        self._dirty: set[tuple[str, str]] = set()
        for row in backend.agents():
            agent = Agent.from_row(row)
            if agent is not None:
                self._remember(agent)
        for agent_id, channel_id, envelope_id in backend.cursors():
            self.cursors.setdefault(agent_id, {})[channel_id] = envelope_id

    def _remember(self, agent: Agent) -> None:
        self.by_id[agent.agent_id] = agent
        self.by_name[agent.name] = agent.agent_id
        self.size += agent.size

    def get(self, name_or_id: str) -> Optional[Agent]:
        agent = self.by_id.get(name_or_id)
        if agent is None:
            agent_id = self.by_name.get(name_or_id)
            agent = self.by_id.get(agent_id) if agent_id is not None else None
        return agent

    def add(self, agent: Agent) -> None:
        row = agent.row()
        self.backend.insert(row)
        agent.size = row_size(*row[2:])
        self._remember(agent)

    def update(self, agent: Agent) -> None:
        self.backend.update(agent.agent_id, shapes.text(agent.resume), shapes.text(agent.rule), agent.skill)
        size = records_size(agent)
        self.size += size - agent.size
        agent.size = size

    def remove(self, agent_id: str) -> None:
        agent = self.by_id.pop(agent_id, None)
        if agent is not None:
            self.by_name.pop(agent.name, None)
            self.size -= agent.size
        self.cursors.pop(agent_id, None)
        self._dirty = {k for k in self._dirty if k[0] != agent_id}
        self.backend.delete(agent_id)

    def advance(self, agent_id: str, channel_id: str, envelope_id: str) -> None:
        own = self.cursors.setdefault(agent_id, {})
        if envelope_id > own.get(channel_id, ""):
            own[channel_id] = envelope_id
            self._dirty.add((agent_id, channel_id))

    def cursor(self, agent_id: str, channel_id: str) -> str:
        return self.cursors.get(agent_id, {}).get(channel_id, "")

    def flush(self) -> None:
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        rows = [(a, c, self.cursors[a][c]) for a, c in dirty if c in self.cursors.get(a, {})]
        try:
            self.backend.write_cursors(rows)
        except Exception:
            self._dirty |= dirty  # written with the next flush
            raise

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.backend.close()


def _old_rows(path: str) -> tuple[list[AgentRow], list[CursorRow]]:
    """The agents and cursors of a registry file (read only)."""
    import os
    from urllib.parse import quote

    from turnflow.runtime.errors import StoreError

    if not os.path.isfile(path):
        raise StoreError(f"--registry {path}: no such registry file to import")
    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        try:
            agents = db.execute("SELECT agent_id, name, passport, resume, rule, skill FROM agents").fetchall()
            cursors = db.execute("SELECT agent_id, channel_id, envelope_id FROM cursors").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"--registry {path}: not a registry file of turnflow serve ({exc})") from None
    return agents, cursors


def agent_names(store: str) -> dict[str, str]:
    """Agent id -> registered name of the hub served on `store` (read only; nothing is created):
    `turnflow inspect` shows who spoke by name. {} when no hub was served there or its registry
    cannot be read."""
    from turnflow.runtime.errors import StoreError
    from turnflow.runtime.store import is_postgres_url

    try:
        if is_postgres_url(store):
            from turnflow.serve.registry_pg import registered_names

            return registered_names(store)
        if not os.path.isfile(store + ".agents"):
            return {}
        agents, _ = _old_rows(store + ".agents")
    except StoreError:
        return {}
    return {str(row[0]): str(row[1]) for row in agents}


def open_registry(store: str, registry: Optional[str] = None) -> Registry:
    """The registry of the hub whose sessions are in `store`: the database's tables for a
    PostgreSQL URL (a `registry` file, written by an earlier version, is imported into them while
    they hold no agent), else the SQLite file `registry` or `STORE.agents`."""
    from turnflow.runtime.store import is_postgres_url

    if not is_postgres_url(store):
        return Registry(SQLiteBackend(registry or store + ".agents"))
    from turnflow.serve.registry_pg import PostgresBackend

    backend = PostgresBackend(store)
    note = ""
    if registry:
        try:
            agents, cursors = _old_rows(registry)
            imported = backend.import_rows(agents, cursors)
        except BaseException:
            backend.close()
            raise
        note = (f"imported {len(agents)} agent(s) from {registry}" if imported else
                f"{registry} not imported: the database already holds agents")
    reg = Registry(backend)
    reg.note = note
    return reg
