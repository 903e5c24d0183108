"""AG2's per-agent `Rule` on `turnflow serve` (issue 30, observation 2), compared with AG2's own
hub: each scenario runs with AG2 1.2.1's unchanged `HubClient` against AG2's hub (`serve_ws` over
`Hub.open(MemoryKnowledgeStore())`, in this process) and against `turnflow serve` (a subprocess),
and both must give the same answers — the errors AG2's `RuleBasedArbiter` raises, with its
messages (agent ids shown as names), and the same outcomes otherwise. Each scenario also states
the answer it expects, so it cannot pass by both hubs ignoring the rule."""

from __future__ import annotations

import asyncio
import itertools

import pytest

pytest.importorskip("websockets")
ag2net = pytest.importorskip("ag2.network")

from serve_process import ServeProcess  # noqa: E402

TEXT = "ag2.msg.text"
_prefix = itertools.count()


@pytest.fixture(scope="module")
def turnflow_url(tmp_path_factory):
    server = ServeProcess(str(tmp_path_factory.mktemp("rules") / "hub.db"))
    yield server.url
    server.stop()


async def _on_ag2_hub(scenario, prefix):
    from ag2.knowledge import MemoryKnowledgeStore
    from ag2.network import Hub
    from ag2.network.transport.ws import serve_ws

    hub = await Hub.open(MemoryKnowledgeStore(), ttl_sweep_interval=0, expectation_sweep_interval=0,
                         invite_ack_timeout=20)
    try:
        async with serve_ws(hub, "127.0.0.1", 0, ping_interval=None) as server:
            return await scenario(f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}", prefix)
    finally:
        await hub.close()


def both(scenario, turnflow_url):
    """The scenario's outcome on AG2's hub and on turnflow serve (fresh names on each)."""
    prefix = f"t{next(_prefix)}-"

    async def main():
        return (await asyncio.wait_for(_on_ag2_hub(scenario, prefix), 90),
                await asyncio.wait_for(scenario(turnflow_url, prefix), 90))

    return asyncio.run(main())


class World:
    """Agents of one scenario, each on its own AG2 client; ids shown as names in outcomes."""

    def __init__(self, url, prefix):
        self.url, self.prefix = url, prefix
        self.clients, self.agents, self.names, self.seen = [], {}, {}, {}

    async def add(self, name, rule=None, default_handler=False):
        from ag2 import Agent
        from ag2.network import HubClient
        from ag2.network.transport.ws import WsLink
        from ag2.testing import TestConfig

        c = HubClient(WsLink(self.url), rpc_timeout=20)
        self.clients.append(c)
        ac = await c.register(Agent(self.prefix + name, config=TestConfig(f"{name} answers")), rule=rule)
        self.agents[name], self.names[ac.agent_id] = ac, name
        self.seen[name] = []
        if not default_handler:
            ac.on_envelope(self._recorder(name, ac))
        return ac

    def _recorder(self, name, ac):
        from ag2.network.client.handlers import _auto_ack_invite

        async def handler(envelope):
            if envelope.event_type == "ag2.channel.invite":
                await _auto_ack_invite(envelope, ac)
            elif envelope.event_type == TEXT:
                self.seen[name].append(envelope.event_data.get("text"))
        return handler

    def id(self, name):
        return self.agents[name].agent_id

    def client(self, name):
        return self.clients[list(self.agents).index(name)]

    def shown(self, exc):
        text = str(exc).replace(self.prefix, "")
        for agent_id, name in self.names.items():
            text = text.replace(agent_id, name)
        return type(exc).__name__, text

    async def attempt(self, coro):
        try:
            result = await coro
        except ag2net.NetworkError as exc:
            return self.shown(exc)
        return "ok", result

    async def post(self, sender, cid, text, audience=None):
        env = ag2net.Envelope(channel_id=cid, sender_id=self.id(sender), event_type=TEXT, event_data={"text": text},
                              audience=None if audience is None else [self.id(a) for a in audience])
        outcome = await self.attempt(self.client(sender).post_envelope(env))
        return outcome if outcome[0] != "ok" else "ok"

    async def open(self, creator, kind, *targets):
        outcome = await self.attempt(self.client(creator).create_channel(
            creator_id=self.id(creator), manifest_type=kind, participants=[self.id(t) for t in targets]))
        return outcome if outcome[0] != "ok" else ("ok", outcome[1].channel_id)

    async def texts(self, cid):
        return [e.event_data.get("text") for e in await self.clients[0].read_wal(cid) if e.event_type == TEXT]

    async def close(self):
        for c in self.clients:
            await c.close()


def rule(inbound_from=None, outbound_to=None, max_concurrent_channels=0, max_pending=1000):
    from ag2.network.rule import AccessBlock, InboxBlock, LimitsBlock, Rule

    return Rule(access=AccessBlock(inbound_from=inbound_from or ["*"], outbound_to=outbound_to or ["*"]),
                limits=LimitsBlock(max_concurrent_channels=max_concurrent_channels,
                                   inbox=InboxBlock(max_pending=max_pending)))


