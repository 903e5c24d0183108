"""How the hub side drives an agent through the contract (used by `runtime.runner`):
the handshake (validated, raw and effective capabilities logged in the store's telemetry
records as `{"event": "handshake", ...}`), telemetry forwarding (live: each accepted event is
stored and handed to the hub's telemetry subscribers at once), and one turn with its failure
policy: a failed turn is logged as an `error` telemetry event and retried once with the same
input (`control_loop: hub`); an agent that runs its own loop (`control_loop: self`) gets one
call per turn and no retry. A failure names the last frame of the traceback that is the
user's code (`file:line in function`). A turn the session no longer wants (the hub closed
the session, or moved the turn on) raises `TurnStopped` and is never retried.

The driver never sees the hub: every call goes through the session's `SessionPort`
(`runtime.port`; `HubPort(hub, session_id)` in process, `serve.served_port.ServedPort` on a
served hub).
"""

from __future__ import annotations

import os
import threading
import traceback
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Container, Optional

from turnflow.runtime.agents.contract import (Agent, AgentContext, Capabilities, SessionTools, check_telemetry,
                                          raw_capabilities)
from turnflow.runtime.agents.platform_tools import CHATROOM_KIND
from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED, Envelope
from turnflow.runtime.errors import AdapterError, EndpointUnavailable, ProtocolError, StoreError
from turnflow.runtime.port import Roster

if TYPE_CHECKING:
    from turnflow.runtime.port import SessionPort
    from turnflow.runtime.session import SessionMetadata

TURN_ATTEMPTS = 2


class TurnFailed(AdapterError):
    """An agent failed its turn (twice, when the hub retries)."""


class TurnUnavailable(TurnFailed, EndpointUnavailable):
    """The turn failed because the agent's model endpoint stayed unavailable (an outage)."""


class TurnStopped(Exception):
    """The session does not want this turn any more (closed, expired, interrupted, turn moved on)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


_PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # .../turnflow
_LIBS = (os.path.dirname(os.__file__), _PKG)


def user_frame(exc: BaseException) -> Optional[str]:
    """`file:line in function` of the last traceback frame outside turnflow and the standard
    library (the user's own code), or None."""
    found = None
    for fr in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fr.filename)
        if path.startswith(_LIBS) or fr.filename.startswith("<") or "site-packages" in path:
            continue
        rel = os.path.relpath(path)
        found = f"{rel if not rel.startswith('..') else path}:{fr.lineno} in {fr.name}"
    return found


def describe(exc: BaseException) -> str:
    """An agent's failure as it is stored and printed: its message (secrets masked: an agent's own
    exception may quote its key or its endpoint's URL) and where in the user's code it was raised."""
    from turnflow.masking import mask

    text = str(exc) or type(exc).__name__
    text = text if isinstance(exc, AdapterError) else mask(f"{type(exc).__name__}: {text}")
    where = user_frame(exc)
    return f"{text} (at {where})" if where else text


def telemetry_sink(port: SessionPort, agent_id: str) -> Callable[[Any], Awaitable[bool]]:
    """The `emit` given to `open_session` (`emit_event` of `aopen_session`): validates (drops a
    malformed event with a warning; an `AdapterTelemetryEvent` or a mapping) and stores the event
    beside the session's envelopes."""
    async def emit(event: Any) -> bool:
        ev = check_telemetry(event, agent_id)
        if ev is None:
            return False
        return await port.emit_telemetry(agent_id, ev)
    return emit


def log_handshake(port: SessionPort, agent_id: str, raw: Any, effective: Optional[Capabilities],
                  error: Optional[str] = None, behavior: Optional[str] = None) -> None:
    rec = {"agent_id": agent_id, "at": port.clock(), "event": "handshake", "raw": raw_capabilities(raw),
           "effective": effective.to_dict() if effective is not None else None}
    if behavior is not None:
        rec["behavior"] = behavior
    if error is not None:
        rec["error"] = error
    port.store_telemetry(rec)


def with_behavior(caps: Capabilities, behavior: Optional[str], agent_id: str) -> Capabilities:
    """The effective capabilities under the agents file's `behavior:` override (`self`: the agent
    runs its own loop; `atlas`: the hub drives it one turn at a time)."""
    if behavior is None:
        return caps
    loop = "self" if behavior == "self" else "hub"
    return Capabilities(loop, caps.supports_stepwise, caps.telemetry_stream).check(agent_id)


