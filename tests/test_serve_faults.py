"""`turnflow serve` under bad input and faults: malformed, unknown, mistyped and oversize frames,
requests from a connection that holds no agent, a client vanishing mid-session, a client that
stops reading; and a hypothesis fuzz of the frame decoder and every request op (bounded in time)."""

from __future__ import annotations

import asyncio
import json

import pytest

websockets = pytest.importorskip("websockets")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from serve_process import ServeProcess  # noqa: E402

from turnflow.serve import frames  # noqa: E402


@pytest.fixture
def served(tmp_path):
    server = ServeProcess(str(tmp_path / "hub.db"), "--max-frame-bytes", "65536", "--send-queue", "16")
    yield server
    server.stop()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def exchange(ws, message):
    await ws.send(message)
    return json.loads(await asyncio.wait_for(ws.recv(), 20))


def request(op, params, rid="r1"):
    return json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params})


def register(name):
    return request("register", {"passport": {"name": name}, "resume": {}, "skill_md": None, "rule": {}}, "reg-" + name)


def test_bad_frames_get_an_error_and_the_server_keeps_serving(served):
    from websockets.asyncio.client import connect

    async def main():
        out = {}
        async with connect(served.url) as ws:
            out["json"] = await exchange(ws, "{not json")
            out["array"] = await exchange(ws, "[1, 2]")
            out["kind"] = await exchange(ws, json.dumps({"kind": "launch"}))
            out["no_id"] = await exchange(ws, json.dumps({"kind": "request", "op": "get_agent"}))
            out["params"] = await exchange(ws, json.dumps({"kind": "request", "request_id": "p", "op": "get_agent",
                                                           "params": [1]}))
            out["field"] = await exchange(ws, request("get_agent", {"name_or_id": 7}, "f"))
            out["op"] = await exchange(ws, request("format_disk", {}, "o"))
            out["task"] = await exchange(ws, request("get_task", {"task_id": "t1"}, "t"))
            out["unbound"] = await exchange(ws, request("create_channel", {
                "creator_id": "0" * 32, "manifest_type": "consulting", "participants": ["x"]}, "u"))
            out["binary"] = await exchange(ws, b"\xff\xfe")
            out["hello"] = await exchange(ws, json.dumps({"kind": "hello", "name": "nobody"}))
            out["ping"] = await exchange(ws, json.dumps({"kind": "ping"}))
        async with connect(served.url, max_size=None) as ws:
            await ws.send("x" * 70000)
            try:
                await asyncio.wait_for(ws.recv(), 20)
                out["oversize"] = "answered"
            except websockets.ConnectionClosed as exc:
                out["oversize"] = exc.rcvd.code if exc.rcvd else None
        async with connect(served.url) as ws:
            out["after"] = await exchange(ws, register("alice"))
        return out

    out = run(main())
    for key in ("json", "array", "kind", "no_id", "binary"):
        assert out[key]["kind"] == "error" and out[key]["code"] == "protocol_error", (key, out[key])
    for key, code in (("params", "protocol_error"), ("field", "protocol_error"), ("op", "protocol_error"),
                      ("task", "protocol_error"), ("unbound", "access_denied")):
        assert out[key]["kind"] == "response" and out[key]["ok"] is False, (key, out[key])
        assert out[key]["error_code"] == code, (key, out[key])
    assert "does not support" in out["task"]["error_message"]
    assert out["hello"] == {"kind": "error", "code": "not_found", "message": "unknown name: nobody", "envelope_id": None}
    assert out["ping"] == {"kind": "pong"}
    assert out["oversize"] == 1009  # message too big: the connection is closed, the server is not
    assert out["after"]["ok"] is True and out["after"]["result"]["name"] == "alice"


def test_a_client_vanishing_mid_session_leaves_the_session_usable(served):
    pytest.importorskip("ag2.network")
    from ag2 import Agent
    from ag2.network import Envelope, HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    async def main():
        c1, c2 = HubClient(WsLink(served.url), rpc_timeout=20), HubClient(WsLink(served.url), rpc_timeout=20)
        try:
            alice = await c1.register(Agent("alice", config=TestConfig("x")))
            bob = await c2.register(Agent("bob", config=TestConfig("x")))
            bob.on_envelope(_ack_only(bob))
            ch = await alice.open(type="conversation", target="bob")
            c2._client_link._ws.transport.abort()  # bob's process "dies": no close handshake
            for i in range(3):
                await alice.send_envelope(Envelope(channel_id=ch.channel_id, sender_id=alice.agent_id, audience=None,
                                                   event_type="ag2.msg.text", event_data={"text": f"m{i}"}))
            wal = await c1.read_wal(ch.channel_id)
            return [e.event_data.get("text") for e in wal if e.event_type == "ag2.msg.text"]
        finally:
            await c1.close()
            c2._receive_task.cancel()  # (bob's side is gone: nothing to close politely)

    assert run(main()) == ["m0", "m1", "m2"]


def _ack_only(ac):
    from ag2.network.client.handlers import _auto_ack_invite

    async def handler(envelope):
        if envelope.event_type == "ag2.channel.invite":
            await _auto_ack_invite(envelope, ac)

    return handler


