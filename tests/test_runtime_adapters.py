"""Each adapter's accept/reject rules, default views and default expectations (docs/runtime.md)."""

from __future__ import annotations

import pytest

from runtime_helpers import CHAIN, active, ag, fs, graph, new_hub, rule, run, term
from turnflow.runtime.adapters import builtin_adapters
from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, packet
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Participant, SessionState
from turnflow.runtime.views import FullTranscript, WindowedSummary


def text(md, who, t="hi"):
    return Envelope(md.session_id, who, None, EV_TEXT, {"text": t})


CONSULT = [Participant("q", "initiator", 0), Participant("r", "respondent", 1)]


def test_consulting_initiator_once_then_respondent_once():
    async def go():
        hub = await new_hub()
        md = await active(hub, "consulting", CONSULT)
        with pytest.raises(ProtocolError, match="expects 'q'"):
            await hub.post(text(md, "r"))
        await hub.post(text(md, "q"))
        with pytest.raises(ProtocolError, match="expects 'r'"):
            await hub.post(text(md, "q"))
        with pytest.raises(ProtocolError, match="plain rounds only"):
            await hub.post(Envelope(md.session_id, "r", None, EV_PACKET, packet("x", kind="finish")))
        with pytest.raises(ProtocolError, match="no context"):
            await hub.post(Envelope(md.session_id, "r", None, EV_CONTEXT_SET, {"set": {"k": 1}}))
        await hub.post(Envelope(md.session_id, "r", None, EV_PACKET, packet("answer")))
        assert (md.state, md.close_reason) == (SessionState.CLOSED, "consulting_complete")
        assert hub.info(md.session_id)["turn_count"] == 2
    run(go())


def test_consulting_creator_must_be_the_initiator():
    async def go():
        hub = await new_hub()
        with pytest.raises(ProtocolError, match="must be the initiator"):
            await hub.open_session("consulting", CONSULT, creator_id="r")
    run(go())


def test_conversation_any_order_never_closes_by_itself():
    async def go():
        hub = await new_hub()
        md = await active(hub, "conversation", ["x", "y"])
        for who in "xxyxyy":
            await hub.post(text(md, who))
        assert md.state == SessionState.ACTIVE and hub.info(md.session_id)["turn_count"] == 6
        assert hub.expected_next(md.session_id) is None
        with pytest.raises(ProtocolError, match="plain rounds only"):
            await hub.post(Envelope(md.session_id, "x", None, EV_PACKET, packet("x", kind="handoff", target="y")))
    run(go())


def test_discussion_strict_round_robin_from_the_creator():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ["a", "b", "c"], knobs={"ordering": "round_robin"}, creator_id="b")
        order = []
        for _ in range(5):
            who = hub.expected_next(md.session_id)
            order.append(who)
            for other in {"a", "b", "c"} - {who}:
                with pytest.raises(ProtocolError, match=f"expects '{who}'"):
                    await hub.post(text(md, other))
            await hub.post(text(md, who))
        assert order == ["b", "c", "a", "b", "c"]
        assert md.state == SessionState.ACTIVE
    run(go())


def test_workflow_context_set_any_time_without_turn_advance():
    async def go():
        hub = await new_hub()
        g = graph("a", [rule({"name": "context_equals", "args": {"key": "go", "value": True}}, ag("c")),
                        rule(fs("a"), ag("b"))])
        md = await active(hub, knobs={"graph": g, "context_vars": {"go": False}})
        await hub.post(Envelope(md.session_id, "c", None, EV_CONTEXT_SET, {"set": {"go": True}}))
        st = hub.adapter_state(md.session_id)
        assert (st.turn_count, st.expected_next_speaker, st.context_vars) == (0, "a", {"go": True})
        await hub.post(text(md, "a"))
        assert hub.expected_next(md.session_id) == "c"
        # packet context updates apply before selection: delete first, then set
        await hub.post(Envelope(md.session_id, "c", None, EV_PACKET,
                                packet("x", set={"go": False, "n": 1}, delete=["go"])))
        assert hub.adapter_state(md.session_id).context_vars == {"go": False, "n": 1}
    run(go())


