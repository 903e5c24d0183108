"""`FunctionAgent`: a Python callable takes the turn.

    def critic(msg, tools):                  # or `async def`
        if "LGTM" in msg[-1]["text"]:
            tools.execute_tool_call("approve")
        return "Looks fine to me"            # a string is sent as the round's text

The callable gets `(msg, tools)` (the transcript and the `SessionTools`). It may return
None (it used `tools` itself), a string (sent with `send_message`), or a scripted step
mapping (`{"say", "tool", "handoff", "finish", "set", "delete"}`).

A sync callable runs in a worker thread (daemon threads, reused from turn to turn), so the event loop stays
responsive while it works: the sweeper enforces expectations and TTL, Ctrl-C and SIGTERM are
handled. When the session no longer wants the turn (closed, expired, interrupted), the thread
is abandoned: its result is discarded, and Python cannot stop it early. An `async def`
callable runs on the event loop itself.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools
from turnflow.runtime.agents.scripted import apply_step, check_step
from turnflow.runtime.errors import AdapterError

Job = Callable[[], Callable[[], None]]  # runs in a worker thread; returns the hand-off to make once idle


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

    async def open_session(self, ctx: AgentContext, emit: Callable[[dict[str, Any]], Awaitable[bool]]) -> Capabilities:
        self.opened.add(ctx.session_id)
        return self.capabilities

    async def on_message(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        if inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(type(self.fn).__call__):
            result = self.fn(msg, tools)
        else:
            result = await in_thread(self.fn, msg, tools)
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


class _Workers:
    """Daemon threads reused from turn to turn: starting a thread per turn cost more CPU than a
    small agent's whole turn (and, beside the PostgreSQL committer thread, a GIL hand-off each).
    A thread whose job never returns (an abandoned turn) simply never comes back; the next job
    then starts a new thread, so a stuck agent cannot hold up another one."""

    MAX_IDLE = 32

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Job]] = []

    def submit(self, job: Job) -> None:
        """Run `job()` in a worker thread; it returns the hand-off to make once the thread is
        idle again (so the turn that follows can reuse it)."""
        with self._lock:
            q = self._idle.pop() if self._idle else None
        if q is None:
            q = queue.SimpleQueue()
            threading.Thread(target=self._run, args=(q,), daemon=True, name="turnflow-agent").start()
        q.put(job)

    def _run(self, q: queue.SimpleQueue[Job]) -> None:
        while True:
            hand_off = q.get()()
            with self._lock:
                keep = len(self._idle) < self.MAX_IDLE
                if keep:
                    self._idle.append(q)
            hand_off()
            if not keep:
                return


_WORKERS = _Workers()


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a daemon thread; the event loop keeps running meanwhile. Cancelling the
    awaiting task abandons the thread (its result is dropped); a daemon thread never keeps the
    process alive at exit."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)

    def work() -> Callable[[], None]:
        try:
            r = fn(*args)
            ok, value = True, r
        except Exception as exc:  # handed to the awaiting task, with its traceback
            ok, value = False, exc
        except BaseException as exc:  # SystemExit and friends from an agent: a failed turn, not an exit
            ok, value = False, RuntimeError(f"the agent raised {type(exc).__name__}: {exc}")

        def hand_off() -> None:
            try:
                loop.call_soon_threadsafe(settle, ok, value)
            except RuntimeError:  # the loop closed while this thread ran: nobody waits any more
                pass

        return hand_off

    _WORKERS.submit(work)
    return await fut
