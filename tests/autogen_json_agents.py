"""Scripted AgentChat agents as components, for tests/test_target_autogen_json.py: the emitted
team JSON is bound by replacing each participant with `component(placeholder, run_id)` (the
placeholder's name, description and handoffs kept) and loaded with `Team.load_component`, as a
user binds their own agents (docs/targets.md).

An agent asks the run's `take(name)` (registered under `run_id`) for its step (the target
harness's step: `say`, maybe a `tool`) and answers as AgentChat's AssistantAgent does: a tool
that is one of its `Handoff`s gives the tool call, its result and a `HandoffMessage` to the
handoff's target (whose content is the handoff's message); anything else, a `TextMessage`."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Optional, Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import (BaseChatMessage, HandoffMessage, TextMessage, ToolCallExecutionEvent,
                                        ToolCallRequestEvent)
from autogen_core import CancellationToken, Component, FunctionCall
from autogen_core.models import FunctionExecutionResult
from pydantic import BaseModel

_RUNS: dict[int, Callable[[str], dict[str, Any]]] = {}
_ids = itertools.count()


class ScriptEnd(Exception):
    """The plan ran out (the hub closes with `script_end`)."""


def register(take: Callable[[str], dict[str, Any]]) -> int:
    run_id = next(_ids)
    _RUNS[run_id] = take
    return run_id


def forget(run_id: int) -> None:
    _RUNS.pop(run_id, None)


class ScriptedConfig(BaseModel):
    name: str
    description: str = ""
    handoffs: list[dict[str, Any]] = []
    run_id: int


class ScriptedAgent(BaseChatAgent, Component[ScriptedConfig]):
    component_config_schema = ScriptedConfig
    component_provider_override = "autogen_json_agents.ScriptedAgent"

    def __init__(self, name: str, description: str, handoffs: list[dict[str, Any]], run_id: int) -> None:
        super().__init__(name, description or name)
        self._handoffs = handoffs
        self._run_id = run_id

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage, HandoffMessage)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        s = _RUNS[self._run_id](self.name)
        if s.get("finish") == "script_end":
            raise ScriptEnd
        handoff: Optional[dict[str, Any]] = next((h for h in self._handoffs if h["name"] == s.get("tool")), None)
        if handoff is None:
            return Response(chat_message=TextMessage(source=self.name, content=s.get("say", "")))
        call = FunctionCall(id="1", name=handoff["name"], arguments="{}")
        done = FunctionExecutionResult(content=handoff["message"], call_id="1", name=handoff["name"], is_error=False)
        return Response(chat_message=HandoffMessage(source=self.name, target=handoff["target"],
                                                    content=handoff["message"]),
                        inner_messages=[ToolCallRequestEvent(source=self.name, content=[call]),
                                        ToolCallExecutionEvent(source=self.name, content=[done])])

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass

    def _to_config(self) -> ScriptedConfig:
        return ScriptedConfig(name=self.name, description=self.description, handoffs=self._handoffs,
                              run_id=self._run_id)

    @classmethod
    def _from_config(cls, config: ScriptedConfig) -> "ScriptedAgent":
        return cls(config.name, config.description, config.handoffs, config.run_id)


def component(placeholder: dict[str, Any], run_id: int) -> dict[str, Any]:
    """A scripted agent's component in place of the emitted `placeholder` (its name, description
    and handoffs kept)."""
    cfg = placeholder["config"]
    agent = ScriptedAgent(cfg["name"], cfg.get("description") or "", list(cfg.get("handoffs") or []), run_id)
    return agent.dump_component().model_dump()
