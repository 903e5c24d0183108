"""The hub's sweepers: a pass expires the sessions whose TTL has passed and logs (and acts on)
the expectations violated now (docs/runtime.md, "Expectations"); `start` runs a pass every interval."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Optional

from turnflow.runtime import expectations as _exp
from turnflow.runtime.envelope import EV_EXPECTATION_VIOLATED, Envelope
from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import Expectation, SessionState

if TYPE_CHECKING:
    from turnflow.runtime.hub import Hub


def _sweepable(live: LiveSession) -> bool:
    """Whether the sweepers look at a session: not ended, not closing, its log not corrupt."""
    state = live.metadata.state
    return not state.terminal and state != SessionState.CLOSING and live.corrupt is None


class Sweeper:
    """The sweepers of one hub; `watched` holds the sessions they still look at (creation order):
    an ended one leaves at the next pass, so a pass walks the open sessions, not every session
    the hub ever held."""

    __slots__ = ("hub", "watched", "task")

    def __init__(self, hub: "Hub") -> None:
        self.hub = hub
        self.watched: dict[str, LiveSession] = {}
        self.task: Optional[asyncio.Task[None]] = None

    async def sweep(self, now: Optional[float] = None) -> list[Envelope]:
        """One pass of the TTL and expectation sweepers; returns the envelopes it wrote."""
        hub = self.hub
        now = hub.clock() if now is None else now
        written: list[Envelope] = []
        for live in list(self.watched.values()):
            if not _sweepable(live):
                if live.metadata.state.terminal or live.corrupt is not None:  # for good: not looked at again
                    del self.watched[live.session_id]
                continue
            if live.writing is not None:
                await hub._idle(live)
                if not _sweepable(live):  # the wait may have closed it
                    continue
            md = live.metadata
            if md.expires_at is not None and now >= md.expires_at:
                env = await hub._expire(live)
                if env is not None:
                    written.append(env)
                continue
            for i, exp in enumerate(md.expectations):
                if not _sweepable(live):
                    break
                v = _exp.evaluate(live, i, exp, now)  # (checked here: no coroutine per expectation kept)
                if v is not None and v[0] not in live.fired and not await self._violated(live, exp, v, written):
                    break
        return written

    async def _violated(self, live: LiveSession, exp: Expectation, v: _exp.Violation, written: list[Envelope]) -> bool:
        """Log (and act on) the violation `v` of expectation `exp` (violated now, not fired for this
        turn yet); False when the session can take no more (nothing was written)."""
        key, agent = v
        hub = self.hub
        data = {"name": exp.name, "action": exp.on_violation, "seconds": exp.to_dict()["params"]["seconds"],
                "agent_id": agent, "key": key}
        audience: Optional[list[str]] = [] if exp.on_violation == "audit" else None
        env = await hub._append_hub(live, EV_EXPECTATION_VIOLATED, data, audience=audience)
        if env is None:
            return False
        written.append(env)
        await hub._deliver(env, live.metadata)
        if exp.on_violation == "auto_close":
            before = live.last_seq
            await hub._close(live, f"expectation_violated:{exp.name}")
            if live.last_seq > before:
                written.extend(e for e in hub.store.read_range(live.session_id, before + 1, live.last_seq)
                               if isinstance(e, Envelope))
        return True

    def start(self, interval: float = 1.0) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.sweep()

        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(loop())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
            self.task = None
