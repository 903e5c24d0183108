"""`SessionPort`: the narrow, per-session port the hub hands to the agent side (`agents.driver`),
in the style of httpx's one-method transport: the driver never sees the hub, only the operations
one session's turns need — post an envelope, read the session (its metadata, roster, an agent's
view, the input a turn answers), check a roster change against the session's rules, append
telemetry, open a chatroom, and remember which roster each participant was last shown.

`SessionHost` is the same port widened by what the run loop (`runtime.runner`) needs to drive the
session turn by turn: the session as folded so far (`live`), whose turn it is, the log, ack /
reject / close, listeners of its envelopes, the sweeper, and the participants whose turns are taken
elsewhere (`remote`, waited for with `changed`).

`HubPort(hub, session_id)` implements both over the in-process `turnflow.runtime.hub.Hub`;
`turnflow.serve.served_port.ServedPort` over a served hub's WebSocket wire (`turnflow run --hub`).
"""

from __future__ import annotations

import weakref
import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Optional, Protocol, Sequence

from turnflow.runtime.agents.platform_tools import CHATROOM_KIND
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Participant, SessionMetadata

if TYPE_CHECKING:
    from turnflow.runtime.agents.contract import RosterEntry
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.live import LiveSession

Roster = tuple["RosterEntry", ...]
Listener = Callable[[Envelope, SessionMetadata], Awaitable[None]]


class SessionPort(Protocol):
    """What the agent side may do with one session of a hub."""

    @property
    def session_id(self) -> str: ...

    def clock(self) -> float:
        """The hub's clock (epoch seconds)."""
        ...

    def metadata(self) -> SessionMetadata:
        """The session's metadata; `ProtocolError` when the hub does not know the session."""
        ...

    def roster(self) -> Roster:
        """Every participant now, as `{agent_id, role, description}`, in order."""
        ...

    def view(self, agent_id: str) -> Sequence[dict[str, Any]]:
        """What `agent_id` is shown of the session (the adapter's default view policy)."""
        ...

    def turn_input(self, agent_id: str) -> Optional[str]:
        """What `agent_id`'s turn answers: the adapter's `extract_turn_input` of the latest
        envelope from another participant (None at the start of a session)."""
        ...

    def check_roster_change(self, envelope: Envelope, queued: Sequence[Envelope] = ()) -> None:
        """`ProtocolError` unless the session's roster is open (`membership`) and the adapter
        accepts `envelope` (a `participant.added` / `.removed`) after the `queued` changes."""
        ...

    async def post(self, envelope: Envelope) -> Envelope:
        """Validate, log, fold and deliver one envelope of this session; returns it stamped."""
        ...

    async def emit_telemetry(self, agent_id: str, event: Any) -> bool:
        """Store a telemetry event of `agent_id`; a malformed one is dropped (False)."""
        ...

    def record_telemetry(self, agent_id: str, event: Any) -> bool:
        """`emit_telemetry` for synchronous callers on the hub's event-loop thread."""
        ...

    def store_telemetry(self, record: dict[str, Any]) -> None:
        """Store one telemetry record as given (a handshake record)."""
        ...

    async def open_chatroom(self, creator_id: str, name: str, others: Sequence[str]) -> SessionMetadata:
        """Open a new chatroom session of `creator_id` (initiator) with `others` on the same hub."""
        ...

    def last_shown(self, agent_id: str) -> Optional[Roster]:
        """The roster `agent_id` was last shown in this session (None: no turn delivered yet)."""
        ...

    def shown(self, agent_id: str, roster: Roster) -> None:
        """`agent_id`'s turn was delivered with `roster`; forgotten once the session has ended."""
        ...

    def forget_shown(self, agent_id: str) -> None:
        """`agent_id` was handed the session (again): its next turn is its first of this run
        (`is_session_bootstrap`, `participants_msg`)."""
        ...


class SessionHost(SessionPort, Protocol):
    """What the run loop needs of one session besides the agent side's port."""

    @property
    def live(self) -> LiveSession:
        """The session as folded so far (metadata, adapter and its state, transcript); `ProtocolError`
        when the hub does not know it."""
        ...

    @property
    def remote(self) -> frozenset[str]:
        """Participants whose turns are taken elsewhere (none in process): the run waits for them."""
        ...

    def expected_next(self) -> Optional[str]:
        """Who the session expects next (None: any order, or the session ended)."""
        ...

    def read(self, start: int = 1, end: Optional[int] = None) -> Iterable[Any]:
        """The session's log from `start` to `end` (inclusive; seqs are 1-based)."""
        ...

    async def ack(self, agent_id: str) -> None: ...

    async def reject(self, agent_id: str, reason: str) -> None: ...

    async def close(self, reason: str) -> None: ...

    def subscribe(self, listener: Listener) -> None:
        """`await listener(envelope, metadata)` for each envelope of the session as it is accepted."""
        ...

    def unsubscribe(self, listener: Listener) -> None: ...

    def start_sweeper(self, interval: float) -> bool:
        """Enforce TTLs and expectations here while the run goes on, unless something already does;
        True when this call started a sweeper (`stop_sweeper` stops it)."""
        ...

    async def stop_sweeper(self) -> None: ...

    async def changed(self, seq: int) -> None:
        """Return once the session's log holds more than `seq` envelopes."""
        ...


#: hub -> {session: {agent: the roster it was last shown}}; a session's entry goes when it ends
_SHOWN: "weakref.WeakKeyDictionary[Hub, dict[str, dict[str, Roster]]]" = weakref.WeakKeyDictionary()
#: id(participants list) -> (the list, its roster): sessions of one flow share it
_ROSTERS: dict[int, tuple[Sequence[Participant], Roster]] = {}