def test_workflow_extensions_all_of_and_text_contains():
    async def go():
        hub = await new_hub()
        g = graph("a", [rule({"name": "all_of", "args": {"conditions": [
                            fs("a"), {"name": "text_contains", "args": {"text": "URGENT"}}]}}, ag("c")),
                        rule(fs("a"), ag("b")), rule(fs("b"), ag("a")), rule(fs("c"), term("escalated"))])
        md = await active(hub, knobs={"graph": g})
        await hub.post(text(md, "a", "urgent, lower case"))
        assert hub.expected_next(md.session_id) == "b"
        await hub.post(text(md, "b"))
        await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, packet("this is URGENT")))
        assert hub.expected_next(md.session_id) == "c"
        await hub.post(text(md, "c"))
        assert md.close_reason == "escalated"
    run(go())


def test_workflow_dynamic_handoff_beats_rules_and_must_name_a_participant():
    async def go():
        hub = await new_hub()
        g = graph("a", [rule({"name": "tool_called", "args": {"tool_name": "t"}}, ag("b")), rule(fs("a"), ag("b"))])
        md = await active(hub, knobs={"graph": g})
        with pytest.raises(ProtocolError, match="'ghost' is not a participant"):
            await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, packet("x", kind="handoff", tool="t",
                                                                                target="ghost")))
        await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, packet("x", kind="handoff", tool="t", target="c")))
        assert hub.expected_next(md.session_id) == "c"
    run(go())


def test_workflow_handoff_tools_are_remembered_per_row_for_the_graphs_own_tools_only():
    """A TOOLS row remembers what a tool of the graph resolves to (the next packet finds it with one
    look-up, and routes alike); a tool the graph does not name is looked up and not remembered."""
    from turnflow.runtime.adapters.workflow import WorkflowAdapter
    from turnflow.runtime.session import SessionMetadata
    from turnflow.runtime.transitions import TOOLS

    g = graph("a", [rule({"name": "tool_called", "args": {"tool_name": "t"}}, ag("c"), -1),
                    rule({"name": "tool_called", "args": {"tool_name": "u"}}, {"name": "round_robin", "args": {}}, -1),
                    rule(fs("a"), ag("b")), rule(fs("b"), ag("a")), rule(fs("c"), ag("a"))])
    adapter = WorkflowAdapter()
    md = SessionMetadata("0" * 32, adapter.manifest, "a", [Participant(p, "participant", i) for i, p in enumerate("abc")],
                         {"graph": g}, 0.0)
    state = adapter.initial_state(md)
    memo = next(row[2] for row in state.graph.packet_tables["a"] if row[0] == TOOLS)
    seen = []
    for tool in ("nope", "t", "t", "u", "nope", None):
        st = state
        env = Envelope(md.session_id, "a", None, EV_PACKET, packet("x", tool=tool))
        adapter.validate_send(md, env, st)
        seen.append(adapter.fold(env, st).expected_next_speaker)
    assert seen == ["b", "c", "c", "b", "b", "b"]
    assert memo == {"t": ("c", "", False), "u": ("b", "", True)}


def test_workflow_round_robin_stay_revert_targets():
    async def go():
        hub = await new_hub()
        g = graph("b", [rule(fs("b"), {"name": "stay", "args": {}}, priority=1),
                        rule({"name": "tool_called", "args": {"tool_name": "rr"}}, {"name": "round_robin", "args": {}}),
                        rule({"name": "tool_called", "args": {"tool_name": "back"}},
                             {"name": "revert_to_initiator", "args": {}})])
        md = await active(hub, people=(Participant("a", "initiator", 0), Participant("b", "participant", 1),
                                       Participant("c", "participant", 2)), knobs={"graph": g})
        await hub.post(Envelope(md.session_id, "b", None, EV_PACKET, packet("x", kind="handoff", tool="rr")))
        assert hub.expected_next(md.session_id) == "c"  # priority 0 rule before the priority 1 stay
        await hub.post(Envelope(md.session_id, "c", None, EV_PACKET, packet("x", kind="handoff", tool="rr")))
        assert hub.expected_next(md.session_id) == "a"  # wraps
        await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, packet("x", kind="handoff", tool="back")))
        assert hub.expected_next(md.session_id) == "a"
        await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, packet("x", kind="handoff", tool="rr")))
        await hub.post(text(md, "b"))
        assert hub.expected_next(md.session_id) == "b"  # stay
    run(go())


