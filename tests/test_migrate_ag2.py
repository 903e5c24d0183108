"""Migrated flows compile to specs that validate and that AG2 1.2.1's own
WorkflowAdapter runs: a classic StateFlow group chat and an AutoGen Swarm,
driven round by round, follow their source's transitions."""

from __future__ import annotations

from pathlib import Path

import pytest

import turnflow
from turnflow.migrate import migrate
from ag2_session import Ag2Session, ag2_missing

pytestmark = pytest.mark.skipif(ag2_missing(), reason="ag2 is not installed (pip install -e '.[test]')")

ROOT = Path(__file__).parent / "fixtures" / "migrate"
CASES = sorted(p for p in ROOT.glob("*/*") if p.suffix in (".py", ".json", ".ipynb") and p.parent.name != "errors")


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


def test_stateflow_runs_on_ag2_like_its_selection_function():
    (spec,) = _migrated_specs(ROOT / "classic" / "stateflow.py")
    s = Ag2Session(spec)
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
    s = Ag2Session(spec)
    s.say("travel_agent", "Let me get the refund specialist.", tool="transfer_to_flights_refunder")
    s.say("flights_refunder", "Which flight?")  # no handoff: the same agent again (Swarm)
    s.say("flights_refunder", "Refund issued for ABC123.", tool="transfer_to_travel_agent")
    s.say("travel_agent", "Anything else?", tool="transfer_to_user")  # HandoffTermination(target="user")
    assert s.closed == "handoff_to_user"


def test_graphflow_loop_runs_on_ag2_until_approved():
    (spec,) = _migrated_specs(ROOT / "autogen" / "graphflow_review_loop.json")
    s = Ag2Session(spec)
    s.say("generator", "Ideas: solar roofs, wind co-ops.")
    s.say("reviewer", "REVISE: add costs.")
    s.say("generator", "Ideas with costs.")
    s.say("reviewer", "Looks good. APPROVE")
    s.say("summarizer", "Summary.")
    assert s.closed == "graph_complete"


def test_precise_selection_function_runs_on_ag2_like_its_source():
    """classic/selection_precise.py: planner -> engineer only on "approved", the executor sends a
    failed run back to the engineer, else to the critic; the user goes to the planner."""
    (spec,) = _migrated_specs(ROOT / "classic" / "selection_precise.py")
    s = Ag2Session(spec)
    s.say("user", "Plot NVDA and TSLA.")
    s.say("planner", "Plan: fetch prices, plot.")  # not approved: back to the user
    s.say("user", "Looks fine.")
    s.say("planner", "Plan approved by the user.")
    s.say("engineer", "```python\nplot()\n```")
    s.say("executor", "exitcode: 1 (execution failed)")
    s.say("engineer", "```python\nplot(fixed=True)\n```")
    s.say("executor", "exitcode: 0")
    assert s.expected() == "critic"


def test_legacy_swarm_runs_on_ag2_and_the_customer_returns_to_the_refund_agent():
    (spec,) = _migrated_specs(ROOT / "ag2-patterns" / "swarm_legacy.py")
    s = Ag2Session(spec)
    s.say("triage", "Routing you to refunds.", tool="transfer_to_refund")
    s.say("refund", "Which order?")  # AFTER_WORK(REVERT_TO_USER)
    s.say("customer", "Order 1234.")  # the user returns to the agent before it: refund
    assert s.expected() == "refund"


def test_selector_function_team_runs_on_ag2_like_its_source():
    """autogen/selector_python.py: the planner after anyone else; after the planner, the web
    searcher when the planner names it (candidate_func)."""
    (spec,) = _migrated_specs(ROOT / "autogen" / "selector_python.py")
    s = Ag2Session(spec)
    s.say("PlanningAgent", "WebSearchAgent: find the 2006 Heat stats.")
    s.say("WebSearchAgent", "Found them.")
    assert s.expected() == "PlanningAgent"
    s.say("PlanningAgent", "All done. TERMINATE")
    assert s.closed == "text_mention"


