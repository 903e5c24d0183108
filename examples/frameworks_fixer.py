"""fixer of examples/frameworks.flow: an AG2 1.2.1 agent on a scripted model
(see examples/frameworks_agents.yaml). One module per framework: each agent imports only its own
framework, so a missing package is named with the agent that needs it."""

from __future__ import annotations

from typing import Any

# -- fixer: an AG2 1.2.1 agent -----------------------------------------------------------------
from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.testing import TestConfig


def fixer(tools: list, ctx: Any) -> Agent:
    model = TestConfig(
        ToolCallEvent("set_context", arguments='{"key": "patched", "value": true}'),
        ToolCallEvent("request_review", arguments='{"reason": "patch applied"}'),
        "Freed 40 GB on db-1 and rotated its logs.",
    )
    return Agent("fixer", "You fix production incidents.", config=model, tools=tools)
