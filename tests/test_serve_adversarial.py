"""A bounded adversarial run against `turnflow serve` (issue 30): hostile clients from 127.0.0.2 —
a read_wal flood from a participant that stops reading, a get_resume flood from a connection with
no key, a crowd of anonymous connections, a participant that stops reading while large texts
arrive, oversize frames, receipts for sessions that are not the sender's, a labels bomb — while
honest AG2 clients (AG2 1.2.1's unchanged `HubClient`, with API keys, from 127.0.0.1) run
consulting sessions. Loopback only; bounded in count (the numbers below) and time (~5 s).

It asserts what a user would notice: the hub's RSS stays under a stated bound, every honest session
completes with its question and answer, and nothing acknowledged is lost (every envelope id the
hub answered ok, honest or hostile, is in the store after the hub stops)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3

import pytest

websockets = pytest.importorskip("websockets")
pytest.importorskip("ag2.network")

from serve_process import ServeProcess  # noqa: E402
from test_serve_bounds import answer, closed_code, connect, open_conversation, register, request, rss_mib, text  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="reads the hub's RSS from /proc; hostile clients bind 127.0.0.2 (Linux)")

HONEST_SESSIONS = 12  # consulting sessions run one after another while the attacks go on
CROWD = 150  # anonymous connections
READ_WAL_FLOOD = 100  # read_wal requests for a 1 MiB log from a client that reads nothing
RESUME_FLOOD = 100  # get_resume requests for a 0.9 MB résumé from a connection with no key
BIG_TEXTS = 60  # texts of 256 KiB to a participant that reads nothing (15 MiB; the session quota is 8 MiB)
RSS_BOUND = 96  # MiB the hub may grow by during the whole run


def passport(name):
    from ag2.network.identity import AuthBlock, Passport

    return Passport(name=name, auth=AuthBlock(scheme="api_key", claim={"token": f"k-{name}"}))


async def honest(url, acked: list) -> list:
    """alice asks bob HONEST_SESSIONS questions; returns each session's (texts, close reason)."""
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    c1, c2 = HubClient(WsLink(url), rpc_timeout=30), HubClient(WsLink(url), rpc_timeout=30)
    out = []
    try:
        alice = await c1.register(Agent("alice", config=TestConfig("-")), passport("alice"))
        await c2.register(Agent("bob", config=TestConfig("an answer")), passport("bob"))
        for i in range(HONEST_SESSIONS):
            ch = await alice.open(type="consulting", target="bob")
            acked.append(await ch.send(f"question {i}"))
            closed = await alice.wait_for_channel_event(channel_id=ch.channel_id, timeout=30,
                                                        predicate=lambda e: e.event_type == "ag2.channel.closed")
            wal = await c1.read_wal(ch.channel_id)
            acked.extend(e.envelope_id for e in wal)
            out.append(([e.event_data["text"] for e in wal if e.event_type == "ag2.msg.text"],
                         closed.event_data.get("reason")))
    finally:
        await c1.close()
        await c2.close()
    return out


async def read_wal_flood(url, acked: list) -> int:
    async with connect(url, hostile=True) as a, connect(url, hostile=True) as b:
        m1, m2 = await register(a, "mallory", "k-mallory"), await register(b, "mallet", "k-mallet")
        sid = await open_conversation(a, m1, b, m2)
        for i in range(16):
            await a.send(request("post_envelope", text(sid, m1, "x" * (64 << 10), [m1]), f"p{i}"))
            reply = await answer(a, f"p{i}")
            if reply["ok"]:
                acked.append(reply["result"])
        async with connect(url, hostile=True, max_queue=1) as m:
            await m.send(json.dumps({"kind": "hello", "name": "mallory", "auth_scheme": "api_key",
                                     "auth_claim": {"token": "k-mallory"}, "since_envelope_id": None}))
            for i in range(READ_WAL_FLOOD):
                await m.send(request("read_wal", {"channel_id": sid}, f"w{i}"))
            return await closed_code(m, timeout=20)


async def resume_flood(url) -> int:
    async with connect(url, hostile=True) as a:
        await a.send(request("register", {"passport": {"name": "big", "auth": {
            "scheme": "api_key", "claim": {"token": "k-big"}}}, "resume": {"summary": "s" * 900_000}}, "reg"))
        big = (await answer(a, "reg"))["result"]["agent_id"]
        async with connect(url, hostile=True, max_queue=1) as m:
            try:
                for i in range(RESUME_FLOOD):
                    await m.send(request("get_resume", {"agent_id": big}, f"g{i}"))
            except websockets.ConnectionClosed:
                pass
            return await closed_code(m, timeout=20)


