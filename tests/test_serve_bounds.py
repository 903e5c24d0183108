"""`turnflow serve` bounded in bytes, not frames (docs/serve.md, "Limits"): one regression test per
observation of issue 30's items 1 (memory), 5 (lockout, descriptors) and 6 (unbounded state), each
against a real `turnflow serve` process on 127.0.0.1 with the hub's RSS read from /proc. Sizes are
scaled down from the issue's (a 1 MiB log instead of 4 MB, ...) so each test runs in seconds; the
bounds asserted are stated with each test."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sqlite3
import subprocess
import time

import pytest

websockets = pytest.importorskip("websockets")

import serve_process  # noqa: E402
from serve_process import ServeProcess  # noqa: E402

MiB = 1 << 20
try:
    import uvloop  # noqa: F401
except ImportError:  # (Windows, or the serve extra not installed)
    HAS_UVLOOP = False
else:
    HAS_UVLOOP = True
needs_uvloop = pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed (the serve extra installs it, not on Windows)")
HOSTILE = "127.0.0.2"  # hostile clients connect from here (all of 127/8 is loopback), honest ones from 127.0.0.1

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the hub's RSS from /proc")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Peak:
    """`async with Peak(pid) as peak:` the hub's RSS growth at its highest while the block runs
    (`peak.grown`, MiB), sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        self.pid, self.before, self.top = pid, 0.0, 0.0
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        while True:
            self.top = max(self.top, rss_mib(self.pid))
            await asyncio.sleep(0.05)

    async def __aenter__(self) -> "Peak":
        self.before = self.top = rss_mib(self.pid)
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc) -> None:
        assert self._task is not None
        self._task.cancel()
        self.top = max(self.top, rss_mib(self.pid))

    @property
    def grown(self) -> float:
        return self.top - self.before


def request(op, params, rid):
    return json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params})


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def connect(url, *, hostile=False, **kw):
    from websockets.asyncio.client import connect as ws_connect

    if hostile:
        kw["local_addr"] = (HOSTILE, 0)
    return ws_connect(url, max_size=None, ping_interval=None, **kw)


async def answer(ws, rid, timeout=30):
    """The response to request `rid` (notifications before it are skipped)."""
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if frame.get("request_id") == rid:
            return frame


async def register(ws, name, token=None):
    passport = {"name": name}
    if token is not None:
        passport["auth"] = {"scheme": "api_key", "claim": {"token": token}}
    await ws.send(request("register", {"passport": passport, "resume": {}, "skill_md": None, "rule": {}}, "reg"))
    reply = await answer(ws, "reg")
    assert reply["ok"], reply
    return reply["result"]["agent_id"]


async def open_conversation(a, alice, b, bob):
    """alice opens a conversation with bob; bob's connection acks the invite. Returns its id."""
    await a.send(request("create_channel", {"creator_id": alice, "manifest_type": "conversation",
                                            "participants": [bob]}, "open"))
    invite = json.loads(await asyncio.wait_for(b.recv(), 20))
    while invite.get("envelope", {}).get("event_type") != "ag2.channel.invite":  # (earlier sessions' news)
        invite = json.loads(await asyncio.wait_for(b.recv(), 20))
    sid = invite["envelope"]["channel_id"]
    ack = {"channel_id": sid, "sender_id": bob, "audience": None, "event_type": "ag2.channel.invite.ack",
           "event_data": {}}
    await b.send(request("post_envelope", {"envelope": ack}, "ack"))
    opened = await answer(a, "open")
    assert opened["ok"], opened
    return sid


def text(sid, sender, body, audience=None):
    return {"envelope": {"channel_id": sid, "sender_id": sender, "audience": audience, "event_type": "ag2.msg.text",
                         "event_data": {"text": body}}}


