"""The store contract: what the hub, the batch runner and `inspect` may ask of a write-ahead log.

Two engines implement it (`SQLiteStore` in sqlite.py, `PostgresStore` in postgres.py); mypy checks
that both satisfy `Store` (`open_store` returns a `Store`), and tests/test_store_contract.py checks
that nothing in `src/` probes a store for optional methods: every method below exists on both.

Writing has ONE path, `commit_group(units)`: there is no other write method. The hub encodes every
record it writes into rows (`session_row`, `envelope_row`, `telemetry_row` in records.py: the
record format is the same on every engine, and a value that is not JSON is refused then, before
anything is queued), collects one event-loop tick's rows in a `CommitUnits`, and hands them to the
store at the end of the tick. The store writes them
all or, per session, none, and returns a future of its *refusals*:

    future = store.commit_group(units)      # rows in log order; new sessions before their envelopes
    refused = await future                  # {session_id: exception}: the sessions NOT written
                                            # (a batch worker that lost a task's lease: LeaseLost)
    # the future raises (StoreError) when nothing of the group was written

SQLite writes the group in one transaction inside the call and returns a future that is already
done; PostgreSQL queues it for its committer thread (which writes several groups in one
statement) and resolves the future on the caller's event loop. Either way the hub folds the group
only once the future is done, so no post returns before its envelope is committed (nor an
awaited telemetry emit before its record is).

Reading: `sessions()` + `stream()` are what a hydrate streams (`open_sessions()` + `stream(only=...)`
for a hub that holds only the sessions that have not ended: `turnflow serve`); `session_record` +
`load` read one session (`Hub.hydrate(only=...)`: a worker taking it over, `inspect --session`),
`session_record` + `read_range` one that ended, for such a hub, without keeping it;
`sessions_naming(agent_ids)` the sessions an agent may take part in, and `naming_page` + `end_records`
the same a page at a time with each one's creation and end records (`Hub.sessions_of`: an ended
session built from those two, its log not read; the end records, `CommitUnits.ends`, are written
by the group commit like telemetry, beside the log); `summary()`
aggregates the whole store inside the database (`inspect --summary`). No SQL crosses the contract: each engine keeps its own. A store's
`dialect` says which engine it is (the task list it keeps beside the log: task_queue.py) and
whether several processes share it — no caller compares engine names.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Container, Iterator, Optional, Protocol, Sequence, Union

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.store.records import CommitUnits, Corrupt, LogSummary, Refusals


@dataclass(frozen=True)
class Dialect:
    """One per engine (`SQLITE`, `POSTGRESQL`; compared by identity, never by name)."""

    name: str  # "sqlite" | "postgresql": shown to users (`inspect --summary`), never compared
    shared: bool  # several processes write one store: a single run hydrates only its own session


SQLITE = Dialect(name="sqlite", shared=False)
POSTGRESQL = Dialect(name="postgresql", shared=True)


class Store(Protocol):
    """A write-ahead log of sessions and their envelopes (see the module docstring)."""

    path: str  # where it is, for messages (a PostgreSQL URL without its password)
    read_only: bool
    damage: Optional[str]  # what an integrity check found when an existing store was opened read-only
    batch_failures: list[str]  # why whole group statements failed and were retried session by session

    @property
    def dialect(self) -> Dialect: ...

    # -- writing --------------------------------------------------------------------------------
    def next_global_seq(self) -> int:
        """A global sequence number (an envelope id) no other envelope of this store gets."""
        ...

    def seq_ready(self, n: int = 1) -> bool:
        """Whether `n` envelope numbers are at hand, so `next_global_seq` will not wait for a
        server (SQLite numbers locally: always; PostgreSQL: its current block)."""
        ...

    def take_numbers(self, n: int = 1) -> None:
        """Make `n` numbers ready, waiting for a server that went away up to the reconnect window
        (then `StoreFailed`). Called from a thread, so the event loop runs meanwhile."""
        ...

    def commit_group(self, units: CommitUnits) -> "asyncio.Future[Refusals]":
        """Write the group (needs a running event loop); the future resolves to the refusals."""
        ...

    # -- reading --------------------------------------------------------------------------------
    def last_global_seq(self) -> int: ...
    def sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]: ...
    def open_sessions(self) -> Iterator[Union[dict[str, Any], Corrupt]]:
        """`sessions()` without those whose log ends with `session.closed` or `session.expired`
        (one query: the logs are not read)."""
        ...

    def sessions_naming(self, agent_ids: Sequence[str]) -> Iterator[str]:
        """Ids (creation order) of the sessions that have had one of `agent_ids` on their roster
        (at creation or added since; a removed one is still named): a superset of the sessions
        those agents are on the roster of now."""
        ...

    def naming_page(self, agent_ids: Sequence[str], after: int, count: int) -> Optional[list[tuple[int, str]]]:
        """Up to `count` of `sessions_naming`'s sessions created after the one numbered `after`
        (0: from the first), as (number, id), in one query (no cursor left open); None for a store
        that keeps no end records (opened read-only, never opened for writing by this version)."""
        ...

    def end_records(self, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """Each of `session_ids` the store holds as (id, creation record, its checksum, end record
        or None, its checksum or None), in one query (`CommitUnits.ends` wrote the end records)."""
        ...

    def stream(self, only: Optional[Container[str]] = None) -> Iterator[Union[Envelope, Corrupt]]: ...
    def session_record(self, session_id: str) -> Optional[Union[dict[str, Any], Corrupt]]: ...
    def read_range(self, session_id: str, start: int = 1,
                   end: Optional[int] = None) -> Iterator[Union[Envelope, Corrupt]]: ...
    def load(self, session_id: str) -> list[Union[Envelope, Corrupt]]:
        """One session's whole log, kept by the store as this process's copy (a worker taking it over)."""
        ...

    def forget(self, session_id: str) -> None:
        """Drop whatever the store keeps of a session this process no longer runs."""
        ...

    def telemetry(self, session_id: str) -> list[dict[str, Any]]: ...
    def session_count(self) -> int: ...
    def sessions_ever_created(self) -> Optional[int]:
        """How many sessions writers have created in this store, when the store tracks it."""
        ...

    def summary(self) -> LogSummary:
        """The whole store aggregated inside the database (memory does not grow with the store)."""
        ...

    def close(self) -> None: ...
