"""`FunctionAgent`: a Python callable takes the turn.

    def critic(msg, tools):                  # or `async def`
        if "LGTM" in msg[-1]["text"]:
            tools.execute_tool_call("approve")
        return "Looks fine to me"            # a string is sent as the round's text

The callable gets `(msg, tools)` (the transcript and the `SessionTools`). It may return
None (it used `tools` itself), a string (sent with `send_message`), or a scripted step
mapping (`{"say", "tool", "handoff", "finish", "set", "delete"}`). A sync callable runs on
the hub's event-loop thread: use an `async def` for anything that waits on I/O.
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.agents.base import AgentContext, Capabilities, SessionTools
from turnflow.runtime.agents.scripted import apply_step, check_step
from turnflow.runtime.errors import AdapterError


class FunctionAgent:
    def __init__(self, fn: Callable[..., Any], agent_id: Optional[str] = None,
                 capabilities: Optional[Capabilities] = None) -> None:
        if not callable(fn):
            raise AdapterError(f"FunctionAgent needs a callable, got {fn!r}")
        self.fn = fn
        self.agent_id = agent_id or getattr(fn, "__name__", "function")
        self.capabilities = capabilities or Capabilities(control_loop="hub", supports_stepwise=True,
                                                         telemetry_stream=False)
        self.opened: set[str] = set()

    async def open_session(self, ctx: AgentContext, emit: Callable[[dict], Awaitable[bool]]) -> Capabilities:
        self.opened.add(ctx.session_id)
        return self.capabilities

    async def on_message(self, msg: list[dict], tools: SessionTools) -> None:
        result = self.fn(msg, tools)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return
        if isinstance(result, str):
            if result:
                tools.send_message(result)
            return
        if isinstance(result, dict):
            apply_step(check_step(result, f"agent {self.agent_id!r}: returned step"), tools)
            return
        raise AdapterError(f"agent {self.agent_id!r}: the function must return None, a string or a step "
                           f"mapping, got {type(result).__name__}")

    async def close_session(self, session_id: str) -> None:
        self.opened.discard(session_id)
