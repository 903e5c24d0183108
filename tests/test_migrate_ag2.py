"""Migrated flows compile to specs that validate and that AG2 1.2.1's own
WorkflowAdapter runs: a classic StateFlow group chat and an AutoGen Swarm,
driven round by round, follow their source's transitions."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

import turnflow
from turnflow.migrate import migrate

pytest.importorskip("ag2.network")

ROOT = Path(__file__).parent / "fixtures" / "migrate"
CASES = sorted(p for p in ROOT.glob("*/*") if p.suffix in (".py", ".json") and p.parent.name != "errors")


def _migrated_specs(path: Path) -> list[dict]:
    return turnflow.compile(migrate(path.read_text(encoding="utf-8"), path.name).text)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_migrated_specs_validate_and_load_in_ag2(case: Path):
    from ag2.network import TransitionGraph

    from turnflow.interop.ag2 import register_extensions
    from turnflow.schemas import validate_spec

    register_extensions()
    for spec in _migrated_specs(case):
        validate_spec(spec)
        graph = TransitionGraph.loads(spec["knobs"]["graph"])
        assert graph.to_dict() == spec["knobs"]["graph"]


class Session:
    """One AG2 workflow channel driven by hand (the hub's adapter calls, no network)."""

    def __init__(self, spec: dict):
        from ag2.network import ChannelMetadata, ChannelState, Participant, ParticipantRole, WorkflowAdapter

        from turnflow.interop.ag2 import register_extensions

        register_extensions()
        creator = next((p["agent_id"] for p in spec["participants"] if p["role"] == "initiator"),
                       spec["knobs"]["graph"]["initial_speaker"])
        self.adapter = WorkflowAdapter()
        self.meta = ChannelMetadata(
            channel_id="ch", manifest=self.adapter.manifest, creator_id=creator,
            participants=[Participant(p["agent_id"], ParticipantRole.INITIATOR if p["agent_id"] == creator
                                      else ParticipantRole.PARTICIPANT, p["order"]) for p in spec["participants"]],
            state=ChannelState.ACTIVE, created_at="2026-01-01T00:00:00+00:00", knobs=spec["knobs"])
        self.adapter.validate_create(self.meta)
        self.state = self.adapter.initial_state(self.meta)
        self.n = 0
        self.closed: Optional[str] = None

    def say(self, sender: str, body: str, tool: Optional[str] = None) -> None:
        from ag2.network import EV_PACKET, ChannelState, Envelope

        assert self.expected() == sender
        self.n += 1
        data = {"body": body, **({"routing": {"kind": "handoff", "tool": tool}} if tool else {})}
        env = Envelope(channel_id="ch", sender_id=sender, audience=None, event_type=EV_PACKET, event_data=data,
                       envelope_id=f"e{self.n}")
        self.adapter.validate_send(self.meta, env, self.state)
        self.state = self.adapter.fold(env, self.state)
        result = self.adapter.on_accepted(self.meta, env, self.state)
        if result.next_state == ChannelState.CLOSED:
            self.closed = result.auto_close_reason

    def expected(self) -> Optional[str]:
        nxt = self.adapter.expected_next(self.meta, self.state)
        return nxt.agent_id if nxt is not None else None


def test_stateflow_runs_on_ag2_like_its_selection_function():
    (spec,) = _migrated_specs(ROOT / "classic" / "stateflow.py")
    s = Session(spec)
    s.say("Init", "Topic: LLM applications papers from last week.")
    s.say("Retrieve_Action_1", "```python\nprint(search_arxiv())\n```")
    s.say("Retrieve_Action_2", "exitcode: 1 (execution failed)")  # failed: back to the coder
    s.say("Retrieve_Action_1", "```python\nprint(search_arxiv(retry=True))\n```")
    s.say("Retrieve_Action_2", "exitcode: 0 (execution succeeded)")
    assert s.expected() == "Research_Action_1"
    s.say("Research_Action_1", "| Domain | Papers |")
    assert s.closed == "custom_selection"


def test_swarm_runs_on_ag2_with_its_handoffs():
    (spec,) = _migrated_specs(ROOT / "autogen" / "swarm_handoff_to_user.json")
    s = Session(spec)
    s.say("travel_agent", "Let me get the refund specialist.", tool="transfer_to_flights_refunder")
    s.say("flights_refunder", "Which flight?")  # no handoff: the same agent again (Swarm)
    s.say("flights_refunder", "Refund issued for ABC123.", tool="transfer_to_travel_agent")
    s.say("travel_agent", "Anything else?", tool="transfer_to_user")  # HandoffTermination(target="user")
    assert s.closed == "handoff_to_user"


def test_graphflow_loop_runs_on_ag2_until_approved():
    (spec,) = _migrated_specs(ROOT / "autogen" / "graphflow_review_loop.json")
    s = Session(spec)
    s.say("generator", "Ideas: solar roofs, wind co-ops.")
    s.say("reviewer", "REVISE: add costs.")
    s.say("generator", "Ideas with costs.")
    s.say("reviewer", "Looks good. APPROVE")
    s.say("summarizer", "Summary.")
    assert s.closed == "graph_complete"
