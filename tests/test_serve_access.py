"""Who may do what on a hub: AG2 1.2.1's access rules (`Hub._authorize_request` and the checks
of `_post_envelope_impl`, `create_channel`, `register_identity`, `_dispatch_frame` for `hello`,
`_handle_receipt`), each driven with AG2's unchanged `HubClient` (or raw frames) against AG2's
own hub and against `turnflow serve` (tests/test_serve_rules.py's harness): both must refuse
the same requests with the same error class and, except where docs/serve.md names a
difference, the same message. Each scenario states the outcomes it expects, so it cannot pass
by both hubs answering alike by accident.

The rules, as AG2's hub applies them to a wire connection:

1. discovery (`get_agent`, `get_resume`, `get_skill`, `get_rule`, `find_agent_id`, `names_for`,
   `list_agents`) and `register` are open to any connection, one with no agent bound included;
2. an op acting as an agent (`set_resume`, `set_skill`, `set_rule`, `unregister`,
   `create_channel`, `can_send`, `pending_turns_for`, `report_turn_failure`, `list_channels`
   naming one, `post_envelope`'s sender) needs that agent bound to the connection:
   `access_denied` "connection is not bound to agent 'ID'"; an agent that unregistered is bound
   no more;
3. an op on a channel (`get_channel`, `close_channel`, `read_wal`, `find_envelope_by_causation`)
   needs a participant bound: `access_denied` "connection has no participant in channel 'ID'",
   `not_found` for an unknown channel; `report_turn_failure` needs its agent among the
   participants, an unknown channel answered the same (`access_denied`);
4. `list_channels` without an agent lists the channels of the agents bound (none: empty);
5. a post: `ag2.channel.*` events but the invite answers are the hub's only; the audience only
   participants; the sender a participant ("channel 'ID' only accepts sends from participants"),
   for an invite answer too; a channel id nobody knows `not_found`;
6. `create_channel`: a participant listed twice, none, or not registered is refused (in that
   order, before the kind); `register`: a name taken or of an agent id's shape, a
   `remote_agent` passport (`access_denied`);
7. task ops: a malformed task id, then an op acting as an owner not bound or on a task with no
   agent bound (`access_denied`); turnflow refuses every task op after these (it has no task
   mirror: docs/serve.md);
8. `hello`: an unknown name `not_found`; an `auth_claim` that is not an object, or a scheme
   other than the agent's, `auth_failed`;
9. a receipt moves the cursor of an agent bound to the connection only: one acking another's
   delivery changes nothing (the agent is replayed it on attach)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("websockets")
ag2net = pytest.importorskip("ag2.network")

from serve_process import ServeProcess  # noqa: E402
from test_serve_rules import World, both  # noqa: E402

TEXT = "ag2.msg.text"
UNKNOWN = "f" * 32


@pytest.fixture(scope="module")
def turnflow_url(tmp_path_factory):
    server = ServeProcess(str(tmp_path_factory.mktemp("access") / "hub.db"))
    yield server.url
    server.stop()


async def _unbound(w: World):
    """A HubClient connected to the hub with no agent bound."""
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink

    c = HubClient(WsLink(w.url), rpc_timeout=20)
    await c.open()
    w.clients.append(c)
    return c


def _envelope(cid, sender, event_type=TEXT, data=None, audience=None):
    return {"envelope": {"channel_id": cid, "sender_id": sender, "event_type": event_type,
                         "event_data": {"text": "x"} if data is None else data, "audience": audience}}


class Calls:
    """Raw requests through HubClient._rpc, outcomes with agent and channel ids shown as names."""

    def __init__(self, w: World) -> None:
        self.w, self.out, self.channels = w, {}, {}

    async def __call__(self, label, client, op, params):
        outcome = await self.w.attempt(client._rpc(op, params))
        if outcome[0] == "ok" and not isinstance(outcome[1], bool):  # (a bool answer kept: can_send's)
            outcome = ("ok", None) if outcome[1] is None else ("ok", type(outcome[1]).__name__)
        text = outcome[1] if isinstance(outcome[1], str) else outcome[1]
        if isinstance(text, str):
            for cid, name in self.channels.items():
                text = text.replace(cid, name)
        self.out[label] = (outcome[0], text)


def test_who_may_act_as_an_agent_and_on_a_channel_is_ag2s(turnflow_url):
    """Rules 1-4: mallory (another agent's connection) and a connection with no agent try every
    op on alice's behalf and on alice and bob's channel."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "mallory"):
                await w.add(name)
            ok, cid = await w.open("alice", "conversation", "bob")
            a, m = w.id("alice"), w.id("mallory")
            call = Calls(w)
            call.channels = {cid: "CID"}
            u = await _unbound(w)
            for op, params in (("get_agent", {"name_or_id": p + "alice"}), ("get_resume", {"agent_id": a}),
                               ("get_skill", {"agent_id": a}), ("get_rule", {"agent_id": a}),
                               ("find_agent_id", {"name": p + "alice"}), ("names_for", {"agent_ids": [a]}),
                               ("list_agents", {"limit": 1})):
                await call(f"unbound {op}", u, op, params)
            for who, c in (("mallory", w.client("mallory")), ("unbound", u)):
                for op, params in (
                        ("set_resume", {"agent_id": a, "resume": {}}), ("set_skill", {"agent_id": a, "skill_md": "x"}),
                        ("set_rule", {"agent_id": a, "rule": {}}), ("unregister", {"agent_id": a}),
                        ("create_channel", {"creator_id": a, "manifest_type": "conversation", "participants": [m]}),
                        ("can_send", {"channel_id": cid, "sender_id": a}), ("pending_turns_for", {"agent_id": a}),
                        ("report_turn_failure", {"channel_id": cid, "agent_id": a, "envelope_id": "1", "error": "e"}),
                        ("list_channels", {"agent_id": a}), ("post_envelope", _envelope(cid, a)),
                        ("get_channel", {"channel_id": cid}), ("close_channel", {"channel_id": cid}),
                        ("read_wal", {"channel_id": cid}),
                        ("find_envelope_by_causation", {"channel_id": cid, "sender_id": a, "causation_id": "1"}),
                        ("get_channel", {"channel_id": UNKNOWN}), ("read_wal", {"channel_id": UNKNOWN})):
                    await call(f"{who} {op}" + (" unknown" if params.get("channel_id") == UNKNOWN else ""), c, op, params)
                await call(f"{who} list_channels of its own", c, "list_channels", {})
            mc = w.client("mallory")
            await call("mallory report_turn_failure own", mc, "report_turn_failure",
                       {"channel_id": cid, "agent_id": m, "envelope_id": "1", "error": "e"})
            await call("mallory report_turn_failure unknown", mc, "report_turn_failure",
                       {"channel_id": UNKNOWN, "agent_id": m, "envelope_id": "1", "error": "e"})
            await call("mallory can_send own", mc, "can_send", {"channel_id": cid, "sender_id": m})
            await call("alice can_send", w.client("alice"), "can_send", {"channel_id": cid, "sender_id": a})
            await call("mallory unregisters", mc, "unregister", {"agent_id": m})
            await call("gone set_rule", mc, "set_rule", {"agent_id": m, "rule": {}})
            await call("gone create_channel", mc, "create_channel",
                       {"creator_id": m, "manifest_type": "conversation", "participants": [a]})
            await call("gone list_channels", mc, "list_channels", {})
            await call("alice list_channels", w.client("alice"), "list_channels", {})
            return call.out
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    denied = ("AccessDeniedError", "connection is not bound to agent 'alice'")
    no_part = ("AccessDeniedError", "connection has no participant in channel 'CID'")
    missing = ("NotFoundError", "channel not found: " + UNKNOWN)
    expected = {f"unbound {op}": ("ok", kind) for op, kind in (
        ("get_agent", "dict"), ("get_resume", "dict"), ("get_skill", None), ("get_rule", "dict"),
        ("find_agent_id", "str"), ("names_for", "dict"), ("list_agents", "list"))}
    expected["unbound get_skill"] = ("ok", None)
    for who in ("mallory", "unbound"):
        for op in ("set_resume", "set_skill", "set_rule", "unregister", "create_channel", "can_send", "pending_turns_for",
                   "report_turn_failure", "list_channels", "post_envelope"):
            expected[f"{who} {op}"] = denied
        for op in ("get_channel", "close_channel", "read_wal", "find_envelope_by_causation"):
            expected[f"{who} {op}"] = no_part
        expected[f"{who} get_channel unknown"] = expected[f"{who} read_wal unknown"] = missing
        expected[f"{who} list_channels of its own"] = ("ok", "list")
    expected.update({
        "mallory report_turn_failure own": ("AccessDeniedError", "agent is not a participant of channel 'CID'"),
        "mallory report_turn_failure unknown": ("AccessDeniedError",
                                                f"agent is not a participant of channel '{UNKNOWN}'"),
        "mallory can_send own": ("ok", False), "alice can_send": ("ok", True), "mallory unregisters": ("ok", None),
        "gone set_rule": ("AccessDeniedError", "connection is not bound to agent 'mallory'"),
        "gone create_channel": ("AccessDeniedError", "connection is not bound to agent 'mallory'"),
        "gone list_channels": ("ok", "list"), "alice list_channels": ("ok", "list")})
    assert turnflow == expected


def test_posts_opens_and_registrations_are_refused_where_ag2_refuses_them(turnflow_url):
    """Rules 5 and 6: mallory, bound but not a participant, posts to alice and bob's channel (a
    text, an invite answer); alice posts the hub's own events and addresses mallory; alice opens
    channels with participants AG2's hub refuses; registrations AG2's hub refuses."""
    async def scenario(url, p):
        w = World(url, p)
        try:
            for name in ("alice", "bob", "mallory"):
                await w.add(name)
            ok, cid = await w.open("alice", "conversation", "bob")
            a, b, m = w.id("alice"), w.id("bob"), w.id("mallory")
            call = Calls(w)
            call.channels = {cid: "CID"}
            mc, ac = w.client("mallory"), w.client("alice")
            for et in (TEXT, "ag2.packet", "ag2.channel.invite.ack", "ag2.channel.invite.reject"):
                await call(f"mallory posts {et}", mc, "post_envelope", _envelope(cid, m, et, {}))
            await call("mallory posts to nowhere", mc, "post_envelope", _envelope(UNKNOWN, m))
            await call("mallory posts to nowhere, addressed", mc, "post_envelope", _envelope(UNKNOWN, m, audience=[a]))
            for et in ("ag2.channel.invite", "ag2.channel.opened", "ag2.channel.closed", "ag2.channel.expired",
                       "ag2.channel.made_up"):
                await call(f"alice posts {et}", ac, "post_envelope", _envelope(cid, a, et, {}))
            await call("alice addresses mallory", ac, "post_envelope", _envelope(cid, a, audience=[m]))
            await call("alice addresses nobody known", ac, "post_envelope", _envelope(cid, a, audience=[UNKNOWN]))
            for label, participants, kind in (("twice", [b, b], "conversation"), ("none", [], "conversation"),
                                              ("unknown", [UNKNOWN], "conversation"),
                                              ("twice, unknown kind", [b, b], "party"),
                                              ("unknown kind", [b], "party")):
                await call(f"open {label}", ac, "create_channel",
                           {"creator_id": a, "manifest_type": kind, "participants": participants})
            u = await _unbound(w)
            for label, passport in (("taken", {"name": p + "alice"}), ("id shape", {"name": "a" * 32}),
                                    ("an agent's id", {"name": a}),
                                    ("remote_agent", {"name": p + "far", "kind": "remote_agent"})):
                await call(f"register {label}", u, "register", {"passport": passport, "resume": {}})
                await call(f"bound register {label}", ac, "register", {"passport": passport, "resume": {}})
            return call.out, await w.texts(cid)
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    outsider = ("ProtocolError", "channel 'CID' only accepts sends from participants, got 'mallory'")
    taken = ("ProtocolError", "name 'alice' already registered (agent_id=alice); unregister it before re-registering.")
    shaped = ("ProtocolError", f"name '{'a' * 32}' is, or has the shape of, an agent id")
    remote = ("AccessDeniedError", "this hub does not accept remote_agent registration over the wire")
    expected = {
        **{f"mallory posts {et}": outsider for et in (TEXT, "ag2.packet", "ag2.channel.invite.ack",
                                                       "ag2.channel.invite.reject")},
        "mallory posts to nowhere": ("NotFoundError", "channel not found: " + UNKNOWN),
        "mallory posts to nowhere, addressed": ("NotFoundError", "channel not found: " + UNKNOWN),
        **{f"alice posts {et}": ("ProtocolError", f"'{et}' is emitted only by the hub")
           for et in ("ag2.channel.invite", "ag2.channel.opened", "ag2.channel.closed", "ag2.channel.expired",
                      "ag2.channel.made_up")},
        "alice addresses mallory": ("ProtocolError", "audience must list only participants of the channel"),
        "alice addresses nobody known": ("ProtocolError", "audience must list only participants of the channel"),
        "open twice": ("ProtocolError", "participant listed twice: 'bob'"),
        "open none": ("ProtocolError", "channel requires at least one participant"),
        "open unknown": ("NotFoundError", "participant not registered: " + UNKNOWN),
        "open twice, unknown kind": ("ProtocolError", "participant listed twice: 'bob'"),
        "open unknown kind": ("NotFoundError", "no adapter registered for 'party'@v1"),
        "register taken": taken, "bound register taken": taken,
        "register id shape": shaped, "bound register id shape": shaped,
        "register an agent's id": ("ProtocolError", "name 'alice' is, or has the shape of, an agent id"),
        "bound register an agent's id": ("ProtocolError", "name 'alice' is, or has the shape of, an agent id"),
        "register remote_agent": remote, "bound register remote_agent": remote}
    assert turnflow == (expected, [])


def test_task_ops_refuse_whom_ag2_refuses_before_turnflow_refuses_them_all(turnflow_url):
    """Rule 7: a task id of another shape, then an owner not bound (`observe_task`,
    `record_observation`) or no agent bound at all (the ops on a task) are refused as AG2's hub
    refuses them; what AG2's hub would then do, turnflow refuses as unsupported."""
    ops = ("observe_task", "record_observation", "update_task", "fire_task_event", "checkpoint_task",
           "read_task_checkpoint")

    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice")
            await w.add("mallory")
            a = w.id("alice")
            call = Calls(w)
            u, mc = await _unbound(w), w.client("mallory")
            for op in ops:
                params = {"task_id": "t-1", "owner_id": a, "capability": "c", "outcome": "completed",
                          "kind": "mirror_failed", "payload": {"owner_id": a}, "state": {},
                          "metadata": {"task_id": "t-1", "owner_id": a, "capability": "c"}}
                await call(f"unbound {op}", u, op, params)
                await call(f"mallory {op}", mc, op, params)
                await call(f"bad id {op}", mc, op, {**params, "task_id": "no spaces"})
                await call(f"bad id type {op}", mc, op, {**params, "task_id": 7})
            return call.out
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    owner = ("AccessDeniedError", "connection is not bound to agent 'alice'")
    nobody = ("AccessDeniedError", "connection has no bound agent")
    expected = {}
    for op in ops:
        expected[f"bad id {op}"] = ("ProtocolError", "invalid task_id: 'no spaces'")
        expected[f"bad id type {op}"] = ("ProtocolError", "invalid task_id: 7")
        expected[f"unbound {op}"] = owner if op in ("observe_task", "record_observation") else nobody
        expected[f"mallory {op}"] = owner if op in ("observe_task", "record_observation", "fire_task_event") else None
    refused_alike = {k: v for k, v in expected.items() if v is not None}
    assert {k: ag2[k] for k in refused_alike} == {k: turnflow[k] for k in refused_alike} == refused_alike
    unsupported = {k: turnflow[k] for k, v in expected.items() if v is None}
    assert unsupported == {f"mallory {op}": ("ProtocolError", f"turnflow serve does not support the task op '{op}' "
                                             "(docs/serve.md)") for op in ops if expected[f"mallory {op}"] is None}
    assert all(ag2[k][0] != "AccessDeniedError" for k in unsupported)  # (AG2's hub goes on to act, or fails on params)


async def _frames(ws, until, timeout=5.0):
    """Frames read until `until(frame)` is true (that one included), or until `timeout`."""
    got = []
    try:
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
            got.append(frame)
            if until(frame):
                return got
    except asyncio.TimeoutError:
        return got


def test_hello_and_receipts_act_only_for_who_may(turnflow_url):
    """Rules 8 and 9, in raw frames: hellos AG2's hub refuses; mallory (and a connection with no
    agent) acks bob's delivery of alice's text as if bob: bob's cursor does not move, so when bob
    attaches again the text is replayed to him."""
    from websockets.asyncio.client import connect

    async def scenario(url, p):
        w = World(url, p)
        try:
            await w.add("alice")
            await w.add("mallory")
            out = {}
            async with connect(url) as bob_ws, connect(url) as mallory_ws, connect(url) as anon:
                await bob_ws.send(json.dumps({"kind": "request", "request_id": "reg", "op": "register",
                                              "params": {"passport": {"name": p + "bob"}, "resume": {}}}))
                bob = (await _frames(bob_ws, lambda f: f.get("request_id") == "reg"))[-1]["result"]["agent_id"]
                w.names[bob] = "bob"
                opening = asyncio.ensure_future(w.client("alice").create_channel(
                    creator_id=w.id("alice"), manifest_type="conversation", participants=[bob]))
                invite = (await _frames(bob_ws, lambda f: f.get("kind") == "notify"))[-1]["envelope"]
                cid = invite["channel_id"]
                await bob_ws.send(json.dumps({"kind": "request", "request_id": "ack", "op": "post_envelope",
                                              "params": _envelope(cid, bob, "ag2.channel.invite.ack", {})}))
                await opening
                assert await w.post("alice", cid, "for bob") == "ok"
                text = (await _frames(bob_ws, lambda f: f.get("envelope", {}).get("event_type") == TEXT))[-1]
                receipt = {"kind": "receipt", "envelope_id": text["envelope"]["envelope_id"], "status": "ack",
                           "recipient_id": bob, "channel_id": cid, "reason": ""}
                await mallory_ws.send(json.dumps({"kind": "hello", "name": p + "mallory"}))
                out["mallory hello"] = (await _frames(mallory_ws, lambda f: True))[0]["kind"]
                await mallory_ws.send(json.dumps(receipt))
                await anon.send(json.dumps(receipt))
                for label, hello in (
                        ("unknown name", {"name": p + "nobody"}),
                        ("claim a list", {"name": p + "bob", "auth_claim": [1]}),
                        ("claim a string", {"name": p + "bob", "auth_claim": "token"}),
                        ("other scheme", {"name": p + "bob", "auth_scheme": "api_key", "auth_claim": {"token": "t"}})):
                    await anon.send(json.dumps({"kind": "hello", **hello}))
                    frame = (await _frames(anon, lambda f: True))[0]
                    out[label] = (frame["kind"], frame.get("code"), frame.get("message", "").replace(p, ""))
                for ws in (mallory_ws, anon):  # (each receipt read before bob attaches again: a ping behind it)
                    await ws.send(json.dumps({"kind": "ping"}))
                    await _frames(ws, lambda f: f.get("kind") == "pong")
            async with connect(url) as again:
                await again.send(json.dumps({"kind": "hello", "name": p + "bob", "since_envelope_id": ""}))
                seen = await _frames(again, lambda f: f.get("envelope", {}).get("event_type") == TEXT)
                out["replayed to bob"] = [f["kind"] if f["kind"] != "notify" else f["envelope"]["event_type"]
                                          for f in seen]
            return out
        finally:
            await w.close()

    ag2, turnflow = both(scenario, turnflow_url)
    assert ag2 == turnflow
    assert turnflow == {
        "mallory hello": "welcome",
        "unknown name": ("error", "not_found", "unknown name: nobody"),
        "claim a list": ("error", "auth_failed", "auth_claim must be a JSON object"),
        "claim a string": ("error", "auth_failed", "auth_claim must be a JSON object"),
        "other scheme": ("error", "auth_failed", "auth scheme 'api_key' does not match 'bob''s registered scheme 'none'"),
        "replayed to bob": ["welcome", "ag2.channel.invite", "ag2.channel.opened", TEXT]}
