"""Hub lifecycle (docs/runtime.md): every transition, every close reason, and refusals that change nothing."""

from __future__ import annotations

import pytest

from runtime_helpers import CHAIN, FakeClock, active, ag, fs, graph, new_hub, rule, run, term
from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_PACKET, EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_TEXT,
                                       Envelope, packet)
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import Participant, SessionState


def text(md, who, t="hi"):
    return Envelope(md.session_id, who, None, EV_TEXT, {"text": t})


def events(hub, md):
    return [e.event_type for e in hub.read(md.session_id)]


def test_invited_then_active_when_every_target_acks():
    async def go():
        hub = await new_hub()
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
        assert md.state == SessionState.INVITED and md.pending_acks == {"b", "c"}
        assert events(hub, md) == ["session.invite", "session.invite"]
        await hub.ack(md.session_id, "b")
        assert md.state == SessionState.INVITED
        with pytest.raises(ProtocolError, match="invited: send refused"):
            await hub.post(text(md, "a"))
        await hub.ack(md.session_id, "c")
        assert md.state == SessionState.ACTIVE
        assert events(hub, md)[-1] == "session.opened"
        with pytest.raises(ProtocolError, match="not waiting for acks"):
            await hub.ack(md.session_id, "c")
    run(go())


def test_reject_closes_with_invite_rejected():
    async def go():
        hub = await new_hub()
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
        await hub.reject(md.session_id, "c", "busy")
        assert (md.state, md.close_reason) == (SessionState.CLOSED, "invite_rejected")
        assert events(hub, md)[-2:] == ["session.reject", "session.closed"]
    run(go())


def test_acks_not_in_time_close_with_expectation_reason():
    async def go():
        clock = FakeClock()
        hub = await new_hub(clock=clock)
        md = await hub.open_session("consulting", [Participant("q", "initiator", 0), Participant("r", "respondent", 1)])
        clock.advance(30)
        assert await hub.sweep() == []  # not strictly more than 30 s yet
        clock.advance(0.5)
        await hub.sweep()
        assert (md.state, md.close_reason) == (SessionState.CLOSED, "expectation_violated:acks_within")
    run(go())


def test_workflow_terminate_reason_closes_through_closing():
    seen = []

    async def go():
        hub = await new_hub()
        g = graph("a", [rule(fs("a"), ag("b"))], default=term("all_done"))
        md = await active(hub, people=("a", "b"), knobs={"graph": g})

        async def listener(env, meta):
            seen.append((env.event_type, meta.state))
        hub.subscribe(listener)
        await hub.post(text(md, "a"))
        await hub.post(text(md, "b"))
        assert (md.state, md.close_reason) == (SessionState.CLOSED, "all_done")
        with pytest.raises(ProtocolError, match="closed"):
            await hub.post(text(md, "a"))
    run(go())
    # the closing envelope is delivered while the session is CLOSING, then session.closed
    assert seen[-2:] == [(EV_TEXT, SessionState.CLOSING), (EV_SESSION_CLOSED, SessionState.CLOSED)]


@pytest.mark.parametrize("routing, reason", [({"kind": "finish", "reason": "approved"}, "approved"),
                                             ({"kind": "finish"}, "finished")])
def test_finish_packet_reasons(routing, reason):
    async def go():
        hub = await new_hub()
        md = await active(hub)
        await hub.post(Envelope(md.session_id, "a", None, EV_PACKET, {"routing": routing, "body": "x"}))
        return md
    md = run(go())
    assert (md.state, md.close_reason) == (SessionState.CLOSED, reason)


def test_empty_terminate_reason_is_workflow_terminated_and_max_turns():
    async def go():
        hub = await new_hub()
        md1 = await active(hub, people=("a", "b"), knobs={"graph": graph("a", [], default=term(""))})
        await hub.post(text(md1, "a"))
        md2 = await active(hub, people=("a", "b", "c"), knobs={"graph": {**CHAIN, "max_turns": 2}})
        await hub.post(text(md2, "a"))
        assert md2.state == SessionState.ACTIVE
        await hub.post(text(md2, "b"))
        # a terminate on the turn that reaches the cap beats max_turns
        g3 = graph("a", [rule(fs("a"), ag("b"))], default=term("graph_end"), max_turns=2)
        md3 = await active(hub, people=("a", "b"), knobs={"graph": g3})
        await hub.post(text(md3, "a"))
        await hub.post(text(md3, "b"))
        return md1, md2, md3
    md1, md2, md3 = run(go())
    assert md1.close_reason == "workflow_terminated"
    assert md2.close_reason == "max_turns"
    assert md3.close_reason == "graph_end"