def test_inbound_from_refuses_a_session_from_an_agent_the_invitee_does_not_accept(turnflow_url):
    """mallory opens a consulting session to bob, whose rule accepts only alice: refused before
    anything is written (bob's default handler never sees an invite); alice's session runs."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("bob", rule([p + "alice"]), default_handler=True)
            await w.add("alice")
            await w.add("mallory")
            refused = await w.open("mallory", "consulting", "bob")
            opened = await w.open("alice", "consulting", "bob")
            bobs = await w.client("bob").list_channels(agent_id=w.id("bob"))
            return refused, opened[0], len(bobs)
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    assert turnflow == (("AccessDeniedError", "invitee 'bob' does not accept inbound from 'mallory'"), "ok", 1)


def test_outbound_to_refuses_invites_and_addressed_sends_but_not_broadcasts(turnflow_url):
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice", rule(outbound_to=[p + "b*"]))
            await w.add("bob")
            await w.add("carol")
            to_carol = await w.open("alice", "conversation", "carol")
            ok, cid = await w.open("alice", "conversation", "bob")
            first = await w.post("alice", cid, "to bob", audience=["bob"])
            await w.client("alice").set_rule(w.id("alice"), rule(outbound_to=["nobody"]))
            addressed = await w.post("alice", cid, "to bob again", audience=["bob"])
            broadcast = await w.post("alice", cid, "to everyone")
            version = (await w.client("bob").get_rule(w.id("alice"))).version
            return to_carol, ok, first, addressed, broadcast, await w.texts(cid), version
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    denied = ("AccessDeniedError", "sender 'alice' not permitted to send to 'bob'")
    assert turnflow == (("AccessDeniedError", "sender 'alice' not permitted to send to 'carol'"), "ok", "ok", denied,
                        "ok", ["to bob", "to everyone"], 2)


def test_max_concurrent_channels_caps_the_creators_open_sessions(turnflow_url):
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice", rule(max_concurrent_channels=1))
            await w.add("bob")
            ok, first = await w.open("alice", "conversation", "bob")
            second = await w.open("alice", "conversation", "bob")
            by_bob = (await w.open("bob", "conversation", "alice"))[0]  # the cap is alice's alone
            await w.client("alice").close_channel(first)
            third = (await w.open("alice", "conversation", "bob"))[0]
            return ok, second, by_bob, third
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    assert turnflow == ("ok", ("AccessDeniedError", "creator 'alice' exceeded max_concurrent_channels (1 >= 1)"),
                        "ok", "ok")


def test_inbox_max_pending_refuses_sends_while_the_recipient_has_not_answered(turnflow_url):
    """bob's rule allows one outstanding notification: alice's second text is refused with AG2's
    InboxFull (wire code `error`: a bare NetworkError on the client) until bob posts."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice")
            await w.add("bob", rule(max_pending=1))
            _, cid = await w.open("alice", "conversation", "bob")
            outcomes = [await w.post("alice", cid, "one"), await w.post("alice", cid, "two"),
                        await w.post("bob", cid, "bob answers"), await w.post("alice", cid, "three")]
            return outcomes, await w.texts(cid)
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    assert turnflow == (["ok", ("NetworkError", "recipient 'bob' inbox at capacity (1 >= 1)"), "ok", "ok"],
                        ["one", "bob answers", "three"])


def test_inbound_from_filters_notifications_from_other_participants(turnflow_url):
    """In a discussion bob (who accepts only alice) is not notified of carol's text; it is in the
    log all the same."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("bob", rule([p + "alice"]))
            await w.add("alice")
            await w.add("carol")
            _, cid = await w.open("alice", "discussion", "bob", "carol")
            for who, text in (("alice", "a1"), ("bob", "b1"), ("carol", "c1"), ("alice", "a2")):
                assert await w.post(who, cid, text) == "ok"
            for _ in range(400):
                if "a2" in w.seen["bob"] and "a2" in w.seen["carol"]:
                    break
                await asyncio.sleep(0.025)
            return w.seen["bob"], w.seen["carol"], await w.texts(cid)
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    assert turnflow == (["a1", "a2"], ["a1", "b1", "a2"], ["a1", "b1", "c1", "a2"])


def test_rules_read_back_complete_and_a_rule_of_another_shape_is_refused(turnflow_url):
    """get_rule answers the whole rule with AG2's defaults filled in; a rule with a field AG2 does
    not define is refused (AG2's hub: a TypeError answered with code `error`; turnflow:
    `protocol_error`, a subclass of the same NetworkError) and nothing is registered."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            alice = await w.add("alice", rule([p + "bob"]))
            full = (await w.client("alice").get_rule(alice.agent_id)).to_dict()
            refused = None
            try:
                await w.clients[0]._rpc("register", {"passport": {"name": p + "eve"}, "resume": {},
                                                     "rule": {"access": {"inbound": ["*"]}}})
            except ag2net.NetworkError as exc:
                refused = isinstance(exc, ag2net.NetworkError)
            try:
                await w.clients[0].get_agent(p + "eve")
                stored = True
            except ag2net.NotFoundError:
                stored = False
            return full, refused, stored
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    full, refused, stored = turnflow
    assert full["access"]["inbound_from"] == [next(iter(full["access"]["inbound_from"]))]
    assert full["limits"]["inbox"] == {"max_pending": 1000, "overflow": "reject", "high_water": None}
    assert (refused, stored) == (True, False)