async def closed_code(ws, timeout=30):
    """Read until the hub closes the connection; its close code (None: it stayed open)."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except websockets.ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None
    except asyncio.TimeoutError:
        return None


async def open_or_closed_code(ws, timeout=30):
    """Whether the hub still serves `ws` (None: a request sent now is answered after whatever it
    had queued) or closed it (its close code), without waiting out a silence."""
    try:
        await ws.send(request("list_agents", {}, "still-open?"))
        await answer(ws, "still-open?", timeout)
        return None
    except websockets.ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None


@pytest.fixture
def keys(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"alice": "k-alice", "bob": "k-bob", "big": "k-big"}))
    return str(path)


# -- 1. memory bounded in bytes ------------------------------------------------------------------

def test_a_client_that_stops_reading_and_floods_read_wal_is_closed_before_the_hub_grows(tmp_path):
    """A 1 MiB log, 100 `read_wal` from a participant that reads nothing: 100 MiB of answers. The
    hub grows by less than 24 MiB (its send buffer for one client is 8 MiB by default) and closes
    the client with 1008. (Before: +191 MiB, the client still connected.)"""
    server = ServeProcess(str(tmp_path / "hub.db"))

    async def main():
        async with connect(server.url) as a, connect(server.url) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            sid = await open_conversation(a, alice, b, bob)
            for i in range(16):  # 16 x 64 KiB, addressed to alice alone (bob is not flooded)
                await a.send(request("post_envelope", text(sid, alice, "x" * (64 << 10), [alice]), f"p{i}"))
                assert (await answer(a, f"p{i}"))["ok"]
            async with Peak(server.proc.pid) as peak, connect(server.url, max_queue=1) as m:
                # alice again, on a connection that stops reading
                await m.send(json.dumps({"kind": "hello", "name": "alice", "auth_scheme": "none", "auth_claim": {},
                                         "since_envelope_id": None}))
                assert json.loads(await m.recv())["kind"] == "welcome"
                for i in range(100):
                    await m.send(request("read_wal", {"channel_id": sid}, f"w{i}"))
                code = await closed_code(m, timeout=10)  # (the hub handles them meanwhile)
            grown = peak.grown
            await b.send(request("read_wal", {"channel_id": sid}, "mine"))  # the others go on
            return grown, code, len((await answer(b, "mine"))["result"])

    try:
        grown, code, entries = run(main())
    finally:
        server.stop()
    assert grown < 24, f"the hub grew by {grown:.0f} MiB"
    assert code == 1008
    assert entries == 3 + 16


def test_an_unauthenticated_connection_flooding_get_resume_is_closed_on_a_keyed_hub(tmp_path, keys):
    """A keyed hub, an agent with a 0.9 MB résumé, a connection with no key that reads nothing and
    sends 100 `get_resume`: closed (1008) after a few requests, the hub grows by less than 16 MiB.
    (Before: every request answered into its queue, +190 MiB.)"""
    server = ServeProcess(str(tmp_path / "hub.db"), "--auth-keys", keys)

    async def main():
        async with connect(server.url) as a:
            await a.send(request("register", {"passport": {"name": "big", "auth": {"scheme": "api_key", "claim": {
                "token": "k-big"}}}, "resume": {"summary": "s" * 900_000}, "skill_md": None, "rule": {}}, "reg"))
            big = (await answer(a, "reg"))["result"]["agent_id"]
            async with Peak(server.proc.pid) as peak, connect(server.url, hostile=True, max_queue=1) as m:
                for i in range(100):
                    try:
                        await m.send(request("get_resume", {"agent_id": big}, f"g{i}"))
                    except websockets.ConnectionClosed:
                        break
                code = await closed_code(m, timeout=10)
            return peak.grown, code

    try:
        grown, code = run(main())
    finally:
        server.stop()
    assert grown < 16, f"the hub grew by {grown:.0f} MiB"
    assert code == 1008


def test_a_participant_that_stops_reading_while_large_texts_arrive_leaves_the_hub_bounded(tmp_path):
    """bob stops reading; alice posts 160 texts of 256 KiB (40 MiB) to their conversation. The
    session refuses posts past its 8 MiB quota; the hub grows by less than 48 MiB (the session's
    log held while live, about twice its quota, plus at most bob's 8 MiB send buffer, past which
    he would be closed with 1008). (Before: +120 MiB and more, every text accepted.)"""
    server = ServeProcess(str(tmp_path / "hub.db"))

    async def main():
        async with connect(server.url) as a, connect(server.url, max_queue=1) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            sid = await open_conversation(a, alice, b, bob)
            answers = []
            async with Peak(server.proc.pid) as peak:
                for i in range(160):
                    await a.send(request("post_envelope", text(sid, alice, "y" * (256 << 10)), f"p{i}"))
                    answers.append(await answer(a, f"p{i}"))
            grown = peak.grown
            await a.send(request("read_wal", {"channel_id": sid}, "wal"))
            wal = (await answer(a, "wal"))["result"]
            return grown, await open_or_closed_code(b), answers, wal

    try:
        grown, code, answers, wal = run(main())
    finally:
        server.stop()
    assert grown < 48, f"the hub grew by {grown:.0f} MiB"
    assert code in (None, 1008)  # what waits for bob is bounded by the quota (and his send buffer)
    ok = [r["result"] for r in answers if r["ok"]]
    refused = [r for r in answers if not r["ok"]]
    assert 20 < len(ok) < 40 and refused and all("--max-session-bytes" in r["error_message"] for r in refused)
    assert [e["envelope_id"] for e in wal if e["event_type"] == "ag2.msg.text"] == ok  # acked = stored, no more


def test_all_clients_backlogs_together_are_bounded_too(tmp_path):
    """`--total-send-bytes 4000000` with a per-client budget far above it: bob stops reading while
    alice posts 100 texts of 256 KiB; once all backlogs together pass 4 MB, bob is closed with 1013
    and alice's posts go on being answered."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--total-send-bytes", "4000000",
                          "--send-buffer-bytes", str(1 << 30), "--max-session-bytes", str(1 << 30))

    async def main():
        async with connect(server.url) as a, connect(server.url, max_queue=1) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            sid = await open_conversation(a, alice, b, bob)
            ok = 0
            for i in range(100):
                await a.send(request("post_envelope", text(sid, alice, "q" * (256 << 10)), f"p{i}"))
                ok += (await answer(a, f"p{i}"))["ok"]
            return ok, await closed_code(b, timeout=10)

    try:
        ok, code = run(main())
    finally:
        server.stop()
    assert ok == 100 and code == 1013
    assert "the hub's send buffers are full" in server.stderr()