def test_consulting_complete_explicit_close_and_custom_reason():
    async def go():
        hub = await new_hub()
        md = await active(hub, "consulting", [Participant("q", "initiator", 0), Participant("r", "respondent", 1)])
        await hub.post(text(md, "q", "question"))
        await hub.post(text(md, "r", "answer"))
        md2 = await active(hub, "conversation", ["x", "y"])
        await hub.close(md2.session_id)
        md3 = await active(hub, "conversation", ["x", "y"])
        await hub.close(md3.session_id, "user_left")
        with pytest.raises(ProtocolError, match="already closed"):
            await hub.close(md3.session_id)
        return md, md2, md3
    md, md2, md3 = run(go())
    assert [m.close_reason for m in (md, md2, md3)] == ["consulting_complete", "explicit_close", "user_left"]


def test_ttl_expires_active_session_once():
    async def go():
        clock = FakeClock()
        hub = await new_hub(clock=clock)
        md = await active(hub, "conversation", ["x", "y"], ttl_seconds=60)
        clock.advance(59)
        await hub.sweep()
        assert md.state == SessionState.ACTIVE
        clock.advance(1)
        written = await hub.sweep()
        assert [e.event_type for e in written] == [EV_SESSION_EXPIRED]
        assert (md.state, md.close_reason) == (SessionState.EXPIRED, "ttl_expired")
        assert await hub.sweep() == []
        with pytest.raises(ProtocolError, match="expired"):
            await hub.post(text(md, "x"))
        with pytest.raises(ProtocolError, match="already expired"):
            await hub.close(md.session_id)
    run(go())


def test_refusals_leave_state_unchanged():
    async def go():
        hub = await new_hub()
        md = await active(hub)
        before = (hub.info(md.session_id), hub.adapter_state(md.session_id).snapshot())
        bad = [
            text(md, "b"),  # out of turn
            text(md, "zed"),  # not a participant
            Envelope(md.session_id, "a", None, EV_PACKET, packet("x", kind="handoff", target="ghost")),
            Envelope(md.session_id, "a", None, EV_CONTEXT_SET, {"set": "not a dict"}),
            Envelope(md.session_id, "a", None, EV_SESSION_CLOSED, {"reason": "forged"}),
            Envelope(md.session_id, "a", ["zed"], EV_TEXT, {"text": "x"}),
            Envelope(md.session_id, "a", None, EV_TEXT, {"text": object()}),  # not JSON
        ]
        for env in bad:
            with pytest.raises(ProtocolError):
                await hub.post(env)
        assert (hub.info(md.session_id), hub.adapter_state(md.session_id).snapshot()) == before
        for sid in ("nope", "0" * 32, "'; DROP TABLE envelopes; --"):
            with pytest.raises(ProtocolError, match="session id"):
                await hub.post(Envelope(sid, "a", None, EV_TEXT, {"text": "x"}))
    run(go())