async def crowd(url) -> dict:
    codes: dict = {}
    held = []
    for _ in range(CROWD):
        try:
            held.append(await connect(url, hostile=True, open_timeout=10).__aenter__())
        except Exception as exc:
            codes[type(exc).__name__] = codes.get(type(exc).__name__, 0) + 1
    for code in await asyncio.gather(*(closed_code(ws, timeout=0.05) for ws in held)):  # 0.05 s each, at once
        codes[code] = codes.get(code, 0) + 1
    for ws in held:
        await ws.close()
    return codes


async def stalled_reader(url, acked: list) -> tuple:
    # b reads nothing, so the hub's answer to its closing frame waits behind megabytes b never
    # reads: b gives up on the closing handshake after 0.1 s, not websockets' default 10 s (the
    # whole run waited those 10 s at its end, then 1 s)
    async with connect(url, hostile=True) as a, connect(url, hostile=True, max_queue=1, close_timeout=0.1) as b:
        m1, m2 = await register(a, "mal3", "k-mal3"), await register(b, "mal4", "k-mal4")
        sid = await open_conversation(a, m1, b, m2)
        ok = refused = 0
        for i in range(BIG_TEXTS):
            await a.send(request("post_envelope", text(sid, m1, "y" * (256 << 10)), f"p{i}"))
            reply = await answer(a, f"p{i}")
            if reply["ok"]:
                ok += 1
                acked.append(reply["result"])
            else:
                refused += 1
        return ok, refused


async def odd_frames(url) -> tuple:
    async with connect(url, hostile=True) as a:
        me = await register(a, "mal5", "k-mal5")
        for i in range(100):
            await a.send(json.dumps({"kind": "receipt", "envelope_id": "9" * 16, "status": "ack", "recipient_id": me,
                                     "channel_id": f"{i}-" + "c" * 5000}))
        await a.send(request("create_channel", {"creator_id": me, "manifest_type": "conversation",
                                                "participants": [me], "labels": {"x": "l" * 500_000}}, "bomb"))
        bomb = await answer(a, "bomb")
        await a.send("z" * (2 << 20))  # over --max-frame-bytes
        return bomb, await closed_code(a, timeout=20)


def test_hostile_clients_do_not_grow_the_hub_stop_honest_ones_or_lose_anything(tmp_path):
    keys = tmp_path / "keys.json"
    names = ["alice", "bob", "mallory", "mallet", "big", "mal3", "mal4", "mal5"]
    keys.write_text(json.dumps({n: f"k-{n}" for n in names}))
    store = str(tmp_path / "hub.db")
    server = ServeProcess(store, "--auth-keys", str(keys), "--max-connections", "256")

    async def main():
        pid = server.proc.pid
        before, peak = rss_mib(pid), 0.0
        done = asyncio.Event()

        async def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_mib(pid))
                await asyncio.sleep(0.1)

        sampler = asyncio.create_task(sample())
        acked: list = []
        try:
            results = await asyncio.gather(honest(server.url, acked), read_wal_flood(server.url, acked),
                                           resume_flood(server.url), crowd(server.url),
                                           stalled_reader(server.url, acked), odd_frames(server.url))
        finally:
            done.set()
            await sampler
        return results, peak - before, acked

    try:
        (sessions, flood_code, resume_code, codes, stalled, odd), grown, acked = asyncio.run(
            asyncio.wait_for(main(), 120))
    finally:
        server.stop()
    print(f"hub RSS growth at its peak: {grown:.1f} MiB; crowd: {codes}; stalled reader: {stalled}")
    # the hub stayed bounded
    assert grown < RSS_BOUND, f"the hub grew by {grown:.0f} MiB"
    # honest AG2 clients kept working throughout
    assert sessions == [([f"question {i}", "an answer"], "consulting_complete")
                                     for i in range(HONEST_SESSIONS)]
    # each hostile client was stopped as documented
    assert flood_code == 1008 and resume_code == 1008
    assert set(codes) <= {None, 1008, 1013} and codes.get(1013, 0) >= CROWD - 256 // 8, codes
    ok, refused = stalled
    assert ok + refused == BIG_TEXTS and refused > 0
    bomb, oversize = odd
    assert bomb["ok"] is False and "--max-labels-bytes" in bomb["error_message"] and oversize == 1009
    # nothing acknowledged is lost
    with sqlite3.connect(store) as db:
        stored = {f"{gseq:016d}" for (gseq,) in db.execute("SELECT gseq FROM envelopes")}
    assert acked and set(acked) <= stored
    with sqlite3.connect(store + ".agents") as db:
        assert not [r for r in db.execute("SELECT channel_id FROM cursors") if len(r[0]) > 64]
