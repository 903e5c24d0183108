"""`HubPort` (runtime/port.py): one session of an in-process hub, as the agent side sees it —
what is posted through it is in the session's log and in every participant's view, a roster
change it accepts is in the roster it reads next (and one the session refuses changes nothing),
telemetry appended through it is stored beside the session, and a chatroom opened through it is
a real session on the same hub."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from runtime_helpers import active, new_hub, run
from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED, EV_PARTICIPANT_REMOVED, EV_TEXT, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.port import HubPort, SessionPort


def _text(sid: str, who: str, text: str) -> Envelope:
    return Envelope(sid, who, None, EV_TEXT, {"text": text})


def test_a_post_is_in_the_log_the_views_and_the_next_turns_input():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ("a", "b", "c"))
        port: SessionPort = HubPort(hub, md.session_id)
        assert port.session_id == md.session_id
        assert port.turn_input("b") is None  # nothing said yet
        stamped = await port.post(_text(md.session_id, "a", "hello"))
        assert stamped.seq > 0 and stamped.envelope_id
        logged = [e for e in hub.read(md.session_id) if isinstance(e, Envelope) and e.event_type == EV_TEXT]
        assert [(e.sender_id, e.event_data["text"]) for e in logged] == [("a", "hello")]
        assert [m["text"] for m in port.view("b")] == ["[a] hello"]  # named, as AG2's discussion view
        assert port.turn_input("b") == "hello"  # what b's turn answers
        assert port.turn_input("a") is None  # a's own message is nobody's question to a
        await port.post(_text(md.session_id, "b", "hi a"))
        assert [m["text"] for m in port.view("c")] == ["[a] hello", "[b] hi a"]
        assert port.turn_input("a") == "hi a"
        return hub
    run(go())


def test_a_refused_post_raises_and_changes_nothing():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ("a", "b", "c"))
        port = HubPort(hub, md.session_id)
        before = hub.sessions[md.session_id].last_seq
        with pytest.raises(ProtocolError, match="not a participant"):
            await port.post(_text(md.session_id, "mallory", "hi"))
        assert hub.sessions[md.session_id].last_seq == before
    run(go())


def test_an_accepted_roster_change_is_in_the_next_roster():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ("a", "b", "c"))
        port = HubPort(hub, md.session_id)
        assert [r["agent_id"] for r in port.roster()] == ["a", "b", "c"]
        add = Envelope(md.session_id, "a", None, EV_PARTICIPANT_ADDED,
                       {"agent_id": "d", "role": "participant", "description": "the newcomer"})
        port.check_roster_change(add)
        # a second add of the same agent, after the first one queued in this turn, is refused
        with pytest.raises(ProtocolError):
            port.check_roster_change(Envelope(md.session_id, "a", None, EV_PARTICIPANT_ADDED,
                                              {"agent_id": "d", "role": "participant", "description": ""}), [add])
        await port.post(add)
        roster = port.roster()
        assert [r["agent_id"] for r in roster] == ["a", "b", "c", "d"]
        assert roster[-1] == {"agent_id": "d", "role": "participant", "description": "the newcomer"}
        remove = Envelope(md.session_id, "b", None, EV_PARTICIPANT_REMOVED, {"agent_id": "c"})
        port.check_roster_change(remove)
        await port.post(remove)
        assert [r["agent_id"] for r in port.roster()] == ["a", "b", "d"]
        assert port.metadata().participant_ids == ["a", "b", "d"]
    run(go())


def test_a_fixed_roster_refuses_every_change_and_keeps_the_roster():
    async def go():
        hub = await new_hub()
        md = await active(hub, "workflow", ("a", "b", "c"))
        port = HubPort(hub, md.session_id)
        add = Envelope(md.session_id, "a", None, EV_PARTICIPANT_ADDED,
                       {"agent_id": "d", "role": "participant", "description": ""})
        with pytest.raises(ProtocolError, match="participants of a workflow session are fixed by its flow"):
            port.check_roster_change(add)
        with pytest.raises(ProtocolError, match="fixed by its flow"):
            await port.post(add)
        assert [r["agent_id"] for r in port.roster()] == ["a", "b", "c"]
        # a session the hub does not know: refused the same way, naming no kind
        with pytest.raises(ProtocolError, match="participants of a session session are fixed"):
            HubPort(hub, "s_missing").check_roster_change(add)
    run(go())


def test_telemetry_through_the_port_is_stored_beside_the_session():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ("a", "b", "c"))
        port = HubPort(hub, md.session_id)
        live: list[tuple[str, dict]] = []
        hub.subscribe_telemetry(lambda sid, rec: live.append((sid, rec)))
        assert await port.emit_telemetry("a", {"event": "thought", "payload": "hmm"})
        assert port.record_telemetry("b", {"event": "progress", "step": 1})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert not port.record_telemetry("b", {"event": "not-an-event"})  # dropped, as the hub drops it
        port.store_telemetry({"agent_id": "c", "at": port.clock(), "event": "handshake"})
        await asyncio.sleep(0)  # the synchronous ones are staged in this tick's group commit: it runs now
        stored = [(t["agent_id"], t["event"]) for t in hub.store.telemetry(md.session_id)]
        assert stored == [("a", "thought"), ("b", "progress"), ("c", "handshake")]
        assert [sid for sid, _ in live] == [md.session_id] * 3
    run(go())


def test_a_chatroom_opened_through_the_port_is_a_session_on_the_same_hub():
    async def go():
        hub = await new_hub()
        md = await active(hub, "discussion", ("a", "b", "c"))
        room = await HubPort(hub, md.session_id).open_chatroom("a", "side", ["b"])
        assert room.session_id != md.session_id and room.name == "side"
        assert hub.metadata(room.session_id).participant_ids == ["a", "b"]
        assert room.creator_id == "a"
    run(go())


def test_the_roster_last_shown_is_per_session_and_forgotten_when_it_ends():
    async def go():
        hub = await new_hub()
        one = await active(hub, "discussion", ("a", "b", "c"))
        two = await active(hub, "discussion", ("a", "b", "c"))
        p1, p2 = HubPort(hub, one.session_id), HubPort(hub, two.session_id)
        assert p1.last_shown("a") is None
        p1.shown("a", p1.roster())
        assert p1.last_shown("a") == p1.roster()
        assert HubPort(hub, one.session_id).last_shown("a") == p1.roster()  # kept by the hub, not by one port
        assert p2.last_shown("a") is None and p1.last_shown("b") is None
        await hub.close(one.session_id)
        p1.shown("b", p1.roster())  # a delivery after the end forgets the session
        assert p1.last_shown("a") is None and p1.last_shown("b") is None
    run(go())


class _Unsaid:
    """A discussion adapter with every method of the protocol but `membership` (written before it
    was declared): its roster reads as fixed, and nothing else about it changes."""

    def __init__(self) -> None:
        from turnflow.runtime.adapters.discussion import DiscussionAdapter

        self._d = DiscussionAdapter()
        self.manifest = self._d.manifest
        for name in ("initial_state", "validate_create", "validate_send", "fold", "on_accepted", "expected_next",
                     "turn_count", "default_view_policy", "extract_turn_input", "build_round_envelope",
                     "render_envelope"):
            setattr(self, name, getattr(self._d, name))


def test_an_adapter_that_does_not_say_membership_keeps_a_fixed_roster_and_its_own_rounds():
    async def go():
        hub = await new_hub()
        hub.adapters[("panel", 1)] = _Unsaid()
        md = await hub.open_session("panel", ["a", "b", "c"], creator_id="a")
        for p in ("b", "c"):
            await hub.ack(md.session_id, p)
        adapter = hub.sessions[md.session_id].adapter
        assert adapter.membership is False
        assert getattr(adapter, "silent_rounds", False) is False  # an empty round stays an error, as before
        port = HubPort(hub, md.session_id)
        add = Envelope(md.session_id, "a", None, EV_PARTICIPANT_ADDED,
                       {"agent_id": "d", "role": "participant", "description": ""})
        with pytest.raises(ProtocolError, match="fixed by its flow"):
            port.check_roster_change(add)
        with pytest.raises(ProtocolError, match="fixed by its flow"):
            await port.post(add)
        await port.post(_text(md.session_id, "a", "hello"))  # its own rules run as they did
        assert [m["text"] for m in port.view("b")] == ["[a] hello"]  # (a discussion's view: named)
    run(go())
