"""`OpenAIChatAgent`: a model behind any OpenAI-compatible chat-completions endpoint, through
the official `openai` client (the `openai` extra).

One turn is an adapter-managed tool loop of at most `max_rounds` model calls:
- the request carries the system prompt (`model_prompt`: the `system` text, the session, this
  participant's description, the participants, the task, the context variables), the
  transcript (this agent's own messages as `assistant`, everyone else's as `user`, named) and
  the model tool set (`model_tools.ModelTools`: the flow's routing tools this participant
  owns, `set_context`, `delete_context`, `finish`, `handoff` where the session allows them);
- a reply without tool calls ends the turn: its text is the round's body;
- tool calls are executed by the tool set; a bad call (unknown tool, malformed or mistyped
  arguments, a participant that is not a choice, a second routing decision) is answered to the
  model as the tool's result (`error: ...`) and the loop goes on; once every call of a reply
  succeeded and one of them routed the round, the turn ends (the reply's text, if any, is the
  body);
- reaching `max_rounds` without an answer fails the turn;
- an endpoint that is unavailable (429, 408, 409, 5xx, timeouts, connections refused or dropped:
  `errors.endpoint_transient`) is waited out: the same call is tried again, after the wait the
  server asks for (`retry-after`) or 0.5, 1, 2 ... 8 s, for up to `retry_seconds` (60) from its
  first failure and within `turn_timeout`; each wait is a `progress` telemetry event. Longer, the
  turn fails with `EndpointUnavailable` (how long it waited; a batch stops without failing the
  task). Retries inside the client (`max_retries`, the client's) come first;
- other infrastructure errors (a refusal such as 401 or 400, a reply that is not JSON or has no
  choices) fail the turn at once (`AdapterError`); the session closes with `agent_error`.
Each model call is logged as an `env_action` telemetry event, each tool result as a
`tool_response` event.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import math
import os
import random
import time
from typing import Any, Awaitable, Callable, Optional

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools, ToolError
from turnflow.runtime.agents.model_prompt import BEGIN, chat_turns, system_prompt as model_system_prompt
from turnflow.runtime.agents.model_tools import ModelTools, is_empty
from turnflow.runtime.agents.endpoint import endpoint
from turnflow.masking import mask
from turnflow.runtime.errors import (AdapterError, EndpointUnavailable, brief, endpoint_failure, endpoint_transient,
                                     mask_secrets, retry_after)

DEFAULT_MAX_ROUNDS = 4
DEFAULT_RETRY_SECONDS = 60.0
FIRST_WAIT, LONGEST_WAIT = 0.5, 8.0  # between two tries of a call the endpoint did not answer
# the failure the current task's model call is waiting out (per task: one agent may serve several sessions)
_OUTAGE: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("turnflow_model_outage", default=None)


def check_retry_seconds(agent_id: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise AdapterError(f"agent {brief(agent_id)}: `retry_seconds` must be a number of seconds, 0 or more, "
                           f"got {brief(value)}")
    return float(value)


class OpenAIChatAgent:
    def __init__(self, agent_id: str, model: str, *, base_url: Optional[str] = None,
                 api_key_env: str = "OPENAI_API_KEY", system: Optional[str] = None,
                 max_rounds: int = DEFAULT_MAX_ROUNDS, timeout: float = 60.0, max_retries: int = 2,
                 temperature: Optional[float] = None, client: Any = None,
                 turn_timeout: Optional[float] = None, session_tools: bool = True,
                 retry_seconds: float = DEFAULT_RETRY_SECONDS) -> None:
        if not isinstance(model, str) or not model:
            raise AdapterError(f"agent {brief(agent_id)}: `model` must be a non-empty string, got {brief(model)}")
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
            raise AdapterError(f"agent {brief(agent_id)}: `max_rounds` must be a positive integer, got {brief(max_rounds)}")
        if not isinstance(api_key_env, str) or not api_key_env:
            raise AdapterError(f"agent {brief(agent_id)}: `api_key_env` must name an environment variable")
        if mask(api_key_env) != api_key_env:  # the usual slip: the key itself pasted in
            raise AdapterError(f"agent {brief(agent_id)}: `api_key_env` holds what looks like an API key (not shown); "
                               "it must name the environment variable that holds the key, e.g. OPENAI_API_KEY")
        if base_url is not None and not isinstance(base_url, str):
            raise AdapterError(f"agent {brief(agent_id)}: `base_url` must be a string, got {brief(base_url)}")
        if system is not None and not isinstance(system, str):
            raise AdapterError(f"agent {brief(agent_id)}: `system` must be a string, got {brief(system)}")
        if not isinstance(session_tools, bool):
            raise AdapterError(f"agent {brief(agent_id)}: `session_tools` must be true or false, "
                               f"got {brief(session_tools)}")
        self.session_tools = session_tools
        self.agent_id = agent_id
        self.model = model
        self.endpoint = endpoint(base_url)  # the URL without its query string; what to mask (agents/endpoint.py)
        self.base_url = self.endpoint.url
        self.api_key_env = api_key_env
        self.system = system
        self.max_rounds = max_rounds
        self.timeout = timeout
        # the whole turn (every model call, the client's own retries, every tool call) must end within this
        self.turn_timeout = float(turn_timeout) if turn_timeout is not None else timeout * max_rounds
        self.max_retries = max_retries
        # how long one model call is tried again while the endpoint is unavailable (0: never)
        self.retry_seconds = check_retry_seconds(agent_id, retry_seconds)
        self.temperature = temperature
        self.client = client
        self._own_client = client is None
        self.contexts: dict[str, AgentContext] = {}

    # -- handshake ------------------------------------------------------------------------------
    def _make_client(self) -> Any:
        return self._sdk_client("openai", "AsyncOpenAI")

    def _sdk_client(self, package: str, client_class: str) -> Any:
        """`package.client_class(...)` (the SDK of kind `package`, an optional extra of the same
        name) with this agent's API key, endpoint, timeout and retries."""
        try:
            sdk = importlib.import_module(package)
        except ImportError:
            from turnflow.extras import pip_install

            raise AdapterError(f"agent {brief(self.agent_id)}: kind {package} needs the `{package}` package "
                               f"({pip_install(package)})") from None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise AdapterError(f"agent {brief(self.agent_id)}: environment variable {self.api_key_env} is not set "
                               "(it holds the API key; any non-empty value for a local server)")
        try:
            return getattr(sdk, client_class)(api_key=key, base_url=self.base_url, timeout=self.timeout,
                                              max_retries=self.max_retries, default_query=self.endpoint.query or None)
        except Exception as exc:  # e.g. a URL the client refuses: its message may quote the URL
            detail = mask_secrets(str(exc), (self.api_key_env,), self.endpoint.secrets)
            raise AdapterError(f"agent {brief(self.agent_id)}: cannot make the {package} client: "
                               f"{type(exc).__name__}: {detail[:500]}") from None

    async def open_session(self, ctx: AgentContext, emit: Callable[[dict[str, Any]], Awaitable[bool]]) -> Capabilities:
        if self.client is None:
            self.client = self._make_client()
        self.contexts[ctx.session_id] = ctx
        return Capabilities(control_loop="self", supports_stepwise=True, telemetry_stream=True)

    async def close_session(self, session_id: str) -> None:
        self.contexts.pop(session_id, None)
        if not self.contexts and self._own_client and self.client is not None:
            client, self.client = self.client, None
            try:
                await client.close()
            except Exception:  # never raises
                pass

    # -- a turn ---------------------------------------------------------------------------------
    def context_for(self, tools: SessionTools) -> Optional[AgentContext]:
        """The handshake context of the session this turn belongs to (by `tools.session_id`;
        the only open session when the tools do not say)."""
        ctx = self.contexts.get(tools.session_id) if tools.session_id is not None else None
        if ctx is None and len(self.contexts) == 1:
            ctx = next(iter(self.contexts.values()))
        return ctx

    def toolset(self, tools: SessionTools) -> ModelTools:
        return ModelTools(tools, self.context_for(tools), self.session_tools, platform=self.session_tools)

    def system_prompt(self, tools: SessionTools, toolset: Optional[ModelTools] = None) -> str:
        toolset = toolset or self.toolset(tools)
        return model_system_prompt(tools.agent_id, self.system, toolset.ctx, toolset, tools.get_participants())

    def messages_for(self, msg: list[dict[str, Any]], tools: SessionTools,
                     toolset: Optional[ModelTools] = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt(tools, toolset)}]
        out += [{"role": role, "content": text} for role, text in chat_turns(msg, tools.agent_id)]
        if len(out) == 1:
            out.append({"role": "user", "content": BEGIN})
        return out

    async def _request(self, make: Callable[[], Awaitable[Any]], tools: Optional[SessionTools] = None) -> Any:
        """`await make()`, tried again while the endpoint is unavailable (`endpoint_transient`), for
        up to `retry_seconds` from the first failure (monotonic time: a wall-clock step neither
        shortens nor lengthens it); any other failure, or the last one, as an `AdapterError`."""
        deadline: Optional[float] = None
        wait, attempt = FIRST_WAIT, 0
        while True:  # _OUTAGE: set while a wait is on, read by on_message if the turn is cancelled then
            try:
                result = await make()
                _OUTAGE.set(None)
                return result
            except Exception as exc:  # openai.APIError and friends, httpx errors: infrastructure
                _OUTAGE.set(None)
                failure = endpoint_failure(self.agent_id, exc, self.api_key_env, self.endpoint.secrets)
                if not endpoint_transient(exc):
                    raise failure from None
                now = time.monotonic()
                deadline = now + self.retry_seconds if deadline is None else deadline
                if now >= deadline:
                    raise EndpointUnavailable(f"{failure} (the endpoint was unavailable for {self.retry_seconds:g} s, "
                                              "the agent's retry_seconds)") from None
                attempt += 1
                pause = min(retry_after(exc) or wait * random.uniform(0.8, 1.0), deadline - now)
                wait = min(wait * 2, LONGEST_WAIT)
                if tools is not None:
                    tools.emit_event({"event": "progress", "reason": "model endpoint unavailable",
                                      "payload": {"attempt": attempt, "error": str(failure)[-300:],
                                                  "retry_in": round(pause, 3)}})
                _OUTAGE.set(str(failure))
            await asyncio.sleep(pause)

    async def _call(self, messages: list[dict[str, Any]], schemas: list[dict[str, Any]],
                    tools: Optional[SessionTools] = None) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if schemas:
            kwargs["tools"] = schemas
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        resp = await self._request(lambda: self.client.chat.completions.create(**kwargs), tools)
        choices = getattr(resp, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise AdapterError(f"agent {brief(self.agent_id)}: the model reply has no choices")
        return choices[0]

    async def on_message(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        outage: list[str] = []
        _OUTAGE.set(None)  # (a turn cancelled earlier in this task may have left its wait's failure)
        try:
            await asyncio.wait_for(self._turn_watched(msg, tools, outage), self.turn_timeout)
        except asyncio.TimeoutError:
            if outage:  # the turn ran out while a call was waiting for the endpoint: an outage
                raise EndpointUnavailable(f"{outage[0]} (the endpoint was unavailable when the turn reached "
                                          f"turn_timeout={self.turn_timeout:g} s)") from None
            raise AdapterError(f"agent {self.agent_id!r}: the turn took longer than turn_timeout="
                               f"{self.turn_timeout:g} s") from None

    async def _turn_watched(self, msg: list[dict[str, Any]], tools: SessionTools, outage: list[str]) -> None:
        """`_turn`, noting in `outage` the failure a call was waiting out when it was cancelled."""
        try:
            await self._turn(msg, tools)
        except asyncio.CancelledError:
            waiting = _OUTAGE.get()
            if waiting is not None:
                outage.append(waiting)
            raise

    async def _turn(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        if self.client is None:
            raise AdapterError(f"agent {self.agent_id!r}: on_message before open_session")
        toolset = self.toolset(tools)
        messages = self.messages_for(msg, tools, toolset)
        schemas = toolset.schemas("openai")
        for n in range(1, self.max_rounds + 1):
            choice = await self._call(messages, schemas, tools)
            m = choice.message
            calls = list(getattr(m, "tool_calls", None) or [])
            content = m.content if isinstance(getattr(m, "content", None), str) else ""
            tools.emit_event({"event": "env_action", "reason": "model call",
                              "payload": {"round": n, "model": self.model, "tool_calls": len(calls),
                                          "finish_reason": getattr(choice, "finish_reason", None)}})
            if not calls:
                if not content and is_empty(tools):
                    raise AdapterError(f"agent {self.agent_id!r}: the model replied with neither text nor a tool call")
                if content:
                    tools.send_message(content)
                return
            messages.append({"role": "assistant", "content": content or None,
                             "tool_calls": [{"id": c.id, "type": "function",
                                             "function": {"name": c.function.name,
                                                          "arguments": c.function.arguments or ""}}
                                            for c in calls]})
            failed = False
            for c in calls:
                name = c.function.name
                try:
                    result = toolset.call(name, c.function.arguments or "{}")
                    ok = True
                except ToolError as exc:
                    result, ok, failed = f"error: {exc}", False, True
                tools.emit_event({"event": "tool_response", "reason": None if ok else result,
                                  "payload": {"tool": name, "ok": ok, "result": result, "round": n}})
                messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
            if not failed and tools.routed:
                if content:
                    tools.send_message(content)
                return
        raise AdapterError(f"agent {brief(self.agent_id)}: no final answer within max_rounds={self.max_rounds} model calls")