def test_default_views_and_expectations():
    a = builtin_adapters()
    assert set(a) == {("consulting", 1), ("conversation", 1), ("discussion", 1), ("workflow", 1)}

    def exp(kind):
        return [(e.name, e.seconds, e.on_violation) for e in a[(kind, 1)].manifest.default_expectations]
    assert exp("consulting") == [("acks_within", 30, "auto_close"), ("reply_within", 600, "auto_close")]
    assert exp("conversation") == [("max_silence", 3600, "audit")]
    assert exp("discussion") == [("turn_within", 120, "warn"), ("turn_within", 600, "hide")]
    assert exp("workflow") == [("turn_within", 120, "warn"), ("turn_within", 600, "auto_close")]

    async def go():
        hub = await new_hub()
        c = await active(hub, "consulting", CONSULT)
        v = await active(hub, "conversation", ["x", "y"])
        d = await active(hub, "discussion", ["x", "y", "z"])
        w = await active(hub, people=("a", "b", "c"))
        views = {k: m.__class__ and hub.sessions[m.session_id].adapter.default_view_policy(m)
                 for k, m in (("c", c), ("v", v), ("d", d), ("w", w))}
        return views, w
    views, w = run(go())
    assert views["c"] == FullTranscript()
    assert views["v"] == WindowedSummary(10)
    assert views["d"] == WindowedSummary(6, named=True)  # as AG2's NamedWindowedSummary
    assert views["w"] == WindowedSummary(6, named=True)
    # a declared expectation replaces the defaults of the same name only
    async def go2():
        hub = await new_hub()
        md = await hub.open_session("workflow", ["a", "b"], knobs={"graph": CHAIN | {"initial_speaker": "a",
                                    "transitions": []}},
                                    expectations=[{"name": "turn_within", "params": {"seconds": 5}, "on_violation": "audit"},
                                                  {"name": "max_silence", "params": {"seconds": 9}, "on_violation": "warn"}])
        return [(e.name, e.seconds, e.on_violation) for e in md.expectations]
    assert run(go2()) == [("turn_within", 5, "audit"), ("max_silence", 9, "warn")]


@pytest.mark.parametrize("exp, message", [
    ({"name": "soon", "params": {"seconds": 1}, "on_violation": "warn"}, "unknown expectation"),
    ({"name": "turn_within", "params": {"seconds": 1}, "on_violation": "shout"}, "unknown expectation action"),
    ({"name": "turn_within", "params": {"seconds": -1}, "on_violation": "warn"}, "positive number"),
])
def test_invalid_expectations_are_refused(exp, message):
    async def go():
        hub = await new_hub()
        with pytest.raises(ProtocolError, match=message):
            await hub.open_session("conversation", ["a", "b"], expectations=[exp])
    run(go())


def test_the_folds_turn_key_is_the_expected_speaker_and_turn_count_unless_a_subclass_answers_them():
    """The plain kinds give the fold their turn key in one call (`SimpleAdapter.turn_key`); it must
    be the pair the fold would build from `expected_next` and `turn_count`, and a subclass that
    answers either its own way must be asked that way (its turn key is then None)."""
    from turnflow.runtime.adapters.consulting import ConsultingAdapter
    from turnflow.runtime.adapters.protocol import ExpectedTurn

    async def go():
        hub = await new_hub()
        for kind, parts in (("consulting", CONSULT), ("conversation", CONSULT[:1] + [Participant("r", "participant", 1)]),
                            ("discussion", [Participant("q", "participant", 0), Participant("r", "participant", 1)])):
            md = await active(hub, kind, parts)
            live = hub.sessions[md.session_id]
            for who in ("q", "r"):
                assert live.adapter.turn_key(live.state) == (live.expected_speaker(), live.turn_count())
                assert live._turn_key == (live.expected_speaker(), live.turn_count())
                await hub.post(text(md, who))

        class Quiet(ConsultingAdapter):  # nobody is ever expected: every envelope of a turn is the same turn
            def expected_next(self, metadata, state):
                return None

        class Counted(ConsultingAdapter):
            def turn_count(self, state):
                return 7

        class Named(ConsultingAdapter):
            def expected_next(self, metadata, state):
                return ExpectedTurn("someone", None)

        assert Quiet.turn_key is None and Counted.turn_key is None and Named.turn_key is None
        from turnflow.runtime.hub import Hub
        from turnflow.runtime.store.sqlite import SQLiteStore

        hub = await Hub.open(SQLiteStore(":memory:"), adapters={("consulting", 1): Named()})
        md = await active(hub, "consulting", CONSULT)
        live = hub.sessions[md.session_id]
        assert live._turn_key == ("someone", 0)
        await hub.post(text(md, "q"))
        assert live._turn_key == ("someone", 1)
    run(go())
