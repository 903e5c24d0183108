"""Serve's ops in process, without a socket: a connection stand-in that records what it is sent,
and a hub with its ops over SQLite files in a test's directory."""

from __future__ import annotations

import json
from typing import Any


class Conn:
    """What the ops need of a connection: its id, the agents bound to it, `send` (kept, decoded)."""

    def __init__(self) -> None:
        self.endpoint_id = "e"
        self.agents: set[str] = set()
        self.sent: list[Any] = []

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))


async def open_ops(tmp_path: Any, **options: Any) -> tuple[Any, Any]:
    """A hub on `tmp_path/hub.db` and its `Ops` (registry `tmp_path/hub.agents`, no API keys)."""
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import Registry, SQLiteBackend

    hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")))
    return hub, Ops(hub, Registry(SQLiteBackend(str(tmp_path / "hub.agents"))), Auth(), **options)
