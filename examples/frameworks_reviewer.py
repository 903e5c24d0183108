"""reviewer of examples/frameworks.flow: an AutoGen AgentChat AssistantAgent on a replayed model client
(see examples/frameworks_agents.yaml). One module per framework: each agent imports only its own
framework, so a missing package is named with the agent that needs it."""

from __future__ import annotations

from typing import Any

# -- reviewer: an AutoGen AgentChat AssistantAgent ---------------------------------------------
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Handoff
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
         "structured_output": False}


def reviewer(tools: list, ctx: Any) -> AssistantAgent:
    client = ReplayChatCompletionClient([
        CreateResult(finish_reason="function_calls", usage=_USAGE, cached=False, thought="The patch looks right.",
                     content=[FunctionCall(id="r1", name="set_context", arguments='{"key": "approved", "value": true}')]),
        CreateResult(finish_reason="function_calls", usage=_USAGE, cached=False,
                     content=[FunctionCall(id="r2", name="report_back", arguments="{}")]),
    ], model_info=_INFO)
    session = [t for t in tools if t.name in ("set_context", "send_event")]  # report_back is a Handoff below
    return AssistantAgent("reviewer", model_client=client, tools=session, max_tool_iterations=4,
                          handoffs=[Handoff(target="planner", name="report_back", message="Approved.")],
                          system_message="You review fixes.")
