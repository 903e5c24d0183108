"""serve's ops keep only the AG2 encodings of a live session's log (`ops._Log.texts`), and for
find_envelope_by_causation who sent each envelope caused by another; the ops that need other
fields of the envelopes (pending_turns_for, replay) read them from the hub. These check those ops'
answers against the log as read_wal gives it, with the log kept as envelopes arrive and with it
read back from the store after a restart."""

from __future__ import annotations

import asyncio
import json

from turnflow.runtime.hub import Hub
from turnflow.runtime.store.sqlite import SQLiteStore
from turnflow.serve.ops import Auth, Ops
from turnflow.serve.registry import Registry, SQLiteBackend


class Conn:
    def __init__(self) -> None:
        self.endpoint_id, self.agents, self.sent = "e", set(), []

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))


def post(sid, sender, body, causation=None, data=None):
    return {"envelope": {"channel_id": sid, "sender_id": sender, "audience": None, "event_type": "ag2.msg.text",
                         "event_data": data or {"text": body}, "causation_id": causation}}


async def wal(ops, conn, sid):
    return json.loads((await ops.call(conn, "read_wal", {"channel_id": sid})))


async def find(ops, conn, sid, sender, cause):
    found = await ops.call(conn, "find_envelope_by_causation",
                           {"channel_id": sid, "sender_id": sender, "causation_id": cause})
    return None if found is None else json.loads(found)


def test_causation_lookups_pending_turns_and_replay_read_the_hubs_log(tmp_path):
    db = str(tmp_path / "hub.db")

    async def open_ops():
        hub = await Hub.open(SQLiteStore(db))
        return hub, Ops(hub, Registry(SQLiteBackend(db + ".agents")), Auth(), invite_timeout=5)

    async def first():
        hub, ops = await open_ops()
        a, b = Conn(), Conn()
        alice = (await ops.register(a, {"passport": {"name": "alice"}}))["agent_id"]
        bob = (await ops.register(b, {"passport": {"name": "bob"}}))["agent_id"]

        async def opened(kind):
            create = asyncio.ensure_future(ops.call(a, "create_channel", {
                "creator_id": alice, "manifest_type": kind, "participants": [bob]}))
            while not b.sent:
                await asyncio.sleep(0.01)
            sid = b.sent.pop()["envelope"]["channel_id"]
            await ops.call(b, "post_envelope", {"envelope": {"channel_id": sid, "sender_id": bob, "audience": None,
                                                             "event_type": "ag2.channel.invite.ack", "event_data": {}}})
            await create
            b.sent.clear()
            return sid

        sid, turned = await opened("conversation"), await opened("consulting")
        asked = await ops.call(a, "post_envelope", post(turned, alice, "turn taken"))
        q = await ops.call(a, "post_envelope", post(sid, alice, "question"))
        # alice's text holds bob's would-be causation key in its data: a candidate, not an answer
        decoy = await ops.call(a, "post_envelope", post(sid, alice, "", q, {"causation_id": q, "text": "x"}))
        answer = await ops.call(b, "post_envelope", post(sid, bob, "answer", q))
        log = await wal(ops, a, sid)
        by_id = {e["envelope_id"]: e for e in log}
        got = {
            "bob<-q": await find(ops, b, sid, bob, q),
            "alice<-q": await find(ops, a, sid, alice, q),
            "bob<-answer": await find(ops, b, sid, bob, answer),
            "bob<-unknown": await find(ops, b, sid, bob, "999999"),
        }
        assert got == {"bob<-q": by_id[answer], "alice<-q": by_id[decoy], "bob<-answer": None, "bob<-unknown": None}
        turns = await ops.call(b, "pending_turns_for", {"agent_id": bob})
        assert [(t["channel_id"], t["triggering_envelope_id"]) for t in turns] == [(turned, asked)]
        assert turns[0]["expected_at"] == {e["envelope_id"]: e for e in await wal(ops, a, turned)}[asked]["created_at"]
        assert await ops.call(a, "pending_turns_for", {"agent_id": alice}) == []
        ops.registry.close()
        await hub.aclose()
        return sid, turned, bob, q, answer, asked, log

    sid, turned, bob, q, answer, asked, log = asyncio.run(asyncio.wait_for(first(), 60))

    async def restarted():
        hub, ops = await open_ops()
        b = Conn()
        frame = {"name": "bob", "auth_scheme": "none", "auth_claim": {}, "since_envelope_id": "0"}
        await ops.hello(b, frame)
        replayed = [m["envelope"] for m in b.sent if m.get("kind") == "notify"]
        again = await wal(ops, b, sid)
        found = await find(ops, b, sid, bob, q)
        turns = await ops.call(b, "pending_turns_for", {"agent_id": bob})
        ops.registry.close()
        await hub.aclose()
        return replayed, again, found, turns

    replayed, again, found, turns = asyncio.run(asyncio.wait_for(restarted(), 60))
    assert again == log
    assert found == {e["envelope_id"]: e for e in log}[answer]
    assert [(t["channel_id"], t["triggering_envelope_id"]) for t in turns] == [(turned, asked)]
    # replay: what bob has not acked, from others, in log order (his own answer is not sent back)
    assert [e["envelope_id"] for e in replayed if e["channel_id"] == sid] == \
        [e["envelope_id"] for e in log if e["sender_id"] != bob]
