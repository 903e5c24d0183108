"""The hub's bus: who hears of the envelopes it delivers (every session's, or one session's) and
of the telemetry records it stores, and the delivery itself."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.session import SessionMetadata

Listener = Callable[[Envelope, SessionMetadata], Awaitable[None]]
TelemetryListener = Callable[[str, dict[str, Any]], None]


class Bus:
    """The listeners of every session's envelopes (`listeners`), of one session's
    (`session_listeners`) and of telemetry records (`telemetry_listeners`)."""

    __slots__ = ("listeners", "session_listeners", "telemetry_listeners")

    def __init__(self) -> None:
        self.listeners: list[Listener] = []
        self.session_listeners: dict[str, list[Listener]] = {}
        self.telemetry_listeners: list[TelemetryListener] = []

    def subscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        """`await listener(envelope, metadata)` for every envelope the hub delivers, or — with
        `session_id` — only for that session's (a runner watching its own session: delivery then
        costs the same however many sessions the hub runs)."""
        if session_id is None:
            self.listeners.append(listener)
        else:
            self.session_listeners.setdefault(session_id, []).append(listener)

    def unsubscribe(self, listener: Listener, session_id: Optional[str] = None) -> None:
        own = self.listeners if session_id is None else self.session_listeners.get(session_id)
        if own is not None and listener in own:
            own.remove(listener)
            if session_id is not None and not own:
                del self.session_listeners[session_id]

    def subscribe_telemetry(self, fn: TelemetryListener) -> None:
        """`fn(session_id, record)` is called (synchronously) for every telemetry record as it is stored."""
        self.telemetry_listeners.append(fn)

    def deliver(self, env: Envelope, md: SessionMetadata) -> Awaitable[None]:
        """Hand one logged envelope to every session's listeners, then to its session's (awaited at
        once by the caller). One listener of every session and none of this session's (`turnflow
        serve`): that listener's own awaitable, with no coroutine of the bus around it."""
        listeners = self.listeners
        if len(listeners) == 1 and not self.session_listeners.get(env.session_id):
            return listeners[0](env, md)
        return self._deliver_all(env, md)

    async def _deliver_all(self, env: Envelope, md: SessionMetadata) -> None:
        for listener in self.listeners:
            await listener(env, md)
        own = self.session_listeners.get(env.session_id)
        if own:
            for listener in tuple(own):
                await listener(env, md)

    def telemetry(self, session_id: str, record: dict[str, Any]) -> None:
        for fn in self.telemetry_listeners:
            fn(session_id, record)
