"""The agents a served hub knows: passports (without their credential), résumés, rules and skill
texts as AG2's client sends them, and each agent's delivery cursors (the last envelope it acked per
session, so a reconnect replays only what it has not seen).

Kept in a small SQLite file of its own beside the session store (`PATH.agents` for a SQLite store),
written through on every registration change; cursors are written in batches (`flush`), so after
a crash a client may be sent again what it acked in the last second (AG2's client skips a turn it
has already answered: delivery is at least once, as with AG2's own hub)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any, Optional

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agents (agent_id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, passport TEXT NOT NULL,
    resume TEXT NOT NULL, rule TEXT NOT NULL, skill TEXT);
CREATE TABLE IF NOT EXISTS cursors (agent_id TEXT NOT NULL, channel_id TEXT NOT NULL, envelope_id TEXT NOT NULL,
    PRIMARY KEY (agent_id, channel_id));
"""


class Agent:
    __slots__ = ("agent_id", "name", "passport", "resume", "rule", "skill")

    def __init__(self, agent_id: str, name: str, passport: dict, resume: dict, rule: dict,
                 skill: Optional[str]) -> None:
        self.agent_id = agent_id
        self.name = name
        self.passport = passport
        self.resume = resume
        self.rule = rule
        self.skill = skill


def new_agent_id() -> str:
    return uuid.uuid4().hex


class Registry:
    def __init__(self, path: str) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self.by_id: dict[str, Agent] = {}
        self.by_name: dict[str, str] = {}
        self.cursors: dict[str, dict[str, str]] = {}
        self._dirty: set[tuple[str, str]] = set()
        for agent_id, name, passport, resume, rule, skill in self._db.execute(
                "SELECT agent_id, name, passport, resume, rule, skill FROM agents"):
            self._remember(Agent(agent_id, name, json.loads(passport), json.loads(resume), json.loads(rule), skill))
        for agent_id, channel_id, envelope_id in self._db.execute("SELECT agent_id, channel_id, envelope_id FROM cursors"):
            self.cursors.setdefault(agent_id, {})[channel_id] = envelope_id

    def _remember(self, agent: Agent) -> None:
        self.by_id[agent.agent_id] = agent
        self.by_name[agent.name] = agent.agent_id

    def get(self, name_or_id: str) -> Optional[Agent]:
        agent = self.by_id.get(name_or_id)
        if agent is None:
            agent_id = self.by_name.get(name_or_id)
            agent = self.by_id.get(agent_id) if agent_id is not None else None
        return agent

    def add(self, agent: Agent) -> None:
        self._db.execute("INSERT INTO agents VALUES (?, ?, ?, ?, ?, ?)",
                         (agent.agent_id, agent.name, json.dumps(agent.passport), json.dumps(agent.resume),
                          json.dumps(agent.rule), agent.skill))
        self._remember(agent)

    def update(self, agent: Agent) -> None:
        self._db.execute("UPDATE agents SET resume = ?, rule = ?, skill = ? WHERE agent_id = ?",
                         (json.dumps(agent.resume), json.dumps(agent.rule), agent.skill, agent.agent_id))

    def remove(self, agent_id: str) -> None:
        agent = self.by_id.pop(agent_id, None)
        if agent is not None:
            self.by_name.pop(agent.name, None)
        self.cursors.pop(agent_id, None)
        self._dirty = {k for k in self._dirty if k[0] != agent_id}
        self._db.execute("DELETE FROM agents WHERE agent_id = ?", (agent_id,))
        self._db.execute("DELETE FROM cursors WHERE agent_id = ?", (agent_id,))

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
        rows: list[Any] = [(a, c, self.cursors[a][c]) for a, c in self._dirty if c in self.cursors.get(a, {})]
        self._dirty = set()
        self._db.execute("BEGIN")
        self._db.executemany("INSERT OR REPLACE INTO cursors VALUES (?, ?, ?)", rows)
        self._db.execute("COMMIT")

    def close(self) -> None:
        self.flush()
        self._db.close()
