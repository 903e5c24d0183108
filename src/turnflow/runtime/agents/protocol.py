"""`as_agent`: any agent the contract allows, in the one shape the hub side drives — the `Agent`
protocol of `agents.contract` (`agents.driver`, `runtime.runner` call nothing else).

An agent may be written in any of the contract's forms (docs/agents.md, docs/contracts.md):
- the handshake as `open_session(ctx, emit)` (canonical) or as the stateful-adapter contract's
  keyword form `aopen_session(task=..., metadata=..., emit_event=...)` (`ContractOpen`);
- a turn as `on_message(msg, tools)` (canonical), or as the three phases `aplan`, `aexecute`,
  `asynthesize` of a self-managed adapter (`PhasedAgent`);
- or the framework-integration guide's hooks: `on_started(agent_name, agent_description)` (once,
  before the first handshake), `on_message(msg, tools, history, participants_msg, *,
  is_session_bootstrap, room_id)` and `on_cleanup(room_id)` (`agents.hooks`);
- optionally `close_session` (or `aclose_session`), `behavior_override` (the agents file's
  `behavior:`), `history_converter`, `description`.

`as_agent(obj)` reads which once, when the run is set up, and answers a `DrivenAgent` (an
`Agent`) whose members are all there: the driver then calls them without asking the agent what it has.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import weakref
from typing import TYPE_CHECKING, Any, Awaitable, Callable, MutableMapping, Optional, Protocol

from turnflow.runtime.agents.hooks import hooked, run_hooked
from turnflow.runtime.errors import AdapterError

if TYPE_CHECKING:
    from turnflow.runtime.agents.contract import Agent, AgentContext, SessionTools

Emit = Callable[[Any], Awaitable[bool]]
OpenSession = Callable[["AgentContext", Emit], Awaitable[Any]]
OnMessage = Callable[[Any, "SessionTools"], Awaitable[None]]


class ContractOpen(Protocol):
    """The stateful-adapter contract's handshake form."""

    def aopen_session(self, *, task: str, metadata: dict[str, Any], emit_event: Emit) -> Awaitable[Any]: ...


class PhasedAgent(Protocol):
    """A self-managed adapter without `on_message`: one call per phase (`run_phases`)."""

    def aplan(self, task: str, metadata: dict[str, Any]) -> Awaitable[Any]: ...
    def aexecute(self, task: str, plan: Any, step: Optional[int], metadata: dict[str, Any]) -> Awaitable[Any]: ...
    def asynthesize(self, task: str, plan: Any, results: list[Any],
                    metadata: dict[str, Any]) -> Awaitable[Any]: ...


def handshake_metadata(ctx: AgentContext) -> dict[str, Any]:
    """The `metadata` given to `aopen_session(task=..., metadata=..., emit_event=...)`: the
    session's facts from the `AgentContext`, as JSON values."""
    return {"session_id": ctx.session_id, "agent_id": ctx.agent_id, "kind": ctx.kind, "name": ctx.name,
            "title": ctx.title, "description": ctx.description, "participants": list(ctx.participants),
            "roster": [dict(r) for r in ctx.roster], "tools": [dict(t) for t in ctx.tools],
            "context_vars": dict(ctx.context_vars), "dynamic_handoffs": ctx.dynamic_handoffs}


async def run_phases(agent: PhasedAgent, msg: Any, tools: SessionTools) -> None:
    """One turn of a self-managed adapter without `on_message`, one call per phase:
    `aplan(task, metadata)`, `aexecute(task, plan, step, metadata)` (`step`: the turn number),
    `asynthesize(task, plan, step_results, metadata)`; the synthesis is the round's text. (Like any
    agent, one declaring `supports_stepwise: false` is single-shot: one turn per session.) The plan,
    the step's result and the final answer are stored as telemetry: `task` (reason `plan`),
    `progress` (reason `step`) and `tool_response` (reason `final`) events. `task` is the turn's
    input as `sender: text` lines; `metadata` holds session_id, agent_id, step, kind, participants."""
    items = [m for m in msg if isinstance(m, dict)]
    task = "\n".join(f"{m.get('sender')}: {m.get('text')}" for m in items if m.get("text"))  # text, "" when none
    metadata = {"session_id": tools.session_id, "agent_id": tools.agent_id, "step": tools.step,
                "kind": tools.session_kind, "participants": list(tools.participants)}
    plan = await agent.aplan(task, metadata)
    tools.emit_event({"event": "task", "reason": "plan", "payload": _safe(plan)})
    result = await agent.aexecute(task, plan, tools.step, metadata)
    tools.emit_event({"event": "progress", "reason": "step", "payload": {"step": tools.step, "result": _safe(result)}})
    final = await agent.asynthesize(task, plan, [result], metadata)
    tools.emit_event({"event": "tool_response", "reason": "final", "payload": _safe(final)})
    text = final if isinstance(final, str) else json.dumps(_safe(final))
    if text:
        tools.send_message(text)


def _safe(v: Any) -> Any:
    try:
        return json.loads(json.dumps(v, allow_nan=False))
    except (TypeError, ValueError):
        return repr(v)[:1000]


