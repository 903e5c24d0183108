"""`AnthropicMessagesAgent`: a model behind an Anthropic-compatible Messages API
(`POST {base_url}/v1/messages`), through the official `anthropic` client
(the `anthropic` extra).

Everything but the wire format is the OpenAI agent's (it subclasses `OpenAIChatAgent`): the
options, the handshake (`control_loop: self`, `telemetry_stream: true`; the API key from
`api_key_env`, default `ANTHROPIC_API_KEY`), the system prompt (`model_prompt`), the tool set
and its errors (`model_tools`), the round cap `max_rounds`, the whole-turn deadline
`turn_timeout`, the telemetry events. The wire format:
- the system prompt is the request's `system`; the transcript becomes alternating `user` /
  `assistant` messages (consecutive messages of one role are joined by a blank line; the
  list always starts and ends with a `user` message); `max_tokens` is required by the API;
- the tools are `{"name", "description", "input_schema"}`;
- a reply's `tool_use` blocks are executed; the reply goes back as an `assistant` message with
  its blocks, followed by one `user` message of `tool_result` blocks (`is_error: true` and the
  error text for a bad call), and the loop goes on as for the OpenAI agent.
"""

from __future__ import annotations

from typing import Any, Optional

from turnflow.runtime.agents.contract import SessionTools, ToolError
from turnflow.runtime.agents.model_prompt import BEGIN, chat_turns
from turnflow.runtime.agents.model_tools import ModelTools, is_empty
from turnflow.runtime.agents.openai_chat import DEFAULT_MAX_ROUNDS, DEFAULT_RETRY_SECONDS, OpenAIChatAgent
from turnflow.runtime.errors import AdapterError

DEFAULT_MAX_TOKENS = 1024
YOUR_TURN = "(it is your turn)"


class AnthropicMessagesAgent(OpenAIChatAgent):
    def __init__(self, agent_id: str, model: str, *, base_url: Optional[str] = None,
                 api_key_env: str = "ANTHROPIC_API_KEY", system: Optional[str] = None,
                 max_rounds: int = DEFAULT_MAX_ROUNDS, timeout: float = 60.0, max_retries: int = 2,
                 temperature: Optional[float] = None, client: Any = None, turn_timeout: Optional[float] = None,
                 session_tools: bool = True, max_tokens: int = DEFAULT_MAX_TOKENS,
                 retry_seconds: float = DEFAULT_RETRY_SECONDS) -> None:
        super().__init__(agent_id, model, base_url=base_url, api_key_env=api_key_env, system=system,
                         max_rounds=max_rounds, timeout=timeout, max_retries=max_retries, temperature=temperature,
                         client=client, turn_timeout=turn_timeout, session_tools=session_tools,
                         retry_seconds=retry_seconds)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise AdapterError(f"agent {agent_id!r}: `max_tokens` must be a positive integer, got {max_tokens!r}")
        self.max_tokens = max_tokens

    def _make_client(self) -> Any:
        return self._sdk_client("anthropic", "AsyncAnthropic")

    # -- the request ----------------------------------------------------------------------------
    def anthropic_messages(self, msg: list[dict[str, Any]], tools: SessionTools) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for role, text in chat_turns(msg, tools.agent_id):
            if out and out[-1]["role"] == role:
                out[-1]["content"] += "\n\n" + text
            else:
                out.append({"role": role, "content": text})
        if not out:
            out.append({"role": "user", "content": BEGIN})
        elif out[0]["role"] != "user":
            out.insert(0, {"role": "user", "content": BEGIN})
        if out[-1]["role"] != "user":
            out.append({"role": "user", "content": YOUR_TURN})
        return out

    async def _create(self, system: str, messages: list[dict[str, Any]], schemas: list[dict[str, Any]],
                      tools: Optional[SessionTools] = None) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                                  "messages": messages}
        if schemas:
            kwargs["tools"] = schemas
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        resp = await self._request(lambda: self.client.messages.create(**kwargs), tools)
        if not isinstance(getattr(resp, "content", None), list):
            raise AdapterError(f"agent {self.agent_id!r}: the model reply has no content")
        return resp

    # -- a turn ---------------------------------------------------------------------------------
    async def _turn(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        if self.client is None:
            raise AdapterError(f"agent {self.agent_id!r}: on_message before open_session")
        toolset: ModelTools = self.toolset(tools)
        system = self.system_prompt(tools, toolset)
        messages = self.anthropic_messages(msg, tools)
        schemas = toolset.schemas("anthropic")
        for n in range(1, self.max_rounds + 1):
            resp = await self._create(system, messages, schemas, tools)
            blocks = resp.content
            text = "\n".join(b.text for b in blocks if getattr(b, "type", None) == "text" and b.text)
            uses = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
            tools.emit_event({"event": "env_action", "reason": "model call",
                              "payload": {"round": n, "model": self.model, "tool_calls": len(uses),
                                          "finish_reason": getattr(resp, "stop_reason", None)}})
            if not uses:
                if not text and is_empty(tools):
                    raise AdapterError(f"agent {self.agent_id!r}: the model replied with neither text nor a tool call")
                if text:
                    tools.send_message(text)
                return
            sent: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            sent += [{"type": "tool_use", "id": u.id, "name": u.name, "input": u.input} for u in uses]
            messages.append({"role": "assistant", "content": sent})
            results, failed = self._call_tools(toolset, uses, tools, n)
            messages.append({"role": "user", "content": results})
            if not failed and tools.routed:
                if text:
                    tools.send_message(text)
                return
        raise AdapterError(f"agent {self.agent_id!r}: no final answer within max_rounds={self.max_rounds} model calls")

    @staticmethod
    def _call_tools(toolset: ModelTools, uses: list[Any], tools: SessionTools, n: int) -> tuple[list[dict[str, Any]], bool]:
        """The reply's `tool_use` blocks executed in order: their `tool_result` blocks, and whether a call failed."""
        results: list[dict[str, Any]] = []
        failed = False
        for u in uses:
            try:
                result = toolset.call(u.name, u.input)
                ok = True
            except ToolError as exc:
                result, ok, failed = f"error: {exc}", False, True
            tools.emit_event({"event": "tool_response", "reason": None if ok else result,
                              "payload": {"tool": u.name, "ok": ok, "result": result, "round": n}})
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": u.id, "content": result}
            if not ok:
                block["is_error"] = True
            results.append(block)
        return results, failed