@pytest.mark.parametrize("kind, people, knobs, message", [
    ("workflow", ["a"], {"graph": CHAIN}, "at least 2"),
    ("workflow", ["a", "b"], {}, "knob `graph` is required"),
    ("workflow", ["a", "b"], {"graph": "{}"}, "must be an object"),
    ("workflow", ["a", "b"], {"graph": graph("zz", [])}, "initial_speaker: 'zz' is not a participant"),
    ("workflow", ["a", "b"], {"graph": graph("a", [rule(fs("a"), ag("ghost"))])}, "'ghost' is not a participant"),
    ("workflow", ["a", "b"], {"graph": graph("a", [rule({"name": "never", "args": {}}, ag("b"))])}, "named 'never'"),
    ("workflow", ["a", "b"], {"graph": graph("a", [rule(fs("a"), {"name": "agent", "args": {}})])}, "'agent_id' is a required property"),
    ("workflow", ["a", "b"], {"graph": {**graph("a", []), "max_turns": "x"}}, "max_turns"),
    ("workflow", ["a", "b"], {"graph": graph("a", []), "context_vars": [1]}, "context_vars"),
    ("workflow", ["a", "b"], {"graph": graph("a", []), "colour": 1}, "unknown knob 'colour'"),
    ("discussion", ["a", "b"], {"ordering": "random"}, "round_robin"),
    ("conversation", ["a", "b", "c"], {}, "exactly 2"),
    ("consulting", ["a", "b"], {}, "role 'participant'"),
    ("teatime", ["a", "b"], {}, "unknown session kind"),
    ("conversation", ["a", "a"], {}, "twice"),
    ("conversation", ["a", "b/../x"], {}, "invalid agent id"),
    ("conversation", [{"role": "participant"}, "b"], {}, "invalid agent id"),
])
def test_invalid_create_is_refused_and_stores_nothing(kind, people, knobs, message):
    async def go():
        hub = await new_hub()
        with pytest.raises(ProtocolError, match=message):
            await hub.open_session(kind, people, knobs=knobs)
        assert hub.sessions == {} and list(hub.store.sessions()) == []
    run(go())


def test_session_names_are_validated():
    async def go():
        hub = await new_hub()
        with pytest.raises(ProtocolError, match="invalid session name"):
            await hub.open_session("conversation", ["a", "b"], name="../etc/passwd")
        md = await hub.open_session("conversation", ["a", "b"], name="support-2")
        assert md.name == "support-2"
    run(go())


def test_envelope_ids_are_monotonic_and_sortable():
    async def go():
        hub = await new_hub()
        md = await active(hub)
        for who in "abcabcabca":
            await hub.post(text(md, who))
        ids = [e.envelope_id for e in hub.read(md.session_id)]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        assert [e.seq for e in hub.read(md.session_id)] == list(range(1, len(ids) + 1))
    run(go())


def test_open_spec_from_a_compiled_spec_fixture():
    from runtime_helpers import fixture_spec

    async def go():
        hub = await new_hub()
        spec = fixture_spec("support.json")
        md = await hub.open_spec(spec)
        assert md.creator_id == "user" and md.pending_acks == {"triage", "billing", "tech"}
        no_initiator = {**spec, "participants": [{**p, "role": "participant"} for p in spec["participants"]]}
        md2 = await hub.open_spec(no_initiator)
        assert md2.creator_id == "triage"  # the start speaker opens it
        assert [(e.name, e.seconds, e.on_violation) for e in md.expectations] == [
            ("turn_within", 120, "warn"), ("turn_within", 600, "auto_close")]
        with pytest.raises(ProtocolError, match="missing 'kind'"):
            await hub.open_spec({"participants": []})
    run(go())


def test_previous_survives_a_restart(tmp_path):
    """`previous_speaker` reads who spoke before the last speaker; a reopened hub folds the log
    again and so knows it too (nothing extra is stored)."""
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore

    db = tmp_path / "hub.db"
    prev = {"name": "previous_speaker", "args": {}}
    g = graph("a", [rule(fs("a"), ag("c")), rule(fs("b"), ag("c")), rule(fs("c"), prev)])

    async def first():
        hub = await Hub.open(SQLiteStore(str(db)), clock=FakeClock())
        md = await active(hub, knobs={"graph": g})
        await hub.post(text(md, "a"))
        await hub.post(text(md, "c"))
        assert hub.expected_next(md.session_id) == "a"  # back to the one before c
        await hub.post(text(md, "a"))
        await hub.aclose()
        return md

    md = run(first())

    async def second():
        hub = await Hub.open(SQLiteStore(str(db)), clock=FakeClock())
        assert hub.expected_next(md.session_id) == "c"
        await hub.post(text(md, "c"))
        out = hub.expected_next(md.session_id)
        await hub.aclose()
        return out

    assert run(second()) == "a"


