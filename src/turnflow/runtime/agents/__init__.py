"""Agent adapters: the participant side of a session."""

from turnflow.runtime.agents.base import AgentContext, Capabilities, SessionTools
from turnflow.runtime.agents.scripted import ScriptedAgent

__all__ = ["AgentContext", "Capabilities", "SessionTools", "ScriptedAgent"]