def test_tool_routing_runs_on_ag2_with_split_tools_and_the_user_returning():
    """ag2-patterns/tool_routing.py: classify's target chosen in branches (one routing tool per
    target), tech's after-work reverts to the customer, who goes back to tech; RESOLVED ends."""
    (spec,) = _migrated_specs(ROOT / "ag2-patterns" / "tool_routing.py")
    s = Ag2Session(spec)
    s.say("triage", "Password problem.", tool="classify_to_tech")
    s.say("tech", "Try resetting it.")  # after-work: RevertToUserTarget
    s.say("customer", "Still locked out.")  # AG2: back to the agent before the user (`previous`)
    assert s.expected() == "tech"
    s.say("tech", "Escalating.", tool="escalate")
    s.say("supervisor", "Unlocked. RESOLVED")
    assert s.closed == "is_termination_msg"


class Both:
    """The migrated spec on AG2 (with register_extensions()) and on turnflow's own workflow
    adapter, driven by the same rounds: after each one both expect the same speaker and agree
    on the close reason."""

    def __init__(self, spec: dict):
        from turnflow.runtime.adapters.workflow import WorkflowAdapter
        from turnflow.runtime.session import Participant, SessionMetadata

        self.ag2 = Ag2Session(spec)
        self.ours = WorkflowAdapter()
        creator = next(p["agent_id"] for p in spec["participants"] if p["role"] == "initiator")
        parts = [Participant(p["agent_id"], "initiator" if p["agent_id"] == creator else "participant", p["order"])
                 for p in spec["participants"]]
        self.md = SessionMetadata("0" * 32, self.ours.manifest, creator, parts, spec["knobs"], 0.0)
        self.ours.validate_create(self.md)
        self.state = self.ours.initial_state(self.md)
        self.closed = None
        self.n = 0

    def expected(self):
        e = self.ours.expected_next(self.md, self.state)
        ours = e.agent_id if e is not None else None
        assert ours == self.ag2.expected()
        return ours

    def say(self, sender: str, body: str, context: dict | None = None) -> None:
        from turnflow.runtime.envelope import EV_PACKET, Envelope

        assert self.expected() == sender
        self.ag2.say(sender, body, context=context)
        self.n += 1
        data = {"body": body, **({"context_updates": {"set": context, "delete": []}} if context else {})}
        env = Envelope(self.md.session_id, sender, None, EV_PACKET, data, f"e{self.n}")
        self.ours.validate_send(self.md, env, self.state)
        self.state = self.ours.fold(env, self.state)
        self.closed = self.ours.on_accepted(self.md, env, self.state).close_reason
        assert self.closed == self.ag2.closed


def test_context_comparisons_run_on_ag2_like_the_context_expressions():
    """ag2-patterns/context_compare.py with register_extensions(): `${attempts} > 2 or
    ${severity} >= 3`, `0 < ${severity} <= 5 | len(${open_issues}) == 0`, and the customer
    returning to the agent that spoke before it (`previous`)."""
    (spec,) = _migrated_specs(ROOT / "ag2-patterns" / "context_compare.py")
    s = Both(spec)
    s.say("intake", "Third try.", context={"attempts": 3})  # 3 > 2: escalate
    s.say("escalation", "Looking into it.", context={"severity": 9, "open_issues": ["router"]})
    assert s.expected() == "customer"  # 0 < 9 <= 5 is false, len == 1: after-work, the customer
    s.say("customer", "Any news?")
    assert s.expected() == "escalation"  # back to the agent that spoke before the customer
    s.say("escalation", "Downgraded.", context={"severity": 2})  # 0 < 2 <= 5: terminate
    assert s.closed is not None


def test_len_not_and_inequality_run_on_ag2_and_the_customer_returns_to_the_solver():
    (spec,) = _migrated_specs(ROOT / "ag2-patterns" / "context_compare.py")
    s = Both(spec)
    s.say("intake", "Noted.", context={"severity": 3, "attempts": 0})
    assert s.expected() == "escalation"  # severity >= 3 (the first condition wins)
    s = Both(spec)
    s.say("intake", "Noted.", context={"open_issues": ["wifi"]})  # len > 0 and not verified
    s.say("solver", "Restart the router.")  # status is still "open": after-work, the customer
    s.say("customer", "Did that, still dropping.")
    assert s.expected() == "solver"  # previous: the solver, not the initial agent
    s.say("solver", "Firmware updated.", context={"status": "pending", "attempts": 0})
    assert s.expected() == "customer"  # `!(${attempts} < 1)` is false at 0
    s.say("customer", "Works now.")
    s.say("solver", "Closing.", context={"attempts": 1})  # != "open" and not 1 < 1
    assert s.expected() == "closer"
    s.say("closer", "Ticket closed.")
    assert s.closed is not None
