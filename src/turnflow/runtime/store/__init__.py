"""The write-ahead log (docs/runtime.md, "Write-ahead log, durability and hydrate"): the `Store`
contract (contract.py), the records every engine stores (records.py), `SQLiteStore` (sqlite.py)
and `PostgresStore` (postgres.py, optional extra `turnflow[postgres]`, imported when a
`postgresql://` store is opened). `open_store` picks the engine from a `--store` value: a
`postgresql://` (or `postgres://`) URL, else a SQLite file path. And `SessionScopedStore`: a store
whose hydrate covers one session, or none."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator, Optional, Union

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.store.contract import Dialect, Store
from turnflow.runtime.store.records import CommitUnits, Corrupt, LogSummary, Refusals
from turnflow.runtime.store.sqlite import SQLiteStore

__all__ = ["CommitUnits", "Corrupt", "Refusals", "SQLiteStore", "SessionScopedStore", "Store", "is_postgres_url",
           "open_store"]


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


class SessionScopedStore:
    """A store as a hub sees it when it must not hydrate the whole store: with `only=None`
    nothing (a batch worker's hub; a single run on a shared PostgreSQL store), with `only=ID`
    that one session's record and log (a worker taking the session over; `inspect --session`).
    Everything else goes to `store`. `owner`: closing the view closes the store (else the
    store's owner closes it)."""

    def __init__(self, store: Store, only: Optional[str] = None, *, owner: bool = False) -> None:
        self.store = store
        self.only = only
        self.owner = owner
        self.path = store.path
        self.read_only = store.read_only
        self.damage = store.damage
        self.batch_failures = store.batch_failures

    @property
    def dialect(self) -> Dialect:
        return self.store.dialect

    # -- the narrowed part: what a hydrate streams --------------------------------------------------
    def sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        if self.only is not None:
            rec = self.store.session_record(self.only)
            if rec is not None:
                yield rec

    def stream(self) -> Iterator[Union[Envelope, Corrupt]]:
        return iter(self.store.load(self.only)) if self.only is not None else iter(())

    def close(self) -> None:
        if self.owner:
            self.store.close()

    # -- everything else, as the store does it ------------------------------------------------------
    def next_global_seq(self) -> int:
        return self.store.next_global_seq()

    def commit_group(self, units: CommitUnits) -> "asyncio.Future[Refusals]":
        return self.store.commit_group(units)

    def last_global_seq(self) -> int:
        return self.store.last_global_seq()

    def session_record(self, session_id: str) -> Optional[Union[dict[str, Any], Corrupt]]:
        return self.store.session_record(session_id)

    def read_range(self, session_id: str, start: int = 1,
                   end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]:
        return self.store.read_range(session_id, start, end)

    def load(self, session_id: str) -> list[Union[Envelope, Corrupt]]:
        return self.store.load(session_id)

    def forget(self, session_id: str) -> None:
        self.store.forget(session_id)

    def telemetry(self, session_id: str) -> list[dict[str, Any]]:
        return self.store.telemetry(session_id)

    def session_count(self) -> int:
        return self.store.session_count()

    def sessions_ever_created(self) -> Optional[int]:
        return self.store.sessions_ever_created()

    def summary(self) -> LogSummary:
        return self.store.summary()

