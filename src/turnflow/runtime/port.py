"""`SessionPort`: the narrow, per-session port the hub hands to the agent side (`agents.driver`),
in the style of httpx's one-method transport: the driver never sees the hub, only the operations
one session's turns need — post an envelope, read the session (its metadata, roster, an agent's
view, the input a turn answers), check a roster change against the session's rules, append
telemetry, open a chatroom, and remember which roster each participant was last shown.

`HubPort(hub, session_id)` is the in-process port over `turnflow.runtime.hub.Hub`; a port over a
remote hub would implement the same protocol.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Optional, Protocol, Sequence

from turnflow.runtime.agents.platform_tools import CHATROOM_KIND
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Participant, SessionMetadata

if TYPE_CHECKING:
    from turnflow.runtime.agents.contract import RosterEntry
    from turnflow.runtime.hub import Hub

Roster = tuple["RosterEntry", ...]


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


class HubPort:
    """`SessionPort` of session `session_id` on an in-process `Hub`."""

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
        live = self.hub.sessions.get(self._sid)
        if live is None or live.transcript is None:
            return None
        for env in reversed(live.transcript.entries):
            if env.sender_id != agent_id:
                return live.adapter.extract_turn_input(env)
        return None

    def check_roster_change(self, envelope: Envelope, queued: Sequence[Envelope] = ()) -> None:
        live = self.hub.sessions.get(self._sid)
        if live is None or not live.adapter.membership:
            kind = live.metadata.kind if live is not None else "session"
            raise ProtocolError(f"{envelope.event_type!r} refused: the participants of a {kind} session are fixed "
                                "by its flow")
        state = live.state
        for change in queued:
            state = live.adapter.fold(change, state)
        live.adapter.validate_send(live.metadata, envelope, state)

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