#: the agent objects whose `on_started` has been called (the guide: once per agent)
_STARTED: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()
#: the `on_started` calls in progress, per agent object: a concurrent handshake waits for its agent's
_STARTING: "weakref.WeakKeyDictionary[Any, asyncio.Future[None]]" = weakref.WeakKeyDictionary()


class DrivenAgent:
    """An agent in the canonical shape: `open_session(ctx, emit)` (the raw handshake answer),
    `on_message(msg, tools)`, `close_session(session_id)`, `behavior_override`,
    `history_converter` and `description`. `inner` is the agent as the user wrote it; its own
    methods are called as they are (what they return is what the driver awaits)."""

    __slots__ = ("inner", "open_session", "on_message", "behavior_override", "history_converter", "description",
                 "_close", "_started")

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._started = False
        self.behavior_override: Optional[str] = getattr(inner, "behavior_override", None)
        self.history_converter: Any = getattr(inner, "history_converter", None)
        self.description: str = getattr(inner, "description", "") or ""
        own_open = getattr(inner, "open_session", None)
        contract_open = getattr(inner, "aopen_session", None)
        started = getattr(inner, "on_started", None)
        if callable(own_open):
            self.open_session: OpenSession = own_open
        elif callable(contract_open):
            def keyword_open(ctx: AgentContext, emit: Emit) -> Awaitable[Any]:
                answer: Awaitable[Any] = contract_open(task=ctx.task or "", metadata=handshake_metadata(ctx), emit_event=emit)
                return answer
            self.open_session = keyword_open
        elif callable(started):
            async def default_open(ctx: AgentContext, emit: Emit) -> Any:
                return {}  # the guide's hooks declare nothing: the default capabilities
            self.open_session = default_open
        else:
            async def no_open(ctx: AgentContext, emit: Emit) -> Any:
                raise AdapterError(f"agent {ctx.agent_id!r} has neither open_session nor aopen_session "
                                   "(nor the integration guide's on_started / on_message hooks)")
            self.open_session = no_open
        if callable(started):
            self.open_session = self._starting(started, self.open_session)
        own_turn = getattr(inner, "on_message", None)
        if callable(own_turn) and hooked(own_turn):
            converter = self.history_converter

            def guide_turn(msg: Any, tools: SessionTools) -> Awaitable[None]:
                return run_hooked(own_turn, converter, msg, tools)
            self.on_message: OnMessage = guide_turn
        elif callable(own_turn):
            self.on_message = own_turn
        else:
            def phases(msg: Any, tools: SessionTools) -> Awaitable[None]:
                return run_phases(inner, msg, tools)
            self.on_message = phases
        self._close: Optional[Callable[[str], Awaitable[Any]]] = (getattr(inner, "close_session", None)
                                                                   or getattr(inner, "aclose_session", None))
        cleanup = getattr(inner, "on_cleanup", None)
        if self._close is None and callable(cleanup):
            async def guide_close(session_id: str) -> None:
                answer = cleanup(session_id)
                if inspect.isawaitable(answer):
                    await answer
            self._close = guide_close

    def _starting(self, started: Callable[[str, str], Any], then: OpenSession) -> OpenSession:
        """The guide's `on_started(agent_name, agent_description)`: called once per agent object
        (across runs: `_STARTED`), before its first handshake; it failing fails that handshake,
        and the next one calls it again."""
        user = getattr(self.inner, "inner", self.inner)  # under an agents-file wrapper (`Behaved`): the agent

        def done() -> bool:
            try:
                return self._started or user in _STARTED
            except TypeError:  # not weakly referable or not hashable: once per run
                return self._started

        def mark(value: bool) -> None:
            self._started = value
            try:
                if value:
                    _STARTED[user] = True
                else:
                    _STARTED.pop(user, None)
            except TypeError:
                pass

        own: dict[str, asyncio.Future[None]] = {}  # (an agent not weakly referable: this wrapper's own)

        def in_progress() -> "MutableMapping[Any, asyncio.Future[None]]":
            try:
                _STARTING.get(user)
            except TypeError:
                return own
            return _STARTING

        async def open_after_start(ctx: AgentContext, emit: Emit) -> Any:
            calls = in_progress()
            key = user if calls is _STARTING else "self"
            while key in calls:  # another handshake's call: wait for it (its failure is its own; then call again)
                await asyncio.shield(calls[key])
            if not done():
                mark(True)  # before awaiting: a concurrent first handshake does not call it again
                calls[key] = asyncio.get_running_loop().create_future()
                try:
                    answer = started(ctx.agent_id, ctx.description)
                    if inspect.isawaitable(answer):
                        await answer
                except BaseException:
                    mark(False)
                    raise
                finally:
                    calls.pop(key).set_result(None)
            return await then(ctx, emit)
        return open_after_start

    async def close_session(self, session_id: str) -> None:
        if self._close is None:
            raise AdapterError("the agent has no close_session")
        await self._close(session_id)


def as_agent(obj: Any) -> Agent:
    """`obj` in the canonical shape (itself when it is a `DrivenAgent` already)."""
    return obj if isinstance(obj, DrivenAgent) else DrivenAgent(obj)
