"""Pick the store engine from a `--store` value: a `postgresql://` (or `postgres://`) URL opens a
`PostgresStore` (optional extra `turnflow[postgres]`), anything else is a SQLite file path."""

from __future__ import annotations

from typing import Any, Optional


def is_postgres_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def open_store(value: str, *, worker: Optional[str] = None, read_only: bool = False,
               durability: str = "process") -> Any:
    """The store named by `value`; `worker` (PostgreSQL only) names the batch worker whose leases
    every commit checks; `read_only` opens it without writing to it (inspect: SQLite's `mode=ro`,
    PostgreSQL's read-only transactions; either refuses a database that is not a turnflow store);
    `durability` is "process" or "full" (what a returned post survives: the store classes and
    docs/runtime.md). Raises `StoreError` with a clear message when it cannot be opened."""
    if is_postgres_url(value):
        from turnflow.runtime.store_pg import PostgresStore

        return PostgresStore(value, worker=worker, durability=durability, read_only=read_only)
    from turnflow.runtime.store import SQLiteStore

    return SQLiteStore(value, durability, read_only=read_only)


def engine_of(store: Any) -> str:
    return getattr(store, "engine", "sqlite")
