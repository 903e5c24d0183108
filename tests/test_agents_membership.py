"""`add_participant` / `remove_participant` in a running conversation or discussion (docs/contracts.md
§2): a `participant.added` / `participant.removed` envelope the adapter validates and folds, the
round robin following the new roster, hydrate (SQLite and PostgreSQL) replaying it, and
`participants_msg` on each participant's next turn. Against the real hub and runner."""

from __future__ import annotations

import pytest

from runtime_helpers import new_hub, run
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent, SessionTools, ToolError
from turnflow.runtime.agents.driver import take_turn
from turnflow.runtime.agents.protocol import as_agent
from turnflow.runtime.port import HubPort
from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED, EV_PARTICIPANT_REMOVED, EV_TEXT, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.store import SQLiteStore

PANEL = {"kind": "discussion", "name": "panel",
         "participants": [{"agent_id": "a", "role": "initiator"}, {"agent_id": "b", "role": "participant"},
                          {"agent_id": "c", "role": "participant"}]}
CHAT = {"kind": "conversation", "name": "chat",
        "participants": [{"agent_id": "asker", "role": "participant"}, {"agent_id": "helper", "role": "participant"}]}


def _panel_agents(seen):
    """a, b, c take turns; on b's second turn b removes c (after two refused removals)."""
    def agent(name):
        def turn(msg, tools):
            seen.append((name, tools.participants_msg))
            mine = sum(1 for s, _ in seen if s == name)
            if name == "b" and mine == 2:
                for who in ("a", "b"):
                    with pytest.raises(ToolError) as err:
                        tools.remove_participant(who)
                    seen.append(("refused", str(err.value)))
                assert tools.remove_participant("c") == "removed c: it takes no further turns"
            if name == "a" and mine == 3:
                return {"say": "that is all", "finish": "done"}
            return {"say": f"{name} {mine}"}
        return FunctionAgent(turn, name)
    return {n: agent(n) for n in ("a", "b", "c")}


def test_remove_participant_in_a_discussion_the_round_robin_follows_and_participants_msg_tells(tmp_path):
    seen: list = []
    path = tmp_path / "log.db"

    async def go():
        hub = await new_hub(path)
        res = await run_session(hub, PANEL, _panel_agents(seen))
        envs = list(hub.store.read_range(res.session_id))
        await hub.aclose()
        again = await Hub.open(SQLiteStore(str(path)))
        md = again.metadata(res.session_id)
        return res, envs, md.participant_ids, again.adapter_state(res.session_id).order
    res, envs, ids, order = run(go())
    assert res.close_reason == "done"
    speakers = [s for s, _ in seen if s in "abc"]
    assert speakers == ["a", "b", "c", "a", "b", "a"]  # c takes no turn after its removal
    refused = [m for s, m in seen if s == "refused"]
    assert refused == ["b: remove_participant('a') refused: 'a' spoke last (the next turn answers it)",
                       "b: remove_participant('b') refused: it is 'b''s turn"]
    msgs = {(s, i): m for i, (s, m) in enumerate((s, m) for s, m in seen if s in "abc")}
    assert msgs[("a", 3)] is None and msgs[("b", 4)] is None  # the roster had not changed yet
    assert msgs[("a", 5)] == "Participants: a (initiator), b"  # the next turn after the change
    removed = [e for e in envs if e.event_type == EV_PARTICIPANT_REMOVED]
    assert [(e.sender_id, e.event_data) for e in removed] == [("b", {"agent_id": "c"})]
    assert ids == ["a", "b"] and order == ("a", "b")  # hydrate replayed the envelope


def _turn(hub, sid, name, fn, step):
    async def deliver(tools):
        env = hub.sessions[sid].adapter.build_round_envelope(hub.metadata(sid), name, tools.round())
        await hub.post(env)
    return take_turn(HubPort(hub, sid), as_agent(FunctionAgent(fn, name)), [], lambda: SessionTools(
        name, tuple(hub.metadata(sid).participant_ids), session_id=sid), deliver, step)