def test_a_replay_longer_than_the_send_buffer_is_paced_not_dropped(tmp_path):
    """`--send-buffer-bytes 2000000`: bob is away while alice posts 24 texts of 256 KiB (6 MiB) to
    their conversation; bob's hello replays all of them at the pace he reads, and he is not closed."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--send-buffer-bytes", "2000000")

    async def main():
        async with connect(server.url) as a:
            alice = await register(a, "alice")
            async with connect(server.url) as b:
                bob = await register(b, "bob")
                sid = await open_conversation(a, alice, b, bob)
            sent = []
            for i in range(24):
                await a.send(request("post_envelope", text(sid, alice, f"{i:03d}" + "r" * (256 << 10)), f"p{i}"))
                reply = await answer(a, f"p{i}")
                assert reply["ok"], reply
                sent.append(reply["result"])
            async with connect(server.url, max_queue=1) as b:
                await b.send(json.dumps({"kind": "hello", "name": "bob", "auth_scheme": "none", "auth_claim": {},
                                         "since_envelope_id": ""}))
                got = []
                while len(got) < len(sent):
                    frame = json.loads(await asyncio.wait_for(b.recv(), 20))
                    if frame["kind"] == "notify" and frame["envelope"]["event_type"] == "ag2.msg.text":
                        got.append(frame["envelope"]["envelope_id"])
                        await asyncio.sleep(0.02)  # a slow reader
                await b.send(request("get_channel", {"channel_id": sid}, "still"))
                still = (await answer(b, "still"))["ok"]
            return sent, got, still

    try:
        sent, got, still = run(main())
    finally:
        server.stop()
    assert got == sent and still
    assert "send buffer full" not in server.stderr()


# -- 5. lockout and descriptors ------------------------------------------------------------------

def test_anonymous_connections_cannot_take_every_slot_of_a_keyed_hub(tmp_path, keys):
    """`--max-connections 64`: 64 connections with no key from one address hold at most an eighth
    of the slots (8); the rest are closed with 1013, and an honest client with its key still
    registers. A connection with no agent may only register or attach: `list_agents` is refused,
    and after 16 requests (or hellos with a wrong key) it is closed. (Before: the 64 took every
    slot, the honest client got 1013.)"""
    server = ServeProcess(str(tmp_path / "hub.db"), "--auth-keys", keys, "--max-connections", "64")

    async def main():
        held = []
        for _ in range(64):
            ws = await connect(server.url, hostile=True).__aenter__()
            held.append(ws)
        # (a refused one is closed right after its handshake; one that is not answers a request)
        codes = await asyncio.gather(*(open_or_closed_code(ws) for ws in held))
        refused = codes.count(1013)
        async with connect(server.url) as a:
            alice = await register(a, "alice", "k-alice")
            await a.send(request("list_agents", {}, "l"))
            listed = (await answer(a, "l"))["ok"]
        async with connect(server.url) as u:
            await u.send(request("list_agents", {}, "l"))
            anonymous = await answer(u, "l")
            for i in range(20):
                await u.send(request("find_agent_id", {"name": "alice"}, f"f{i}"))
            code = await closed_code(u, timeout=10)
        async with connect(server.url) as g:  # guessing alice's key
            for i in range(20):
                await g.send(json.dumps({"kind": "hello", "name": "alice", "auth_scheme": "api_key",
                                         "auth_claim": {"token": f"guess-{i}"}, "since_envelope_id": None}))
            guessed = await closed_code(g, timeout=10)
        for ws in held:
            await ws.close()
        return refused, alice, listed, anonymous, (code, guessed)

    try:
        refused, alice, listed, anonymous, code = run(main())
    finally:
        server.stop()
    assert refused == 64 - 8
    assert alice and listed
    assert anonymous["ok"] is False and anonymous["error_code"] == "access_denied"
    assert "authenticate first" in anonymous["error_message"]
    assert code == (1008, 1008)


def test_a_connection_without_an_agent_on_a_keyed_hub_is_closed_after_the_auth_timeout(tmp_path, keys):
    """`--auth-timeout 0.2` (the idle timeout stays 60 s): a connection that binds no agent is closed
    with 1008 within a few seconds (the hub looks once a second); one that registers with its key stays."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--auth-keys", keys, "--auth-timeout", "0.2")

    async def main():
        async with connect(server.url) as a:  # registered before the idle one connects: never 0.2 s without an agent
            await register(a, "alice", "k-alice")
            async with connect(server.url, hostile=True) as idle:
                t0 = time.monotonic()
                code = await closed_code(idle, timeout=10)
                took = time.monotonic() - t0
            await a.send(request("list_agents", {}, "l"))
            return code, took, (await answer(a, "l"))["ok"]

    try:
        code, took, still = run(main())
    finally:
        server.stop()
    assert code == 1008 and took < 5 and still


