"""`ScriptedAgent`: deterministic steps, one step per turn (docs/agents.md).

A step is a mapping with any of: `say` (body text), `tool` (a routing tool called this
round), `handoff` (a participant: a dynamic handoff), `finish` (a close reason), `set`
(context updates), `delete` (context keys). It raises `AdapterError` when its script runs out.
A step that fails (say, an unknown tool) is not used up, so the hub's retry replays it.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools
from turnflow.runtime.errors import AdapterError, brief

STEP_KEYS = ("say", "tool", "handoff", "finish", "set", "delete")


def check_step(step: Any, where: str) -> dict[str, Any]:
    if not isinstance(step, dict) or not step:
        raise AdapterError(f"{where}: a step must be a non-empty mapping with keys {', '.join(STEP_KEYS)}, got {brief(step)}")
    unknown = [k for k in step if k not in STEP_KEYS]
    if unknown:
        raise AdapterError(f"{where}: unknown step key {brief(unknown[0])} (known: {', '.join(STEP_KEYS)})")
    for k in ("say", "tool", "handoff", "finish"):
        if k in step and not isinstance(step[k], str):
            raise AdapterError(f"{where}: `{k}` must be a string, got {brief(step[k])}")
    if "set" in step and not (isinstance(step["set"], dict) and all(isinstance(k, str) for k in step["set"])):
        raise AdapterError(f"{where}: `set` must be a mapping of names to values, got {brief(step['set'])}")
    if "delete" in step:
        d = step["delete"]
        if isinstance(d, str):
            d = [d]
        if not (isinstance(d, list) and all(isinstance(k, str) for k in d)):
            raise AdapterError(f"{where}: `delete` must be a name or a list of names, got {brief(step['delete'])}")
    return step


def apply_step(step: dict[str, Any], tools: SessionTools) -> None:
    """One scripted step onto a round (also what a FunctionAgent's returned mapping means)."""
    if "say" in step:
        tools.send_message(step["say"])
    if "tool" in step:
        tools.execute_tool_call(step["tool"])
    if "handoff" in step:
        tools.handoff(step["handoff"])
    for k, v in (step.get("set") or {}).items():
        tools.set_context(k, v)
    dels = step.get("delete") or []
    for k in [dels] if isinstance(dels, str) else dels:
        tools.delete_context(k)
    if "finish" in step:
        tools.finish(step["finish"])


class ScriptedAgent:
    def __init__(self, agent_id: str, steps: object) -> None:
        # `steps` is the unchecked YAML value: anything but a non-empty list is an error
        if not isinstance(steps, list) or not steps:
            raise AdapterError(f"agent {brief(agent_id)}: `steps` must be a non-empty list")
        self.agent_id = agent_id
        self.steps = [check_step(s, f"agent {brief(agent_id)} step {i + 1}") for i, s in enumerate(steps)]
        self.position = 0
        self.opened: set[str] = set()

    async def open_session(self, ctx: AgentContext, emit: Callable[[dict[str, Any]], Awaitable[bool]]) -> Capabilities:
        self.opened.add(ctx.session_id)
        return Capabilities(control_loop="hub", supports_stepwise=True, telemetry_stream=False)

    async def on_message(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        if self.position >= len(self.steps):
            raise AdapterError(f"agent {brief(self.agent_id)}: its script ran out after {len(self.steps)} "
                               f"step{'s' if len(self.steps) != 1 else ''}")
        apply_step(self.steps[self.position], tools)
        self.position += 1  # only a step that went through is used up: a retried turn replays it

    async def close_session(self, session_id: str) -> None:
        self.opened.discard(session_id)