def roster_of(md: SessionMetadata) -> Roster:
    """Every participant as `{agent_id, role, description}` (one tuple per participant list)."""
    from turnflow.runtime.agents.contract import RosterEntry

    parts = md.participants
    hit = _ROSTERS.get(id(parts))
    if hit is not None and hit[0] is parts:
        return hit[1]
    roster = tuple(RosterEntry(agent_id=p.agent_id, role=p.role, description=p.description or "") for p in parts)
    if len(_ROSTERS) >= 256:
        _ROSTERS.clear()
    _ROSTERS[id(parts)] = (parts, roster)
    return roster


def turn_input_of(live: Optional[LiveSession], agent_id: str) -> Optional[str]:
    """`SessionPort.turn_input` of a session as folded (`live`; None: unknown, nothing to answer)."""
    if live is None or live.transcript is None:
        return None
    for env in reversed(live.transcript.entries):
        if env.sender_id != agent_id:
            return live.adapter.extract_turn_input(env)
    return None


def check_roster_change_of(live: Optional[LiveSession], envelope: Envelope, queued: Sequence[Envelope] = ()) -> None:
    """`SessionPort.check_roster_change` of a session as folded (`live`; None: unknown)."""
    if live is None or not live.adapter.membership:
        kind = live.metadata.kind if live is not None else "session"
        raise ProtocolError(f"{envelope.event_type!r} refused: the participants of a {kind} session are fixed "
                            "by its flow")
    state = live.state
    for change in queued:
        state = live.adapter.fold(change, state)
    live.adapter.validate_send(live.metadata, envelope, state)


class HubPort:
    """`SessionHost` (and so `SessionPort`) of session `session_id` on an in-process `Hub`."""

    __slots__ = ("hub", "_sid")

    def __init__(self, hub: Hub, session_id: str) -> None:
        self.hub = hub
        self._sid = session_id

    @property
    def session_id(self) -> str:
        return self._sid

    def clock(self) -> float:
        return self.hub.clock()

    def metadata(self) -> SessionMetadata:
        return self.hub.metadata(self._sid)

    def roster(self) -> Roster:
        return roster_of(self.hub.metadata(self._sid))

    def view(self, agent_id: str) -> Sequence[dict[str, Any]]:
        return self.hub.view(self._sid, agent_id)

    def turn_input(self, agent_id: str) -> Optional[str]:
        return turn_input_of(self.hub.sessions.get(self._sid), agent_id)

    def check_roster_change(self, envelope: Envelope, queued: Sequence[Envelope] = ()) -> None:
        check_roster_change_of(self.hub.sessions.get(self._sid), envelope, queued)

    async def post(self, envelope: Envelope) -> Envelope:
        return await self.hub.post(envelope)

    async def emit_telemetry(self, agent_id: str, event: Any) -> bool:
        return await self.hub.emit_telemetry(self._sid, agent_id, event)

    def record_telemetry(self, agent_id: str, event: Any) -> bool:
        return self.hub.record_telemetry(self._sid, agent_id, event)

    def store_telemetry(self, record: dict[str, Any]) -> None:
        self.hub.store_telemetry(self._sid, record)

    async def open_chatroom(self, creator_id: str, name: str, others: Sequence[str]) -> SessionMetadata:
        return await self.hub.open_session(CHATROOM_KIND, [{"agent_id": creator_id, "role": "initiator"}]
                                           + [{"agent_id": o, "role": "participant"} for o in others],
                                           creator_id=creator_id, name=name)

    def last_shown(self, agent_id: str) -> Optional[Roster]:
        return _SHOWN.get(self.hub, {}).get(self._sid, {}).get(agent_id)

    def shown(self, agent_id: str, roster: Roster) -> None:
        memo = _SHOWN.setdefault(self.hub, {})
        if self.hub.metadata(self._sid).state.terminal:
            memo.pop(self._sid, None)
        elif roster:
            memo.setdefault(self._sid, {})[agent_id] = roster

    def forget_shown(self, agent_id: str) -> None:
        _SHOWN.get(self.hub, {}).get(self._sid, {}).pop(agent_id, None)

    # -- SessionHost: the run loop's side -------------------------------------------------------
    @property
    def live(self) -> LiveSession:
        return self.hub._live(self._sid)

    @property
    def remote(self) -> frozenset[str]:
        return frozenset()

    def expected_next(self) -> Optional[str]:
        return self.hub.expected_next(self._sid)

    def read(self, start: int = 1, end: Optional[int] = None) -> Iterable[Any]:
        return self.hub.read(self._sid, start, end)

    async def ack(self, agent_id: str) -> None:
        await self.hub.ack(self._sid, agent_id)

    async def reject(self, agent_id: str, reason: str) -> None:
        await self.hub.reject(self._sid, agent_id, reason)

    async def close(self, reason: str) -> None:
        await self.hub.close(self._sid, reason)

    def subscribe(self, listener: Listener) -> None:
        self.hub.subscribe(listener, session_id=self._sid)

    def unsubscribe(self, listener: Listener) -> None:
        self.hub.unsubscribe(listener, session_id=self._sid)

    def start_sweeper(self, interval: float) -> bool:
        if self.hub.sweeping:
            return False
        self.hub.start_sweeper(interval)
        return True

    async def stop_sweeper(self) -> None:
        await self.hub.stop_sweeper()

    async def changed(self, seq: int) -> None:
        if self.live.last_seq > seq:
            return
        seen: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def once(env: Envelope, md: SessionMetadata) -> None:
            if env.seq > seq and not seen.done():
                seen.set_result(None)
        self.subscribe(once)
        try:
            await seen
        finally:
            self.unsubscribe(once)
