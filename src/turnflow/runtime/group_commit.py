"""`GroupCommit`: the hub's one write path (docs/runtime.md, "Write-ahead log").

Every envelope the hub writes, every new session's creation record and every telemetry record
joins the group of the current event-loop tick; the first to join schedules the group's commit with `loop.call_soon`,
so it runs once the tick's other ready callbacks (the other posters) have staged theirs. The
commit hands the rows to `store.commit_group` (store/contract.py) — one transaction or statement
for the whole tick — and, once the store's future is done, the hub folds each envelope in log
order (`Commits._settle`, hub/commit.py), then the posters resume:

    poster ──stage──▶ GroupCommit ──call_soon──▶ Commits._commit ──▶ store.commit_group(group.units)
                                                                              │ future: refusals
    poster ◀──resume── group.settled ◀── fold each envelope ◀────────────────┘

A poster waits with `await group.committed()`, then `group.outcome(session_id)` raises what the
store refused of its session. Public asyncio only: `committed` first gives up one loop iteration
(`asyncio.sleep(0)`): the commit was scheduled before the poster waited, so with a store that
commits on the loop (SQLite: its future is done when `commit_group` returns) the group is settled
when the poster resumes, and no poster leaves a callback behind. A store that commits off the loop
(PostgreSQL) settles the group later; the poster then awaits a future the group resolves, through
`asyncio.shield`: a poster that is cancelled while waiting does not cancel the group, whose
envelopes are written and folded all the same (the other posters are not affected), and hears of
its cancellation once the group is settled (as with SQLite, where it resumes after the commit).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from turnflow.runtime.store.records import CommitUnits, Refusals


class GroupCommit:
    """One event-loop tick's writes (`units`: the rows handed to `store.commit_group`) and what the
    hub needs to fold them. `sessions`, `rows`, `envelopes` and `telemetry` are the units' own
    lists, named here too so staging appends to them with no extra lookup."""

    __slots__ = ("units", "sessions", "rows", "envelopes", "telemetry", "lives", "accepts", "new", "settled",
                 "error", "refused", "_waiter")

    def __init__(self) -> None:
        units = self.units = CommitUnits()
        self.sessions = units.sessions
        self.rows = units.rows
        self.envelopes = units.envelopes  # parallel to `rows`
        self.telemetry = units.telemetry
        self.lives: list[Any] = []  # the LiveSession of each envelope (parallel to `rows`)
        self.accepts: list[bool] = []  # whether each is a participant's (given to `on_accepted`)
        self.new: list[str] = []  # ids of the sessions whose creation record is in this group
        self.settled = False  # committed (or failed) and folded
        self.error: Optional[BaseException] = None  # nothing of the group was written
        self.refused: Optional[Refusals] = None  # sessions whose part the store refused
        self._waiter: Optional[asyncio.Future[None]] = None  # made only when a poster must wait off the loop

    async def committed(self) -> None:
        """Wait until the group is settled. Never raises the group's outcome (see `outcome`)."""
        await asyncio.sleep(0)  # the commit, scheduled before this poster waited, runs first
        if not self.settled:  # a store that commits off the event loop
            await self._off_loop()

    async def _off_loop(self) -> None:
        """Wait for a commit made off the event loop. A poster cancelled meanwhile hears of it once
        the group is settled: its envelope is written and folded either way."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        cancelled: Optional[asyncio.CancelledError] = None
        while not self.settled:
            try:
                await asyncio.shield(self._waiter)
            except asyncio.CancelledError as exc:
                cancelled = exc
        if cancelled is not None:
            raise cancelled

    def outcome(self, session_id: str) -> None:
        """Raise what kept `session_id`'s part of the group out of the log, if anything did."""
        if self.error is not None:
            raise self.error
        refused = self.refused
        if refused is not None:
            problem = refused.get(session_id)
            if problem is not None:
                raise problem

    def settle(self) -> None:
        """Mark the group settled and wake the posters waiting off the loop."""
        self.settled = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
