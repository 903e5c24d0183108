"""Agent adapters: the participant side of a session (docs/agents.md).

The model agents (`OpenAIChatAgent`, `AnthropicMessagesAgent`) and the framework agents
(`LangGraphAgent`, `AG2Agent`, `AutoGenAgent`, each in `turnflow/frameworks/<name>/participant.py`)
load on first use of their name: a run whose agents
file names only scripted or python agents never imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnflow.runtime.agents.contract import (AdapterCapabilities, AdapterEventEmitter, AdapterTelemetryEvent,
                                              AgentContext, Capabilities, FakeSessionTools, SessionTools, ToolError,
                                              telemetry_problem)
from turnflow.runtime.agents.function import FunctionAgent
from turnflow.runtime.agents.hooks import PlatformMessage, SimpleAdapter
from turnflow.runtime.agents.scripted import ScriptedAgent

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.frameworks.ag2.participant import AG2Agent
    from turnflow.runtime.agents.anthropic_messages import AnthropicMessagesAgent
    from turnflow.frameworks.autogen.participant import AutoGenAgent
    from turnflow.frameworks.langgraph.participant import LangGraphAgent
    from turnflow.runtime.agents.openai_chat import OpenAIChatAgent

#: the lazily loaded names → their modules (the model and framework agents)
_MODEL_AGENTS = {"AnthropicMessagesAgent": "turnflow.runtime.agents.anthropic_messages",
                 "OpenAIChatAgent": "turnflow.runtime.agents.openai_chat",
                 "LangGraphAgent": "turnflow.frameworks.langgraph.participant",
                 "AG2Agent": "turnflow.frameworks.ag2.participant",
                 "AutoGenAgent": "turnflow.frameworks.autogen.participant"}

__all__ = ["AG2Agent", "AdapterCapabilities", "AdapterEventEmitter", "AdapterTelemetryEvent", "AgentContext",
           "AnthropicMessagesAgent", "AutoGenAgent", "Capabilities", "FakeSessionTools", "FunctionAgent",
           "LangGraphAgent", "OpenAIChatAgent", "PlatformMessage", "ScriptedAgent", "SessionTools", "SimpleAdapter",
           "ToolError", "telemetry_problem"]


def __getattr__(name: str) -> Any:
    if name in _MODEL_AGENTS:
        import importlib

        value = getattr(importlib.import_module(_MODEL_AGENTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'turnflow.runtime.agents' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
