"""What an AG2 1.2.1 program sees through its unchanged `HubClient` on `turnflow serve`, compared
with AG2's own hub, for answers beyond the sessions' runs (tests/test_serve.py) and the rules
(tests/test_serve_rules.py, whose harness this reuses): each scenario runs against both hubs and
must give the same outcome, and states the outcome it expects, so it cannot pass by both hubs
answering alike by accident."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("websockets")
ag2net = pytest.importorskip("ag2.network")

from serve_process import ServeProcess  # noqa: E402
from test_serve import RELAY  # noqa: E402
from test_serve_rules import World, both  # noqa: E402


@pytest.fixture(scope="module")
def turnflow_url(tmp_path_factory):
    server = ServeProcess(str(tmp_path_factory.mktemp("parity") / "hub.db"))
    yield server.url
    server.stop()


def test_each_kinds_channel_record_carries_ag2s_manifest(turnflow_url):
    """`ChannelMetadata.manifest` of a session of each kind, as `create_channel`, `get_channel` and
    `list_channels` return it: AG2's adapter's manifest (participants' schema, knobs schema, view
    policy name), with the session's expectations."""
    import turnflow
    from turnflow.interop.ag2 import bind_agents

    spec = turnflow.compile(RELAY)[0]

    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "carol"):
                await w.add(name)
            c, me = w.client("alice"), w.id("alice")
            ids = {n: w.id(n) for n in ("alice", "bob", "carol")}
            opens = {"consulting": ["bob"], "conversation": ["bob"], "discussion": ["bob", "carol"],
                     "workflow": ["bob", "carol"]}
            seen = {}
            for kind, targets in opens.items():
                knobs = bind_agents(spec["knobs"], ids) if kind == "workflow" else None
                md = await c.create_channel(creator_id=me, manifest_type=kind, participants=[ids[t] for t in targets],
                                            knobs=knobs)
                got = (await c.get_channel(md.channel_id)).manifest.to_dict()
                listed = [m.manifest.to_dict() for m in await c.list_channels(agent_id=me)
                          if m.channel_id == md.channel_id]
                assert [md.manifest.to_dict(), got] == listed * 2
                seen[kind] = {k: got[k] for k in ("participants", "knobs_schema", "default_view_policy")}
            return seen
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    two = {"min": 2, "max": 2, "roles": ["initiator", "respondent"]}
    many = {"min": 2, "max": None, "roles": []}
    assert turnflow_seen == {
        "consulting": {"participants": two, "knobs_schema": {}, "default_view_policy": "full_transcript"},
        "conversation": {"participants": two, "knobs_schema": {}, "default_view_policy": "windowed_summary"},
        "discussion": {"participants": many, "knobs_schema": {"ordering": "str"},
                       "default_view_policy": "named_windowed_summary"},
        "workflow": {"participants": many, "knobs_schema": {"graph": "TransitionGraph"},
                     "default_view_policy": "named_windowed_summary"}}


