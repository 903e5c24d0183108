"""`AbsentAgent`: stands in for a participant the agents file gives no agent.

`turnflow run` needs no agent for a participant the run never hands the turn to (the support
flow's `tech` when triage only ever routes to billing, a participant no rule reaches). It joins
the session like any agent; if the turn does come to it, the turn fails and the session closes
`agent_error`, saying which file lacks the agent."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Iterable

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools
from turnflow.runtime.errors import AdapterError


class AbsentAgent:
    def __init__(self, agent_id: str, agents_file: str) -> None:
        self.agent_id = agent_id
        self.agents_file = agents_file

    async def open_session(self, ctx: AgentContext, emit: Callable[[dict[str, Any]], Awaitable[bool]]) -> Capabilities:
        return Capabilities(control_loop="hub", supports_stepwise=True, telemetry_stream=False)

    async def on_message(self, msg: list[dict[str, Any]], tools: SessionTools) -> None:
        raise AdapterError(f"got the turn but {self.agents_file} has no agent for it "
                           f"(add one under `agents:` as {self.agent_id!r})")

    async def close_session(self, session_id: str) -> None:
        return None


def with_absent(participants: Iterable[str], agents: dict[str, Any], agents_file: str) -> tuple[dict[str, Any], list[str]]:
    """`agents` with an `AbsentAgent` for every participant it lacks, and those participants' names."""
    missing = [p for p in participants if p not in agents]
    return {**agents, **{p: AbsentAgent(p, agents_file) for p in missing}}, missing


def absent_note(missing: list[str], agents_file: str) -> str:
    """What `turnflow run` says on stderr before a run with absent agents."""
    names = ", ".join(missing)
    them = "it gets" if len(missing) == 1 else "one of them gets"
    return (f"note: {agents_file} has no agent for {names}; the session closes agent_error if {them} the turn")