def test_sessions_of_one_flow_share_its_compiled_graph_and_others_do_not():
    async def go():
        hub = await new_hub()
        a = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": dict(CHAIN)})
        b = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": dict(CHAIN)})
        c = await hub.open_session("workflow", ["a", "c", "b"], knobs={"graph": dict(CHAIN)})
        ga, gb, gc_ = (hub.adapter_state(m.session_id).graph for m in (a, b, c))
        assert ga is gb and ga is not gc_
        assert (hub.expected_next(a.session_id), hub.expected_next(c.session_id)) == ("a", "a")
    run(go())


def test_an_audience_must_be_a_list_of_participants_and_a_refused_one_writes_nothing():
    async def go():
        hub = await new_hub()
        md = await active(hub)
        before = events(hub, md)
        for bad in (["b", "zed"], "b", ("b",), ["b", 7], ["b", ["c"]]):
            with pytest.raises(ProtocolError, match="audience must be null or a list of participants"):
                await hub.post(Envelope(md.session_id, "a", bad, EV_TEXT, {"text": "psst"}))
        assert events(hub, md) == before and hub.info(md.session_id)["turn_count"] == 0
        env = await hub.post(Envelope(md.session_id, "a", ["b", "c"], EV_TEXT, {"text": "to b and c"}))
        assert env.seq == len(before) + 1 and [e.audience for e in hub.read(md.session_id)][-1] == ["b", "c"]
        await hub.post(Envelope(md.session_id, "b", [], EV_TEXT, {"text": "to nobody"}))
        assert hub.info(md.session_id)["turn_count"] == 2
    run(go())


def test_the_opener_of_a_spec_is_its_initiator_else_the_graphs_start_speaker_else_the_first_participant():
    from turnflow.runtime.session_spec import SessionSpec

    def spec_opener(obj):
        return SessionSpec.parse({"kind": "workflow", **obj}).opener

    parts = [{"agent_id": "a"}, {"agent_id": "b"}, {"agent_id": "c"}]
    graph = {"initial_speaker": "b", "transitions": [], "default_target": {"name": "round_robin", "args": {}}}
    assert spec_opener({"participants": parts, "knobs": {"graph": graph}}) == "b"
    assert spec_opener({"participants": parts, "knobs": {"graph": {"initial_speaker": "c"}}}) == "c"  # AG2 defaults
    assert spec_opener({"participants": [*parts[:2], {"agent_id": "c", "role": "initiator"}],
                        "knobs": {"graph": graph}}) == "c"
    assert spec_opener({"participants": parts, "knobs": {"graph": {"transitions": 3}}}) == "a"  # not a graph
    assert spec_opener({"participants": parts, "knobs": {}}) == "a"
    assert spec_opener({"participants": []}) is None


def test_sweep_passes_walk_only_sessions_not_ended(monkeypatch):
    """A long-running hub holds every session it ever opened; a sweeper pass looks at the open ones
    (an ended session is dropped from the walk at the first pass that finds it ended), and a
    session opened later is still swept."""
    import turnflow.runtime.hub.sweeper as hub_mod

    seen: list[str] = []
    real = hub_mod._sweepable

    def counting(live):
        seen.append(live.session_id)
        return real(live)

    monkeypatch.setattr(hub_mod, "_sweepable", counting)

    async def go():
        clock = FakeClock()
        hub = await new_hub(clock=clock)
        pair = [Participant("q", "initiator", 0), Participant("r", "respondent", 1)]
        ended = [await hub.open_session("consulting", pair) for _ in range(3)]
        for md in ended:
            await hub.close(md.session_id, "done")
        kept = await hub.open_session("consulting", pair, ttl_seconds=10)
        await hub.sweep()
        seen.clear()
        await hub.sweep()
        assert set(seen) == {kept.session_id}
        later = await hub.open_session("consulting", pair, ttl_seconds=5)
        clock.advance(6)
        seen.clear()
        await hub.sweep()
        assert later.session_id in seen and later.state == SessionState.EXPIRED
    run(go())