def test_discovery_of_an_unknown_agent_id_answers_as_ag2s_hub(turnflow_url):
    """`get_skill` of an id nobody registered (or that unregistered) is `None`, as for an agent
    without a skill; `get_resume` and `get_rule` raise `NotFoundError` naming what is missing."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice")
            bob = await w.add("bob")
            gone = bob.agent_id
            await bob.unregister()
            c = w.client("alice")
            return [await w.attempt(call(agent_id)) for agent_id in ("0" * 32, gone)
                    for call in (c.get_skill, c.get_resume, c.get_rule)]
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    def shown(outcomes):
        return [(kind, text if text is None else text.replace("0" * 32, "ID")) for kind, text in outcomes]

    ag2, turnflow_seen = shown(ag2), shown(turnflow_seen)
    assert ag2 == turnflow_seen
    assert turnflow_seen == [("ok", None), ("NotFoundError", "resume not found: ID"),
                             ("NotFoundError", "rule not found: ID"),
                             ("ok", None), ("NotFoundError", "resume not found: bob"),
                             ("NotFoundError", "rule not found: bob")]


def test_can_send_on_an_unknown_channel_is_false(turnflow_url):
    """`can_send` answers whether a send would be accepted: for a channel id the hub does not know,
    `False` (as for a closed channel), not an error; a sender not bound stays `access_denied`."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice")
            await w.add("bob")
            ok, cid = await w.open("alice", "conversation", "bob")
            c = w.client("alice")
            unknown = await w.attempt(c.can_send("f" * 32, w.id("alice")))
            live = await w.attempt(c.can_send(cid, w.id("alice")))
            await c.close_channel(cid)
            closed = await w.attempt(c.can_send(cid, w.id("alice")))
            not_bound = await w.attempt(c.can_send("f" * 32, w.id("bob")))
            return unknown, live, closed, not_bound[0]
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    assert turnflow_seen == (("ok", False), ("ok", True), ("ok", False), "AccessDeniedError")


def test_packets_and_context_sets_are_informational_outside_workflows(turnflow_url):
    """In a consulting, conversation or discussion session AG2's adapters take a round from
    `ag2.msg.text` only: an `ag2.packet` or `ag2.context.set` is accepted from any participant at
    any time as information, takes no turn and completes nothing; they are read back as posted."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "carol"):
                await w.add(name)
            seen = {}
            for kind, targets in (("consulting", ["bob"]), ("conversation", ["bob"]),
                                  ("discussion", ["bob", "carol"])):
                ok, cid = await w.open("alice", kind, *targets)

                async def post(sender, event_type, data, cid=cid):
                    env = ag2net.Envelope(channel_id=cid, sender_id=w.id(sender), event_type=event_type,
                                          event_data=data, audience=None)
                    outcome = await w.attempt(w.client(sender).post_envelope(env))
                    return outcome if outcome[0] != "ok" else "ok"

                out = [await post("bob", "ag2.packet", {"body": "b0", "routing": {"kind": "text"}}),
                       await post("alice", "ag2.context.set", {"key": "k", "value": 1}),
                       await post("alice", "ag2.packet", {"body": "a0"}),
                       await w.attempt(w.client("alice").can_send(cid, w.id("alice"))),
                       await w.attempt(w.client("bob").can_send(cid, w.id("bob"))),
                       await w.post("alice", cid, "a1"),
                       await post("bob", "ag2.packet", {"body": "b1"}),
                       await w.post("bob", cid, "b1")]
                md = await w.client("alice").get_channel(cid)
                wal = await w.client("alice").read_wal(cid)
                seen[kind] = (out, md.state.value, md.close_reason,
                              [(e.event_type, w.names[e.sender_id]) for e in wal
                               if not e.event_type.startswith("ag2.channel.")])
            return seen
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    rounds = [("ag2.packet", "bob"), ("ag2.context.set", "alice"), ("ag2.packet", "alice"), ("ag2.msg.text", "alice"),
              ("ag2.packet", "bob"), ("ag2.msg.text", "bob")]
    answers = ["ok", "ok", "ok", ("ok", True), ("ok", False), "ok", "ok", "ok"]
    assert turnflow_seen == {"consulting": (answers, "closed", "consulting_complete", rounds),
                             "conversation": (answers[:4] + [("ok", True)] + answers[5:], "active", "", rounds),
                             "discussion": (answers, "active", "", rounds)}


def test_a_rejected_invite_is_in_the_channel_record(turnflow_url):
    """bob rejects his invite to a discussion: the opener's `create_channel` fails, and the channel
    record (`list_channels`, `get_channel`) says who rejected (`rejected_by`) and who had not
    answered yet (`pending_acks`), bob in the first and not in the second."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "carol"):
                await w.add(name)
            bob = w.agents["bob"]

            async def reject(envelope):
                if envelope.event_type == "ag2.channel.invite":
                    await bob.send_envelope(ag2net.Envelope(
                        channel_id=envelope.channel_id, sender_id=bob.agent_id,
                        event_type="ag2.channel.invite.reject", event_data={"reason": "busy"}, audience=None))
            bob.on_envelope(reject)
            opened = (await w.open("alice", "discussion", "bob", "carol"))[0]
            records = [(md.state.value, md.close_reason, [w.names[a] for a in md.rejected_by],
                        [w.names[a] for a in md.pending_acks])
                       for md in await w.client("alice").list_channels(include_terminal=True)]
            cid = (await w.client("alice").list_channels(include_terminal=True))[0].channel_id
            md = await w.client("carol").get_channel(cid)
            return opened, records, ([w.names[a] for a in md.rejected_by], [w.names[a] for a in md.pending_acks])
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    assert turnflow_seen == ("ProtocolError", [("closed", "invite_rejected", ["bob"], ["carol"])], (["bob"], ["carol"]))