async def handshake(port: SessionPort, agent: Agent, ctx: AgentContext) -> Capabilities:
    """Open the session on one agent; a bad handshake raises `AdapterError` (logged first). The
    record keeps the raw answer, the effective capabilities and the `behavior` override, if any."""
    name = ctx.agent_id
    behavior = agent.behavior_override
    try:
        raw = await agent.open_session(ctx, telemetry_sink(port, name))
    except Exception as exc:  # any failure of the agent's own code is a failed handshake
        msg = describe(exc)
        if not msg.startswith(f"agent {name!r}"):
            msg = f"agent {name!r}: handshake failed: {msg}"
        log_handshake(port, name, None, None, msg, behavior)
        raise AdapterError(msg) from None
    try:
        caps = with_behavior(Capabilities.from_handshake(raw, name), behavior, name)
    except (AdapterError, TypeError) as exc:
        log_handshake(port, name, raw, None, str(exc), behavior)
        raise AdapterError(str(exc)) from None
    log_handshake(port, name, raw, caps, None, behavior)
    return caps


async def flush(port: SessionPort, tools: SessionTools) -> None:
    for ev in tools.events:
        await port.emit_telemetry(tools.agent_id, ev)
    tools.events = []


def live_sink(port: SessionPort, agent_id: str) -> Callable[[dict[str, Any]], None]:
    """Where `tools.emit_event` sends an accepted event: stored at once, from the event-loop
    thread or from a worker thread running a synchronous agent."""
    import asyncio

    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    def sink(ev: dict[str, Any]) -> None:
        if threading.get_ident() == loop_thread:
            port.record_telemetry(agent_id, ev)
            return
        try:
            loop.call_soon_threadsafe(port.record_telemetry, agent_id, ev)
        except RuntimeError:  # the loop is gone (the run ended while a worker thread went on)
            pass
    return sink


async def _plain(coro: Awaitable[Any]) -> Any:
    return await coro


def participants_text(roster: Roster) -> str:
    return "Participants: " + ", ".join(r["agent_id"] + (f" ({r['role']})" if r["role"] != "participant" else "")
                                        + (f": {r['description']}" if r["description"] else "") for r in roster)


def session_facts(port: SessionPort, tools: SessionTools, drivable: Optional[Container[str]] = None,
                  directory: Optional[Callable[[], Any]] = None) -> Optional[SessionMetadata]:
    """Stamp `tools` with what the session knows about this turn: the session kind, the roster,
    `turn_input` (computed when read, see `turn_input`), `is_session_bootstrap` (no turn of this
    participant was delivered in this hub yet) and `participants_msg` (the roster as text, when it
    changed since this participant's last turn — the first turn included). Returns the session's
    metadata (None when the hub does not know the session: nothing is stamped). `directory`: the
    agents the caller knows besides the participants (`lookup_peers`)."""
    try:
        md = port.metadata()
    except Exception:  # a hub without this session (tests driving take_turn by hand): nothing to stamp
        return None
    roster = port.roster()
    tools.session_kind, tools.roster = md.kind, roster
    tools.input_source = lambda: port.turn_input(tools.agent_id)
    tools.roster_port = roster_port(port, tools, drivable)
    tools.room_port = room_port(tools)
    if directory is not None:
        tools.directory = directory
    last = port.last_shown(tools.agent_id)
    tools.is_session_bootstrap = last is None
    tools.participants_msg = participants_text(roster) if last is not roster and last != roster else None
    return md


def roster_port(port: SessionPort, tools: SessionTools,
                drivable: Optional[Container[str]] = None) -> Callable[[str, dict[str, Any]], None]:
    """`tools.add_participant` / `remove_participant`: the change as a membership envelope, checked
    at once (the hub's rule, then the adapter's `validate_send` against the roster after this
    turn's earlier changes; `ProtocolError` refuses it) and queued; `post_roster_changes` posts
    them when the turn is delivered, before its round. `drivable`: the participants the caller
    has agents for (`turnflow run`); adding anyone else is refused, since nobody could take its turns."""
    def change(event_type: str, data: dict[str, Any]) -> None:
        env = Envelope(port.session_id, tools.agent_id, None, event_type, data)
        port.check_roster_change(env, tools.roster_changes)
        who = data.get("agent_id")
        if event_type == EV_PARTICIPANT_ADDED and drivable is not None and who not in drivable:
            raise ProtocolError(f"add_participant({who!r}) refused: this run has no agent for {who!r} "
                                "(`turnflow run` drives the participants its agents file names)")
        tools.roster_changes.append(env)
    return change