async def _open_panel(hub):
    md = await hub.open_session("discussion", PANEL["participants"], creator_id="a")
    for p in ("b", "c"):
        await hub.ack(md.session_id, p)
    return md.session_id


def _say(text, log=None, add=None):
    def fn(msg, tools):
        if log is not None:
            log.append(tools.participants_msg)
        if add:
            assert tools.add_participant(*add).startswith(f"added {add[0]}")
        tools.send_message(text)
    return fn


def test_add_participant_joins_the_round_robin_and_survives_hydrate(tmp_path):
    path = tmp_path / "log.db"
    a_msgs: list = []

    async def go():
        hub = await new_hub(path)
        sid = await _open_panel(hub)
        with pytest.raises(ProtocolError, match="'d' is not a participant"):
            await hub.post(Envelope(sid, "d", None, EV_TEXT, {"text": "hello?"}))
        await _turn(hub, sid, "a", _say("a1", a_msgs), 1)
        await _turn(hub, sid, "b", _say("b1", add=("d", "participant", "Takes notes")), 2)
        await _turn(hub, sid, "c", _say("c1"), 3)
        expected = hub.expected_next(sid)
        await _turn(hub, sid, "d", _say("d1"), 4)  # the newcomer speaks in its turn
        await _turn(hub, sid, "a", _say("a2", a_msgs), 5)
        await hub.aclose()
        again = await Hub.open(SQLiteStore(str(path)))
        return expected, a_msgs, again.metadata(sid), again.expected_next(sid)
    expected, a_msgs, md, after = run(go())
    assert expected == "d"
    assert a_msgs[1] == ("Participants: a (initiator), b, c, d: Takes notes")
    assert [(p.agent_id, p.role, p.description) for p in md.participants][-1] == ("d", "participant", "Takes notes")
    assert md.participant_ids == ["a", "b", "c", "d"] and after == "b"


def test_membership_refusals_in_a_discussion_are_the_adapters_reasons():
    errors: list = []

    def try_all(msg, tools):
        for call in (lambda: tools.add_participant("b"), lambda: tools.add_participant("x", "initiator"),
                     lambda: tools.add_participant("bad id!"), lambda: tools.remove_participant("ghost")):
            with pytest.raises(ToolError) as err:
                call()
            errors.append(str(err.value))
        tools.remove_participant("c")  # then b is last-but-one: removing b would leave one participant
        with pytest.raises(ToolError) as err:
            tools.remove_participant("b")
        errors.append(str(err.value))
        tools.send_message("ok")

    async def go():
        hub = await new_hub()
        sid = await _open_panel(hub)
        await _turn(hub, sid, "a", try_all, 1)
        return hub.metadata(sid).participant_ids, hub.expected_next(sid)
    ids, nxt = run(go())
    assert errors[0] == "a: add_participant('b') refused: 'b' is already a participant"
    assert errors[1] == "a: add_participant('x') refused: role 'initiator' (allowed: respondent, participant)"
    assert errors[2].startswith("a: add_participant('bad id!') refused: invalid agent id")
    assert errors[3] == "a: remove_participant('ghost') refused: 'ghost' is not a participant (a, b, c)"
    assert errors[4] == "a: remove_participant('b') refused: a discussion session needs at least 2 participants"
    assert ids == ["a", "b"] and nxt == "b"


def test_a_conversation_keeps_exactly_two_participants():
    out: list = []

    def helper(msg, tools):
        for call in (lambda: tools.add_participant("third"), lambda: tools.remove_participant("asker")):
            with pytest.raises(ToolError) as err:
                call()
            out.append(str(err.value))
        tools.finish("answered", "ok")

    async def go():
        hub = await new_hub()
        res = await run_session(hub, CHAT, {"asker": ScriptedAgent("asker", [{"say": "hi"}]),
                                            "helper": FunctionAgent(helper, "helper")})
        return res
    res = run(go())
    assert res.close_reason == "answered"
    assert out == ["helper: add_participant('third') refused: a conversation session has at most 2 participants",
                   "helper: remove_participant('asker') refused: a conversation session needs at least 2 participants"]


