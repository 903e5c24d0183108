"""The hub's write path: stage envelopes in this event-loop tick's `GroupCommit`, schedule its one
`store.commit_group` for the end of the tick, then settle it — fold each envelope in log order
(group_commit.py, docs/runtime.md "Write-ahead log")."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Callable, Optional

from turnflow.runtime.envelope import SUBSTANTIVE, Envelope
from turnflow.runtime.errors import ProtocolError, StoreError
from turnflow.runtime.group_commit import GroupCommit
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import SessionState
from turnflow.runtime.store.records import Refusals, envelope_row

if TYPE_CHECKING:
    from turnflow.runtime.hub import Hub

HUB_SENDER = "hub"
_CLOSING = SessionState.CLOSING  # (a module constant: `SessionState.CLOSING` is a descriptor lookup, ~60 ns)


class Commits:
    """Staging and settling for one hub: `group` is this tick's group commit (None until
    something is staged in the tick)."""

    __slots__ = ("hub", "store", "clock", "group", "seq_ready")

    def __init__(self, hub: "Hub", clock: Callable[[], float]) -> None:
        self.hub = hub  # its `sessions` and watched sessions: a session the store refused leaves them
        self.store = hub.store
        self.clock = clock
        self.group: Optional[GroupCommit] = None
        # whether `n` envelope numbers are at hand (PostgreSQL's come in blocks from the server)
        self.seq_ready: Callable[[int], bool] = self.store.seq_ready

    async def numbers(self, n: int = 1) -> None:
        """Wait until the store has `n` envelope numbers at hand, fetching them in a thread: a
        PostgreSQL server that went away is waited for off the event loop (every other session,
        connection, the sweeper and the signal handlers go on). Called before a write's checks,
        where an await is allowed; `stage` still takes a number itself if it must."""
        ready = self.seq_ready
        while not ready(n):
            await asyncio.to_thread(self.store.take_numbers, n)

    async def idle(self, live: LiveSession) -> None:
        """Wait until no envelope of this session is waiting for its commit (so checks see the
        folded state and envelopes of one session are written and folded in order)."""
        while live.writing is not None:
            await live.writing.committed()

    async def append(self, live: LiveSession, env: Envelope, accept: bool = False) -> Envelope:
        """Stamp, log and fold one envelope (call `idle` first, then check, with no await between)."""
        group = self.stage(live, env, accept)
        # `await group.committed()`, inlined (one coroutine fewer per wait); cancelling the poster
        # here takes effect after the commit and the fold
        await asyncio.sleep(0)
        if not group.settled:
            await group.committed()
        group.outcome(env.session_id)
        return env

    async def append_hub(self, live: LiveSession, event_type: str, data: dict[str, Any],
                         audience: Optional[list[str]] = None, sender: Optional[str] = None) -> Optional[Envelope]:
        """A hub-written envelope; None (nothing written) when the session became terminal meanwhile."""
        if not self.seq_ready(1):
            await self.numbers()
        if live.writing is not None:
            await self.idle(live)
        if live.metadata.state.terminal:
            return None
        env = Envelope(live.session_id, sender or HUB_SENDER, audience, event_type, data)
        group = self.stage(live, env, False)  # `await self.append(live, env)`, inlined: one coroutine fewer
        await asyncio.sleep(0)
        if not group.settled:
            await group.committed()
        group.outcome(env.session_id)
        return env

    def stage(self, live: LiveSession, env: Envelope, accept: bool, ahead: int = 0) -> GroupCommit:
        """Stamp one envelope and add it to this event-loop tick's group; returns the group. The
        group is committed at the end of the tick, then each envelope is folded in log order.
        `accept`: a participant's envelope, also given to the adapter's `on_accepted`. `ahead`: how
        many envelopes of this session are already staged in this group (open_session's invites)."""
        gseq = self.store.next_global_seq()
        env.envelope_id = f"{gseq:016d}"  # envelope_id_for(gseq), inlined
        env.seq = live.last_seq + 1 + ahead
        env.created_at = self.clock()
        try:
            row = envelope_row(env, gseq)
        except (TypeError, ValueError) as exc:  # not JSON: refused, nothing staged
            raise ProtocolError(f"envelope data must be JSON values: {exc}") from None
        group = self.group or self.new_group()
        group.rows.append(row)  # parallel lists, not tuples: fewer objects for the GC to track
        group.envelopes.append(env)
        group.lives.append(live)
        group.accepts.append(accept)
        live.writing = group
        return group

    def new_group(self) -> GroupCommit:
        """This tick's group, its commit scheduled for the end of the tick."""
        group = self.group = GroupCommit()
        asyncio.get_running_loop().call_soon(self._commit)
        return group

    def _commit(self) -> None:
        group = self.group
        assert group is not None  # scheduled by `new_group`
        self.group = None
        try:
            written = self.store.commit_group(group.units)
        except Exception as exc:  # the store could not even take the group (closed)
            self._settle(group, None, exc)
            return
        if written.done():  # committed on the loop (SQLite)
            self._written(group, written)
        else:
            written.add_done_callback(lambda f: self._written(group, f))

    def _written(self, group: GroupCommit, written: "asyncio.Future[Refusals]") -> None:
        if written.cancelled():
            self._settle(group, None, StoreError("the write was cancelled"))
        elif written.exception() is not None:
            self._settle(group, None, written.exception())
        else:
            self._settle(group, written.result() or None, None)

    def _settle(self, group: GroupCommit, refused: Optional[Refusals], error: Optional[BaseException]) -> None:
        """Fold each envelope of the group in log order, except those of the sessions the store
        refused (a batch worker that lost a task's lease); on an error nothing was written and
        nothing is folded. Sessions whose creation record was not written are dropped."""
        if error is not None:
            group.error = error if isinstance(error, StoreError) else StoreError(f"commit failed: {error}")
            refused = {sid: group.error for sid in group.new}
        group.refused = refused
        if refused:
            self.hub.forget([sid for sid in group.new if sid in refused])
        for live, env, accept in zip(group.lives, group.envelopes, group.accepts):
            live.writing = None
            if group.error is None and not (refused and env.session_id in refused):
                _fold(live, env, accept)
        group.settle()


def _fold(live: LiveSession, env: Envelope, accept: bool) -> None:
    try:
        live.apply(env)
        if accept and env.event_type in SUBSTANTIVE:
            result = live.adapter.on_accepted(live.metadata, env, live.state)
            if result.close_reason is not None:
                live.metadata.state = _CLOSING
                live.pending_close = result.close_reason
    except Exception as exc:  # an adapter bug: this session refuses further sends, the others go on
        live.corrupt = f"session {live.session_id} seq {env.seq}: fold failed: {type(exc).__name__}: {exc}"
