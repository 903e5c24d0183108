"""The write-ahead log (docs/runtime.md, "Write-ahead log, durability and hydrate"): the `Store`
contract (contract.py), the records every engine stores (records.py), `SQLiteStore` (sqlite.py)
and `PostgresStore` (postgres.py, optional extra `turnflow[postgres]`, imported when a
`postgresql://` store is opened). `open_store` picks the engine from a `--store` value: a
`postgresql://` (or `postgres://`) URL, else a SQLite file path."""

from __future__ import annotations

from typing import Optional

from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import CommitUnits, Corrupt, LogSummary, Refusals
from turnflow.runtime.store.sqlite import SQLiteStore

__all__ = ["CommitUnits", "Corrupt", "LogSummary", "Refusals", "SQLiteStore", "Store", "is_postgres_url", "open_store"]


def is_postgres_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://"))


def open_store(value: str, *, worker: Optional[str] = None, read_only: bool = False,
               durability: str = "process") -> Store:
    """The store named by `value`; `worker` (PostgreSQL only) names the batch worker whose leases
    every commit checks; `read_only` opens it without writing to it (inspect: SQLite's `mode=ro`,
    PostgreSQL's read-only transactions; either refuses a database that is not a turnflow store);
    `durability` is "process" or "full" (what a returned post survives: the store classes and
    docs/runtime.md). Raises `StoreError` with a clear message when it cannot be opened."""
    if is_postgres_url(value):
        from turnflow.runtime.store.postgres import PostgresStore

        return PostgresStore(value, worker=worker, durability=durability, read_only=read_only)
    return SQLiteStore(value, durability, read_only=read_only)