def test_a_post_while_invitees_have_not_all_acked_waits_for_the_handshake(turnflow_url):
    """alice opens a discussion with bob and carol; carol acks 0.3 s late. alice posts to the
    channel (its id from bob's invite) meanwhile: AG2's hub holds the post until the handshake
    ends and then accepts it; when carol rejects instead, the held post is refused (closed)."""
    from ag2.network.client.handlers import _auto_ack_invite

    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "carol"):
                await w.add(name)
            carol, outcomes = w.agents["carol"], []
            for answer in ("ack", "reject"):
                invited = asyncio.Event()
                cids = []

                async def late(envelope, answer=answer, invited=invited, cids=cids):
                    if envelope.event_type != "ag2.channel.invite":
                        return
                    cids.append(envelope.channel_id)
                    invited.set()
                    await asyncio.sleep(0.3)  # (the early post, one round trip, is in well before)
                    if answer == "ack":
                        await _auto_ack_invite(envelope, carol)
                    else:
                        await carol.send_envelope(ag2net.Envelope(
                            channel_id=envelope.channel_id, sender_id=carol.agent_id,
                            event_type="ag2.channel.invite.reject", event_data={"reason": "busy"}, audience=None))
                carol.on_envelope(late)
                opening = asyncio.ensure_future(w.open("alice", "discussion", "bob", "carol"))
                await asyncio.wait_for(invited.wait(), 10)
                posted = await w.post("alice", cids[0], "early")
                opened = (await opening)[0]
                outcomes.append((posted if posted == "ok" else posted[0], opened, await w.texts(cids[0])))
            return outcomes
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    assert turnflow_seen == [("ok", "ok", ["early"]), ("ProtocolError", "ProtocolError", [])]


def test_can_send_asks_the_adapter_about_the_event_type(turnflow_url):
    """`can_send(channel_id, sender_id, event_type=...)` probes the adapter with that event type,
    as AG2's hub does: outside a workflow an `ag2.packet` or `ag2.context.set` is information any
    participant may send at any time, so it is sendable out of turn; a text is not. (Before
    session 14 turnflow serve ignored `event_type` and answered the turn rule alone.)"""
    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "carol"):
                await w.add(name)
            seen = {}
            for kind, targets in (("consulting", ["bob"]), ("discussion", ["bob", "carol"])):
                ok, cid = await w.open("alice", kind, *targets)
                bob = w.client("bob")
                seen[kind] = [await w.attempt(bob.can_send(cid, w.id("bob"), event_type=et))
                              for et in (None, "ag2.msg.text", "ag2.packet", "ag2.context.set", "custom.note")]
            return seen
        finally:
            await w.close()

    ag2, turnflow_seen = both(scenario, turnflow_url)
    assert ag2 == turnflow_seen
    out_of_turn = [("ok", False), ("ok", False), ("ok", True), ("ok", True), ("ok", True)]
    assert turnflow_seen == {"consulting": out_of_turn, "discussion": out_of_turn}