def test_connections_from_one_address_are_limited(tmp_path):
    """`--max-per-peer 4`: the fifth connection from 127.0.0.2 is closed with 1013; 127.0.0.1 is
    not affected."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--max-per-peer", "4")

    async def main():
        held = [await connect(server.url, hostile=True).__aenter__() for _ in range(5)]
        codes = list(await asyncio.gather(*(open_or_closed_code(ws) for ws in held)))  # all at once
        async with connect(server.url) as a:
            ok = await register(a, "alice")
        for ws in held:
            await ws.close()
        return codes, ok

    try:
        codes, ok = run(main())
    finally:
        server.stop()
    assert codes == [None] * 4 + [1013] and ok


@pytest.mark.parametrize("loop", ["asyncio", pytest.param("uvloop", marks=needs_uvloop)])
def test_with_few_descriptors_clients_get_1013_not_timeouts_and_stderr_no_tracebacks(tmp_path, monkeypatch, loop):
    """The hub under `ulimit -n 128` and 300 connections at once: it starts saying how many it can
    take (fewer than --max-connections), each client is either served or closed with 1013 within
    seconds (none times out), and stderr holds no traceback. (Before: 186 of 300 timed out, 160
    tracebacks of "Too many open files".) On either event loop: with uvloop's own accept loop
    (libuv's, which closes what it cannot take) 194 of 300 saw their handshake dropped."""
    real = subprocess.Popen

    def limited(*args, **kw):
        kw["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
        return real(*args, **kw)

    monkeypatch.setattr(serve_process.subprocess, "Popen", limited)
    server = ServeProcess(str(tmp_path / "hub.db"), "--loop", loop)
    monkeypatch.undo()

    async def main():
        outcome: dict[str, int] = {}
        held = []

        async def one():
            try:
                ws = await connect(server.url, open_timeout=8).__aenter__()
            except Exception as exc:  # (a refused or failed handshake)
                key = type(exc).__name__
            else:
                held.append(ws)
                code = await closed_code(ws, timeout=1.0)
                key = "served" if code is None else str(code)
            outcome[key] = outcome.get(key, 0) + 1

        t0 = time.monotonic()
        await asyncio.gather(*(one() for _ in range(300)))
        took = time.monotonic() - t0
        for ws in held:
            await ws.close()
        return outcome, took

    try:
        outcome, took = run(main())
    finally:
        server.stop()
    err = server.stderr()
    assert "Traceback" not in err, err[:2000]
    assert "open-file limit 128" in err and "connections" in err.splitlines()[0]
    assert f"event loop {loop}" in err.splitlines()[0]
    assert set(outcome) <= {"served", "1013"}, outcome
    assert outcome.get("served", 0) >= 8 and took < 30


# -- 6. unbounded state --------------------------------------------------------------------------

def test_labels_of_a_megabyte_are_refused_and_nothing_is_stored(tmp_path):
    """`create_channel` with 1 MB of labels: refused with protocol_error (16 KiB by default), no
    session created; small labels still work. (Before: stored, ~26 MB per session.)"""
    store = str(tmp_path / "hub.db")
    server = ServeProcess(store)

    async def main():
        async with connect(server.url) as a, connect(server.url) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            await a.send(request("create_channel", {"creator_id": alice, "manifest_type": "conversation",
                                                    "participants": [bob], "labels": {"x": "l" * 1_000_000}}, "big"))
            big = await answer(a, "big")
            sid = await open_conversation(a, alice, b, bob)
            return big, sid

    try:
        big, sid = run(main())
    finally:
        server.stop()
    assert big["ok"] is False and big["error_code"] == "protocol_error" and "--max-labels-bytes" in big["error_message"]
    with sqlite3.connect(store) as db:
        assert [r[0] for r in db.execute("SELECT session_id FROM sessions")] == [sid]


def test_receipts_for_channels_an_agent_is_not_in_are_not_kept(tmp_path):
    """200 receipts acking fresh 10 KB channel ids and a foreign session: nothing is written to the
    registry's cursors; a receipt for the agent's own session is. (Before: 200 rows of 10 KB.)"""
    store = str(tmp_path / "hub.db")
    server = ServeProcess(store)

    async def main():
        async with connect(server.url) as a, connect(server.url) as b, connect(server.url) as c:
            alice, bob, carol = await register(a, "alice"), await register(b, "bob"), await register(c, "carol")
            sid = await open_conversation(a, alice, b, bob)
            for i in range(200):
                await c.send(json.dumps({"kind": "receipt", "envelope_id": "0" * 16, "status": "ack",
                                         "recipient_id": carol, "channel_id": f"{i}-" + "c" * 10_000}))
            await c.send(json.dumps({"kind": "receipt", "envelope_id": "9" * 16, "status": "ack",
                                     "recipient_id": carol, "channel_id": sid}))
            await b.send(json.dumps({"kind": "receipt", "envelope_id": "0" * 15 + "1", "status": "ack",
                                     "recipient_id": bob, "channel_id": sid}))
            return bob, sid

    try:
        bob, sid = run(main())
    finally:
        server.stop()  # (the cursors are written at the latest when the hub stops)
    with sqlite3.connect(store + ".agents") as db:
        rows = db.execute("SELECT agent_id, channel_id, envelope_id FROM cursors").fetchall()
    assert rows == [(bob, sid, "0" * 15 + "1")]


def test_a_live_session_over_its_byte_quota_refuses_posts_and_other_sessions_go_on(tmp_path):
    """`--max-session-bytes 1000000`: posts past a million bytes are refused (protocol_error, not
    stored); another session of the same agents still takes posts."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--max-session-bytes", "1000000")

    async def main():
        async with connect(server.url) as a, connect(server.url) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            sid = await open_conversation(a, alice, b, bob)
            results = []
            for i in range(15):
                await a.send(request("post_envelope", text(sid, alice, "z" * 100_000, [alice]), f"p{i}"))
                results.append(await answer(a, f"p{i}"))
            other = await open_conversation(a, alice, b, bob)
            await a.send(request("post_envelope", text(other, alice, "fine", [alice]), "o"))
            return results, (await answer(a, "o"))["ok"]

    try:
        results, other_ok = run(main())
    finally:
        server.stop()
    assert [r["ok"] for r in results] == [True] * 10 + [False] * 5
    assert other_ok


def test_channels_per_agent_are_limited_and_a_closed_one_frees_its_place(tmp_path):
    """`--max-channels-per-agent 2`: a third live channel opened by alice is refused; after she
    closes one, she may open another."""
    server = ServeProcess(str(tmp_path / "hub.db"), "--max-channels-per-agent", "2")

    async def main():
        async with connect(server.url) as a, connect(server.url) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            first = await open_conversation(a, alice, b, bob)
            await open_conversation(a, alice, b, bob)
            await a.send(request("create_channel", {"creator_id": alice, "manifest_type": "conversation",
                                                    "participants": [bob]}, "third"))
            third = await answer(a, "third")
            await a.send(request("close_channel", {"channel_id": first}, "close"))
            assert (await answer(a, "close"))["ok"]
            return third, await open_conversation(a, alice, b, bob)

    try:
        third, fourth = run(main())
    finally:
        server.stop()
    assert third["ok"] is False and "--max-channels-per-agent" in third["error_message"]
    assert fourth


def test_live_channels_are_counted_again_after_a_restart(tmp_path):
    """`--max-channels-per-agent 1`: alice's live channel still counts after the hub restarts on
    the same store (a second is refused); once she closes it she may open another."""
    store = str(tmp_path / "hub.db")

    async def first(url):
        async with connect(url) as a, connect(url) as b:
            alice, bob = await register(a, "alice"), await register(b, "bob")
            await open_conversation(a, alice, b, bob)

    async def second(url):
        async with connect(url) as a, connect(url) as b:
            for ws, name in ((a, "alice"), (b, "bob")):
                await ws.send(json.dumps({"kind": "hello", "name": name, "auth_scheme": "none", "auth_claim": {},
                                          "since_envelope_id": None}))
                assert json.loads(await ws.recv())["kind"] == "welcome"
            await a.send(request("find_agent_id", {"name": "alice"}, "a"))
            alice = (await answer(a, "a"))["result"]
            await a.send(request("find_agent_id", {"name": "bob"}, "b"))
            bob = (await answer(a, "b"))["result"]
            await a.send(request("list_channels", {"agent_id": alice}, "l"))
            live = [c["channel_id"] for c in (await answer(a, "l"))["result"] if c["state"] == "active"]
            await a.send(request("create_channel", {"creator_id": alice, "manifest_type": "conversation",
                                                    "participants": [bob]}, "again"))
            again = await answer(a, "again")
            await a.send(request("close_channel", {"channel_id": live[0]}, "close"))
            assert (await answer(a, "close"))["ok"]
            return again, await open_conversation(a, alice, b, bob)

    server = ServeProcess(store, "--max-channels-per-agent", "1")
    try:
        run(first(server.url))
    finally:
        server.stop()
    server = ServeProcess(store, "--max-channels-per-agent", "1")
    try:
        again, after_close = run(second(server.url))
    finally:
        server.stop()
    assert again["ok"] is False and "--max-channels-per-agent" in again["error_message"]
    assert after_close


def test_what_ops_hold_for_a_session_is_released_at_close(tmp_path):
    """In process: after a session closes, the serve layer keeps no log, channel record, quota
    count or delivery cursor in memory for it."""
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import Registry, SQLiteBackend

    class Conn:
        def __init__(self):
            self.endpoint_id, self.agents, self.sent = "e", set(), []

        def send(self, text):
            self.sent.append(json.loads(text))

    async def main():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "hub.db")))
        ops = Ops(hub, Registry(SQLiteBackend(str(tmp_path / "hub.db.agents"))), Auth(), invite_timeout=5)
        a, b = Conn(), Conn()
        alice = (await ops.register(a, {"passport": {"name": "alice"}}))["agent_id"]
        bob = (await ops.register(b, {"passport": {"name": "bob"}}))["agent_id"]
        create = asyncio.ensure_future(ops.call(a, "create_channel", {
            "creator_id": alice, "manifest_type": "conversation", "participants": [bob], "labels": {"k": "v"}}))
        while not b.sent:
            await asyncio.sleep(0.01)
        sid = b.sent[0]["envelope"]["channel_id"]
        await ops.call(b, "post_envelope", {"envelope": {"channel_id": sid, "sender_id": bob, "audience": None,
                                                         "event_type": "ag2.channel.invite.ack", "event_data": {}}})
        await create
        posted = await ops.call(a, "post_envelope", text(sid, alice, "hello"))
        ops.receipt(b, {"recipient_id": bob, "channel_id": sid, "envelope_id": posted, "status": "ack"})
        held = (sid in ops._logs, sid in ops._channels, ops._opened_by.get(alice), ops.registry.cursor(bob, sid))
        await ops.call(a, "close_channel", {"channel_id": sid})
        after = (sid in ops._logs, sid in ops._channels, ops._opened_by.get(alice), sid in ops._opened,
                 ops.registry.cursor(bob, sid))
        ops.registry.close()
        await hub.aclose()
        return held, after

    held, after = run(main())
    assert held[:3] == (True, True, 1) and held[3]
    assert after == (False, False, None, False, "")


def test_limit_flags_out_of_range_exit_2_with_a_message(tmp_path):
    """Each refused by its type, in argparse's words naming the flag (turnflow.cli.util's number
    types, the same in every command); nothing is opened."""
    import sys

    env = dict(os.environ, PYTHONPATH=serve_process.SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = {}
    for flag, value in (("--max-session-bytes", "0"), ("--max-per-peer", "-1"), ("--auth-timeout", "0")):
        if flag != "--auth-timeout":  # (in this process; the last one in a process of its own)
            code, _, err = serve_process.serve_here("--store", str(tmp_path / "h.db"), flag, value)
            out[flag] = (code, err.strip())
            continue
        res = subprocess.run([sys.executable, "-m", "turnflow", "serve", "--store", str(tmp_path / "h.db"), flag, value],
                             capture_output=True, text=True, timeout=60, env=env)
        out[flag] = (res.returncode, res.stderr.strip())
    assert all(err.startswith("usage: turnflow serve") for _, err in out.values()), out
    last = {flag: (code, err.splitlines()[-1]) for flag, (code, err) in out.items()}  # (after argparse's usage)
    assert last == {"--max-session-bytes": (2, "turnflow serve: error: argument --max-session-bytes: "
                                               "expected a positive whole number, got '0'"),
                    "--max-per-peer": (2, "turnflow serve: error: argument --max-per-peer: "
                                          "expected 0 (no limit) or a positive whole number, got '-1'"),
                    "--auth-timeout": (2, "turnflow serve: error: argument --auth-timeout: "
                                          "expected a positive number of seconds, got '0'")}
    assert not (tmp_path / "h.db").exists()


def test_loop_uvloop_without_uvloop_exits_2_and_auto_falls_back_to_asyncio(tmp_path, monkeypatch):
    """`--loop uvloop` where uvloop cannot be imported (Windows, no serve extra) is refused before
    anything is opened, saying how to get it; `--loop auto` then runs on asyncio's loop."""
    import asyncio
    import sys

    from turnflow.serve.app import loop_runner

    monkeypatch.setitem(sys.modules, "uvloop", None)  # (an import of it raises ImportError)
    code, _, err = serve_process.serve_here("--store", str(tmp_path / "h.db"), "--loop", "uvloop")
    assert (code, err.strip()) == (2, "turnflow serve: --loop uvloop: uvloop is not installed "
                                      "(pip install 'turnflow[serve] @ git+https://github.com/turnflow/turnflow' (in a checkout: "
                                      "pip install -e '.[serve]'); not available on Windows)")
    assert not (tmp_path / "h.db").exists()
    assert loop_runner("auto") is asyncio.run and loop_runner("asyncio") is asyncio.run
