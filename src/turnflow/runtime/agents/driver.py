"""How the hub side drives an agent through the contract (used by `runtime.runner`):
the handshake (validated, raw and effective capabilities logged in the store's telemetry
records as `{"event": "handshake", ...}`), telemetry forwarding, and one turn with its
failure policy: a failed turn is logged as an `error` telemetry event and retried once with
the same input; a second failure raises `TurnFailed` (the runner closes the session with
`agent_error`).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.agents.base import AgentContext, Capabilities, SessionTools, check_telemetry, raw_capabilities
from turnflow.runtime.errors import AdapterError

TURN_ATTEMPTS = 2


class TurnFailed(AdapterError):
    """An agent failed the same turn twice."""


def describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, AdapterError) else f"{type(exc).__name__}: {text}"


def telemetry_sink(hub: Any, session_id: str, agent_id: str) -> Callable[[dict], Awaitable[bool]]:
    """The `emit` given to `open_session`: validates (drops a malformed event with a warning)
    and stores the event beside the session's envelopes."""
    async def emit(event: dict) -> bool:
        ev = check_telemetry(event, agent_id)
        if ev is None:
            return False
        return await hub.emit_telemetry(session_id, agent_id, ev)
    return emit


def log_handshake(hub: Any, session_id: str, agent_id: str, raw: Any, effective: Optional[Capabilities],
                  error: Optional[str] = None) -> None:
    rec = {"agent_id": agent_id, "at": hub.clock(), "event": "handshake", "raw": raw_capabilities(raw),
           "effective": effective.to_dict() if effective is not None else None}
    if error is not None:
        rec["error"] = error
    hub.store.append_telemetry(session_id, rec)


async def handshake(hub: Any, agent: Any, ctx: AgentContext) -> Capabilities:
    """Open the session on one agent; a bad handshake raises `AdapterError` (logged first)."""
    name = ctx.agent_id
    try:
        raw = await agent.open_session(ctx, telemetry_sink(hub, ctx.session_id, name))
    except Exception as exc:  # any failure of the agent's own code is a failed handshake
        msg = describe(exc)
        if not msg.startswith(f"agent {name!r}"):
            msg = f"agent {name!r}: handshake failed: {msg}"
        log_handshake(hub, ctx.session_id, name, None, None, msg)
        raise AdapterError(msg) from None
    try:
        caps = Capabilities.from_handshake(raw, name)
    except (AdapterError, TypeError) as exc:
        log_handshake(hub, ctx.session_id, name, raw, None, str(exc))
        raise AdapterError(str(exc)) from None
    log_handshake(hub, ctx.session_id, name, raw, caps)
    return caps


async def flush(hub: Any, session_id: str, tools: SessionTools) -> None:
    for ev in tools.events:
        await hub.emit_telemetry(session_id, tools.agent_id, ev)
    tools.events = []


async def take_turn(hub: Any, session_id: str, agent: Any, msg: list, make_tools: Callable[[], SessionTools],
                    deliver: Callable[[SessionTools], Awaitable[None]], step: int) -> None:
    """Run one turn: `on_message`, then `deliver(tools)` (builds and posts the round). Any
    exception in either fails the turn; it is retried once, then `TurnFailed` is raised."""
    for attempt in range(1, TURN_ATTEMPTS + 1):
        tools = make_tools()
        tools.step = step
        try:
            await agent.on_message(list(msg), tools)
            await flush(hub, session_id, tools)
            await deliver(tools)
            return
        except Exception as exc:
            await flush(hub, session_id, tools)
            reason = describe(exc)
            last = attempt == TURN_ATTEMPTS
            await hub.emit_telemetry(session_id, tools.agent_id, {
                "event": "error", "step": step, "reason": f"turn failed: {reason}",
                "payload": {"attempt": attempt, "error": type(exc).__name__,
                            "action": "close_session" if last else "retry"}})
            if last:
                raise TurnFailed(f"agent {tools.agent_id!r} failed turn {step} twice: {reason}") from None