async def post_roster_changes(port: SessionPort, tools: SessionTools) -> None:
    changes, tools.roster_changes = tools.roster_changes, []
    for env in changes:
        await port.post(env)
    rooms, tools.rooms = tools.rooms, []
    for name, others in rooms:
        md = await port.open_chatroom(tools.agent_id, name, others)
        await port.emit_telemetry(tools.agent_id, {
            "event": "task", "reason": "create_chatroom", "step": tools.step,
            "payload": {"chatroom": name, "session_id": md.session_id, "participants": md.participant_ids}})


def room_port(tools: SessionTools) -> Callable[[str, list[str]], str]:
    """`tools.create_chatroom`: the new discussion checked at once (its name, the participants' names,
    at least two participants)
    and queued; `post_roster_changes` opens it when the turn is delivered and records its session
    id as a `task` telemetry event (reason `create_chatroom`)."""
    def create(name: str, others: list[str]) -> str:
        from turnflow.runtime.session import check_agent_id, check_name

        check_name(name)
        if not others:
            raise ProtocolError(f"a {CHATROOM_KIND} needs at least one other participant")
        for o in others:
            check_agent_id(o)
        tools.rooms.append((name, list(dict.fromkeys(others))))
        return (f"chatroom {name!r} opens when your turn ends, with {', '.join([tools.agent_id, *others])}; "
                "its session id is recorded in the session's telemetry")
    return create


def delivered(port: SessionPort, tools: SessionTools, md: Optional[SessionMetadata]) -> None:
    if md is not None:
        port.shown(tools.agent_id, tools.roster)


def history_source(agent: Agent, msg: Any, agent_id: str) -> Callable[[], Any]:
    """`tools.history`: the raw history of `msg`, through the agent's `history_converter` if it has one."""
    from turnflow.runtime.agents.history import convert, raw_history

    converter = agent.history_converter
    return lambda: convert(converter, raw_history(msg, agent_id))


async def take_turn(port: SessionPort, agent: Agent, msg: Any, make_tools: Callable[[], SessionTools],
                    deliver: Callable[[SessionTools], Awaitable[None]], step: int, *, attempts: int = TURN_ATTEMPTS,
                    invoke: Callable[[Awaitable[Any]], Awaitable[Any]] = _plain,
                    still_wanted: Callable[[], bool] = lambda: True,
                    drivable: Optional[Container[str]] = None,
                    directory: Optional[Callable[[], Any]] = None) -> None:
    """Run one turn: `on_message` (through `invoke`, which may cancel it), then `deliver(tools)`
    (builds and posts the round). Any exception in either fails the turn; it is retried until
    `attempts` calls failed, then `TurnFailed` is raised. When `still_wanted()` turns false
    (the session closed meanwhile), the failure is not retried: `TurnStopped`."""
    for attempt in range(1, attempts + 1):
        tools = make_tools()
        tools.step = step
        md = session_facts(port, tools, drivable, directory)
        tools.history_source = history_source(agent, msg, tools.agent_id)
        if tools.sink is None:
            tools.sink = live_sink(port, tools.agent_id)
        try:
            await invoke(agent.on_message(msg, tools))
            await flush(port, tools)
            await post_roster_changes(port, tools)
            await deliver(tools)
            delivered(port, tools, md)
            return
        except (TurnStopped, StoreError):  # the store failing is never the agent's failure
            raise
        except Exception as exc:
            await flush(port, tools)
            if not still_wanted():
                raise TurnStopped("session_ended") from None
            reason = describe(exc)
            own = f"agent {tools.agent_id!r}: "
            if reason.startswith(own):  # the agent's own error names it already: say it once
                reason = reason[len(own):]
            last = attempt == attempts
            payload = {"attempt": attempt, "error": type(exc).__name__,
                       "action": "close_session" if last else "retry"}
            where = user_frame(exc)
            if where:
                payload["where"] = where
            await port.emit_telemetry(tools.agent_id, {
                "event": "error", "step": step, "reason": f"turn failed: {reason}", "payload": payload})
            if last:
                times = " twice" if attempts == 2 else ("" if attempts == 1 else f" {attempts} times")
                failed = TurnUnavailable if isinstance(exc, EndpointUnavailable) else TurnFailed
                raise failed(f"agent {tools.agent_id!r} failed turn {step}{times}: {reason}") from None