def test_a_membership_envelope_posted_to_a_workflow_is_refused_by_the_hub():
    from runtime_helpers import CHAIN

    async def go():
        hub = await new_hub()
        md = await hub.open_session("workflow", ["a", "b", "c"], creator_id="a", knobs={"graph": CHAIN})
        for p in ("b", "c"):
            await hub.ack(md.session_id, p)
        with pytest.raises(ProtocolError, match="participants of a workflow session are fixed by its flow"):
            await hub.post(Envelope(md.session_id, "a", None, EV_PARTICIPANT_ADDED, {"agent_id": "d"}))
    run(go())


def test_postgres_hydrate_replays_a_roster_change(pg_url):
    from turnflow.runtime.store.postgres import PostgresStore

    async def go():
        hub = await Hub.open(PostgresStore(pg_url))
        sid = await _open_panel(hub)
        await _turn(hub, sid, "a", _say("a1", add=("d", "respondent")), 1)
        await _turn(hub, sid, "b", _say("b1"), 2)
        await hub.post(Envelope(sid, "b", None, EV_PARTICIPANT_REMOVED, {"agent_id": "a"}))
        await hub.aclose()
        again = await Hub.open(PostgresStore(pg_url))
        md = again.metadata(sid)
        ids, nxt = md.participant_ids, again.expected_next(sid)
        await again.aclose()
        return ids, nxt
    ids, nxt = run(go())
    assert ids == ["b", "c", "d"] and nxt == "c"


def test_turnflow_run_refuses_to_add_a_participant_it_has_no_agent_for():
    out: list = []

    def a(msg, tools):
        with pytest.raises(ToolError) as err:
            tools.add_participant("d")
        out.append(str(err.value))
        return {"say": "fine", "finish": "done"}

    async def go():
        hub = await new_hub()
        return await run_session(hub, PANEL, {"a": FunctionAgent(a, "a"), "b": ScriptedAgent("b", [{"say": "x"}]),
                                              "c": ScriptedAgent("c", [{"say": "y"}])})
    res = run(go())
    assert res.close_reason == "done"
    assert out == ["a: add_participant('d') refused: this run has no agent for 'd' "
                   "(`turnflow run` drives the participants its agents file names)"]


def test_continuing_a_session_someone_joined_without_an_agent_ends_with_a_clear_error():
    async def go():
        hub = await new_hub()
        sid = await _open_panel(hub)
        await hub.post(Envelope(sid, "a", None, EV_PARTICIPANT_ADDED, {"agent_id": "d"}))
        agents = {n: ScriptedAgent(n, [{"say": n}] * 3) for n in ("a", "b", "c")}
        return await run_session(hub, PANEL, agents, session_id=sid)
    res = run(go())
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert res.error == "participant 'd' joined the session while it ran and has no agent"


def test_a_participant_added_by_someone_else_during_a_run_ends_it_with_a_clear_error():
    async def go():
        hub = await new_hub()
        added: list = []

        async def newcomer(env, md):  # someone outside the run adds "d" once "a" has spoken
            if env.event_type == "packet" and env.sender_id == "a" and not added:
                added.append(await hub.post(Envelope(env.session_id, "a", None, EV_PARTICIPANT_ADDED, {"agent_id": "d"})))
        hub.subscribe(newcomer)
        agents = {n: ScriptedAgent(n, [{"say": n}] * 3) for n in ("a", "b", "c")}
        return await run_session(hub, PANEL, agents), added
    res, added = run(go())
    assert len(added) == 1 and [t["speaker"] for t in res.turns] == ["a", "b", "c"]
    assert (res.close_reason, res.error) == ("agent_error", "participant 'd' joined the session while it ran and has no agent")