def test_a_client_that_stops_reading_is_disconnected_and_never_delays_the_others(served):
    """bob registers, acks the invite, then stops reading; alice keeps posting large texts to him.
    His queue (16 frames) fills, the hub disconnects him, and every one of alice's posts is answered."""
    from websockets.asyncio.client import connect

    async def main():
        async with connect(served.url) as a, connect(served.url, max_queue=1) as b:
            alice = (await exchange(a, register("alice")))["result"]["agent_id"]
            bob = (await exchange(b, register("bob")))["result"]["agent_id"]
            await a.send(request("create_channel", {"creator_id": alice, "manifest_type": "conversation",
                                                    "participants": [bob]}, "open"))
            invite = json.loads(await b.recv())
            assert invite["kind"] == "notify" and invite["envelope"]["event_type"] == "ag2.channel.invite"
            sid = invite["envelope"]["channel_id"]
            ack = {"channel_id": sid, "sender_id": bob, "audience": None, "event_type": "ag2.channel.invite.ack",
                   "event_data": {}}
            await b.send(request("post_envelope", {"envelope": ack}, "ack"))
            opened = json.loads(await a.recv())
            while opened["kind"] == "notify":  # alice is told the session opened, then answered
                opened = json.loads(await a.recv())
            assert opened["request_id"] == "open" and opened["ok"] is True, opened
            # from here on bob reads nothing
            answered = 0
            big = "y" * 20000  # 300 of them: 6 MB, within the default --max-session-bytes
            for i in range(300):
                env = {"channel_id": sid, "sender_id": alice, "audience": None, "event_type": "ag2.msg.text",
                       "event_data": {"text": big}}
                reply = await exchange(a, request("post_envelope", {"envelope": env}, f"p{i}"))
                while reply.get("kind") == "notify":  # alice's own lifecycle notifications
                    reply = json.loads(await asyncio.wait_for(a.recv(), 20))
                assert reply["request_id"] == f"p{i}" and reply["ok"] is True, reply
                answered += 1
            received = 0  # bob reads again: what reached him before the hub gave up on him, then the end
            try:
                while True:
                    frame = json.loads(await asyncio.wait_for(b.recv(), 60))
                    received += frame["kind"] == "notify"
            except websockets.ConnectionClosed:
                pass
            return answered, received

    answered, received = run(main())
    assert answered == 300
    assert received < 300  # dropped, not delivered to the end
    served.stop()
    assert "send queue full: the client is not reading" in served.stderr()


# -- fuzz ----------------------------------------------------------------------------------------

_json = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
                     | st.text(max_size=12),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), st.binary(max_size=64), _json.map(json.dumps),
                 st.fixed_dictionaries({"kind": st.sampled_from(["hello", "request", "receipt", "ping", "notify"])},
                                       optional={"request_id": _json, "op": _json, "params": _json, "name": _json,
                                                 "auth_claim": _json, "status": _json, "envelope_id": _json,
                                                 "extra": _json}).map(json.dumps)))
def test_fuzz_frame_decoder_raises_only_frame_errors(message):
    try:
        frame = frames.decode(message)
    except frames.FrameError as exc:
        assert exc.code == "protocol_error" and exc.message
    else:
        assert frame["kind"] in ("hello", "request", "receipt", "ping", "pong")


class _FakeConn:
    def __init__(self):
        self.endpoint_id = "e"
        self.agents = set()
        self.sent = []

    def send(self, text):
        self.sent.append(json.loads(text))


def test_fuzz_every_request_op_answers_once_with_a_protocol_error_code(tmp_path):
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import UNSUPPORTED, Auth, Ops
    from turnflow.serve.registry import Registry, SQLiteBackend
    from turnflow.serve.server import Limits, Server

    loop = asyncio.new_event_loop()
    hub = loop.run_until_complete(Hub.open(SQLiteStore(str(tmp_path / "fuzz.db"))))
    ops = Ops(hub, Registry(SQLiteBackend(str(tmp_path / "fuzz.agents"))), Auth(), invite_timeout=0.01)
    server = Server(ops, Limits())
    conn = _FakeConn()
    me = loop.run_until_complete(ops.register(conn, {"passport": {"name": "me"}}))["agent_id"]
    peer = loop.run_until_complete(ops.register(_FakeConn(), {"passport": {"name": "peer"}}))["agent_id"]
    names = sorted(ops.table) + sorted(UNSUPPORTED) + ["nope"]
    ids = st.sampled_from([me, peer, "nobody", "", "0" * 32])
    value = st.one_of(ids, _json, st.lists(ids, max_size=3),
                      st.sampled_from(["consulting", "discussion", "conversation", "workflow", "ag2.msg.text",
                                       "ag2.channel.invite.ack", "ag2.channel.closed", "text"]))
    keys = st.sampled_from(["agent_id", "name", "name_or_id", "agent_ids", "creator_id", "manifest_type", "participants",
                            "channel_id", "envelope", "sender_id", "event_type", "event_data", "audience", "since",
                            "until", "knobs", "ttl", "limit", "passport", "resume", "rule", "skill_md", "reason",
                            "causation_id", "labels", "intent", "error", "envelope_id", "manifest_version",
                            "task_id", "priority", "depth", "idempotency_key", "ttl_seconds", "required_acks"])
    params = st.dictionaries(keys, value, max_size=8)

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(names), params, st.dictionaries(keys, value, max_size=6))
    def one(op, p, envelope):
        if op == "post_envelope" and "envelope" not in p:
            p["envelope"] = envelope
        conn.sent.clear()
        loop.run_until_complete(asyncio.wait_for(server.request(conn, "rid", op, p), 10))
        assert len(conn.sent) == 1 and conn.sent[0]["request_id"] == "rid"
        answer = conn.sent[0]
        assert answer["ok"] or answer["error_code"] in ("protocol_error", "not_found", "access_denied", "auth_failed"), \
            (op, p, answer)

    conn.agents.add(me)
    try:
        one()
    finally:
        ops.registry.close()
        loop.run_until_complete(hub.aclose())
        loop.close()
