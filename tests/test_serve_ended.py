"""A served hub holds its live sessions, not its history (docs/serve.md, "Memory"): a session that
has ended leaves `Hub.sessions`, a restarted hub does not hydrate the ended ones, and AG2 1.2.1's
own client (`HubClient`, unchanged, over a real socket to `turnflow serve` run in this process) gets
the same answers for an ended session read back from the store as it got while the hub held it."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

pytest.importorskip("websockets")
pytest.importorskip("ag2")

from turnflow.runtime.hub import Hub  # noqa: E402
from turnflow.serve.app import Options, serve  # noqa: E402

CLOSED = "ag2.channel.closed"


def agent(name, *replies):
    from ag2 import Agent
    from ag2.testing import TestConfig

    return Agent(name, config=TestConfig(*replies))


def client(url):
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink

    return HubClient(WsLink(url), rpc_timeout=20)


async def with_served(store, monkeypatch, body):
    """`turnflow serve` on `store` in this process (its hub kept for the test), `body(url, hub)` run against it."""
    hubs = []
    opened = Hub.open.__func__

    async def keep(cls, st, **kw):
        hub = await opened(cls, st, **kw)
        hubs.append(hub)
        return hub

    monkeypatch.setattr(Hub, "open", classmethod(keep))
    urls: asyncio.Queue = asyncio.Queue()
    stop = asyncio.Event()
    task = asyncio.get_running_loop().create_task(serve(Options(port=0, store=store), urls.put_nowait, stop))
    try:
        url = await asyncio.wait_for(urls.get(), 60)
        return await body(url, hubs[-1])
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)


def ops_of(hub):
    return next(fn.__self__ for fn in hub.listeners if type(fn.__self__).__name__ == "Ops")


async def answers(c, hub, sid, me, other):
    """Everything AG2's client can ask of one session (raw answers: the JSON the hub sent), and
    what the hub answers itself."""
    async def ask(op, params):
        try:
            return ("ok", await c._rpc(op, params))
        except Exception as exc:  # AG2's error for the hub's refusal: its class and message
            return ("error", type(exc).__name__, str(exc))

    late = {"sender_id": me, "channel_id": sid, "event_type": "ag2.msg.text", "event_data": {"text": "late"},
            "audience": None, "causation_id": None, "trace_id": None}
    got = {
        "get_channel": await ask("get_channel", {"channel_id": sid}),
        "read_wal": await ask("read_wal", {"channel_id": sid}),
        "read_wal 2:4": await ask("read_wal", {"channel_id": sid, "since": 2, "until": 4}),
        "can_send": await ask("can_send", {"channel_id": sid, "sender_id": me, "event_type": None}),
        "post_envelope": await ask("post_envelope", {"envelope": late}),
        "ack": await ask("post_envelope", {"envelope": {**late, "event_type": "ag2.channel.invite.ack"}}),
        "close_channel": await ask("close_channel", {"channel_id": sid, "reason": "again"}),
        "parsed channel": repr(await c.get_channel(sid)),
        "parsed wal": [repr(e) for e in await c.read_wal(sid)],
        "parsed list": [repr(m) for m in await c.list_channels(agent_id=me, include_terminal=True)],
        "hub info": hub.info(sid),
        "hub record": repr(await hub.get_session(sid)),
        "hub view": list(hub.view(sid, me)),
        "hub read": [e.to_record() for e in hub.read(sid)],
        "hub expected": hub.expected_next(sid),
    }
    for limit in (0, 1, 2, 3, 50):
        got[f"list {limit}"] = await ask("list_channels", {"agent_id": me, "limit": limit})
        got[f"list other {limit}"] = await ask("list_channels", {"agent_id": other, "limit": limit})
    got["list bound"] = await ask("list_channels", {"agent_id": None, "limit": 50})
    return got


def test_an_ended_session_leaves_memory_and_ag2_gets_the_same_answers_read_back(tmp_path, monkeypatch):
    """Differential: the answers for an ended session while the hub still holds it (the hub is
    told to keep it) and after it has let it go (and forgot every copy it kept: read from the
    store) are the same, for every op AG2's client sends and every lookup of the hub's."""
    async def body(url, hub):
        assert hub.keep_ended is False  # what `turnflow serve` runs
        c1, c2 = client(url), client(url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            bob = await c2.register(agent("bob", "Use an index.", "An index on (a, b).", "Yes."))
            a, b = alice.agent_id, bob.agent_id
            # an ended session the hub is told to keep (the answers before it leaves memory)
            hub.keep_ended = True
            kept = await alice.open(type="consulting", target="bob")
            await kept.send("Why is the orders query slow?")
            await alice.wait_for_channel_event(channel_id=kept.channel_id,
                                               predicate=lambda e: e.event_type == CLOSED, timeout=30)
            hub.keep_ended = False
            # one ended by itself (left memory at once), one closed by its creator, one live
            ended = await alice.open(type="consulting", target="bob")
            await ended.send("And the users query?")
            await alice.wait_for_channel_event(channel_id=ended.channel_id,
                                               predicate=lambda e: e.event_type == CLOSED, timeout=30)
            closed = await alice.open(type="consulting", target="bob")
            await c1.close_channel(closed.channel_id, reason="asked elsewhere")
            live = await alice.open(type="consulting", target="bob")
            sid = kept.channel_id
            assert sid in hub.sessions and hub.sessions[sid].metadata.state.value == "closed"
            assert ended.channel_id not in hub.sessions and closed.channel_id not in hub.sessions
            assert live.channel_id in hub.sessions

            before = await answers(c1, hub, sid, a, b)
            hub.ended(hub.sessions[sid])  # it leaves memory now, as it would have when it ended
            assert sid not in hub.sessions and sid not in hub._watched
            hub._ended.clear()  # every copy kept of it forgotten: read back from the store
            ops_of(hub)._ended_parts.clear()
            after = await answers(c1, hub, sid, a, b)
            assert sid not in hub.sessions
            for key in before:
                assert after[key] == before[key], key
            # the answers say what they should (not merely the same)
            assert before["get_channel"][1]["state"] == "closed"
            assert before["get_channel"][1]["close_reason"] == "consulting_complete"
            assert [e["event_type"] for e in before["read_wal"][1]][-1] == CLOSED
            assert before["post_envelope"][0] == "error" and "send refused" in before["post_envelope"][2]
            assert before["can_send"] == ("ok", False)
            listed = [m["channel_id"] for m in before["list 50"][1]]
            assert listed == [sid, ended.channel_id, closed.channel_id, live.channel_id]
            assert [m["channel_id"] for m in before["list 2"][1]] == listed[:2]
            others = {ended.channel_id: "consulting_complete", closed.channel_id: "asked elsewhere"}
            for other, reason in others.items():
                record = await c2._rpc("get_channel", {"channel_id": other})
                assert record["state"] == "closed" and record["close_reason"] == reason
                assert [e.event_type for e in await c2.read_wal(other)][-1] == CLOSED
            return sid, a, b, before
        finally:
            await c1.close()
            await c2.close()

    async def main():
        return await with_served(str(tmp_path / "hub.db"), monkeypatch, body)

    asyncio.run(asyncio.wait_for(main(), 120))


@pytest.mark.parametrize("older", [False, True], ids=["restart", "older store"])
def test_a_restarted_hub_hydrates_only_the_live_sessions_and_answers_for_the_ended_ones(tmp_path, monkeypatch, older):
    """... and the same answers from a store without end records (written before they existed:
    its ended channels listed from their logs, their end records written then), twice."""
    store = str(tmp_path / "hub.db")

    async def first(url, hub):
        c1, c2 = client(url), client(url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            bob = await c2.register(agent("bob", "Use an index.", "Yes."))
            hub.keep_ended = True  # held to the end: the answers of a hub that holds it
            done = await alice.open(type="consulting", target="bob")
            await done.send("Why is the orders query slow?")
            await alice.wait_for_channel_event(channel_id=done.channel_id,
                                               predicate=lambda e: e.event_type == CLOSED, timeout=30)
            closed = await alice.open(type="consulting", target="bob")
            await c1.close_channel(closed.channel_id, reason="asked elsewhere")
            live = await alice.open(type="consulting", target="bob")
            ids = (done.channel_id, closed.channel_id, live.channel_id, alice.agent_id, bob.agent_id)
            return ids, await answers(c1, hub, done.channel_id, alice.agent_id, bob.agent_id)
        finally:
            await c1.close()
            await c2.close()

    async def second(url, hub, ids, before):
        done, closed, live, a, b = ids
        assert list(hub.sessions) == [live]  # the ended ones were not hydrated
        assert hub.report.sessions == 1
        c1, c2 = client(url), client(url)
        try:
            await c1.attach(agent("alice", "unused"), "alice", since_envelope_id=None)
            await c2.attach(agent("bob", "unused"), "bob", since_envelope_id=None)
            after = await answers(c1, hub, done, a, b)
            assert list(hub.sessions) == [live]  # read back, not held again
            for key in before:
                assert after[key] == before[key], key
            if older:  # the listing wrote the end records it lacked: the next one reads them
                ends = sqlite3.connect(store).execute("SELECT session_id FROM session_ends").fetchall()
                assert sorted(r[0] for r in ends) == sorted([done, closed])
                hub._ended.clear()
                ops_of(hub)._ended_parts.clear()
                again = await answers(c1, hub, done, a, b)
                for key in before:
                    assert again[key] == before[key], key
            assert (await c1._rpc("get_channel", {"channel_id": closed}))["close_reason"] == "asked elsewhere"
        finally:
            await c1.close()
            await c2.close()

    async def main():
        ids, before = await with_served(store, monkeypatch, first)
        if older:  # as a store written before end records existed
            db = sqlite3.connect(store)
            db.execute("DROP TABLE session_ends")
            db.commit()
            db.close()
        await with_served(store, monkeypatch, lambda url, hub: second(url, hub, ids, before))

    asyncio.run(asyncio.wait_for(main(), 180))


def test_listing_many_ended_channels_lets_the_other_clients_in(tmp_path):
    """`list_channels` over many ended channels none of which the hub holds (docs/serve.md): the
    event loop runs other work while it lists (it answered nobody else for ~76 ms per 1,000
    before), and the answer is the one the channels' records give one by one (`get_channel`)."""
    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.session import Participant

    async def go():
        hub, registry, ops = await _listing_ops(tmp_path)()
        try:
            a, b = "a" * 32, "b" * 32
            pair = [Participant(a, "initiator", 0), Participant(b, "respondent", 1)]
            for i in range(300):
                md = await hub.open_session("consulting", pair, creator_id=a, labels={"n": i})
                await hub.ack(md.session_id, b)
                await hub.post(Envelope(md.session_id, a, None, EV_TEXT, {"text": f"q{i}"}))
                await hub.close(md.session_id, f"done {i}")
            await asyncio.sleep(0)  # (the last end records' group commit)
            assert not hub.sessions
            hub._ended.clear()
            ops._ended_parts.clear()
            listed, during = await _turns_of_another_task(ops.list_channels(_Conn(a), {"agent_id": a, "limit": 1000}))
            assert during >= 3, during  # (one turn per ~64 channels)
            one_by_one = [json.loads(await ops.get_channel(_Conn(a), {"channel_id": ch["channel_id"]}))
                          for ch in json.loads(listed)]
            assert json.loads(listed) == one_by_one and len(one_by_one) == 300
            assert [ch["close_reason"] for ch in one_by_one] == [f"done {i}" for i in range(300)]
        finally:
            await hub.aclose()
            registry.close()

    asyncio.run(asyncio.wait_for(go(), 120))


def test_listings_hold_bounded_memory_however_many_a_client_sends(tmp_path):
    """`list_channels` lets the loop run while it lists (a waiting op), so listings overlap, each
    holding the records it encoded so far: a client with 64 requests in flight on each of its
    connections held 64 of them per connection (up to --max-reply-bytes each) at once. Now at most
    `LISTINGS_AT_ONCE` list at a time, and one over --max-reply-bytes stops there, refused as the
    server refuses any answer that size (it was built whole first)."""
    from turnflow.runtime.session import Participant
    from turnflow.serve.ops import LISTINGS_AT_ONCE, OpError

    async def go():
        hub, registry, ops = await _listing_ops(tmp_path)()
        try:
            a, b = "a" * 32, "b" * 32
            pair = [Participant(a, "initiator", 0), Participant(b, "respondent", 1)]
            for i in range(300):
                md = await hub.open_session("consulting", pair, creator_id=a, labels={"n": i, "pad": "x" * 2000})
                await hub.close(md.session_id, f"done {i}")
            await asyncio.sleep(0)
            hub._ended.clear()

            listing, active, most = hub.iter_sessions_of, [0], [0]

            def counted(*args):
                active[0] += 1
                most[0] = max(most[0], active[0])
                try:
                    yield from listing(*args)
                finally:
                    active[0] -= 1

            hub.iter_sessions_of = counted
            answers = await asyncio.gather(*(ops.list_channels(_Conn(a), {"agent_id": a, "limit": 1000})
                                              for _ in range(12)))
            assert all(len(json.loads(x)) == 300 for x in answers)
            assert most[0] <= LISTINGS_AT_ONCE < 12, most

            encoded = []
            channel = ops._channel
            ops._channel = lambda md: encoded.append(md) or channel(md)
            ops.max_reply = 50_000  # (about 22 of these records)
            with pytest.raises(OpError) as refused:
                await ops.list_channels(_Conn(a), {"agent_id": a, "limit": 1000})
            assert "--max-reply-bytes" in refused.value.message and "limit" in refused.value.message
            assert len(encoded) <= 22 + 64, len(encoded)  # (stopped within the part that went over)
        finally:
            await hub.aclose()
            registry.close()

    asyncio.run(asyncio.wait_for(go(), 120))


def _listing_ops(tmp_path):
    """A hub that lets ended sessions go and its Ops, in this process (no socket)."""
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry

    async def make():
        path = str(tmp_path / "hub.db")
        registry = open_registry(path)
        hub = await Hub.open(SQLiteStore(path), keep_ended=False)
        return hub, registry, Ops(hub, registry, Auth())
    return make


async def _turns_of_another_task(awaitable):
    """`awaitable`'s result, and how many turns another task of the loop had while it ran (a
    listing that never lets the loop run gives it none)."""
    turns, done = [], False

    async def other():
        while not done:
            turns.append(len(turns))
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(other())
    await asyncio.sleep(0)
    before = len(turns)
    try:
        result = await awaitable
    finally:
        done = True
        await task
    return result, len(turns) - before


class _Conn:
    endpoint_id = "test"

    def __init__(self, *agents):
        self.agents = set(agents)

    def send(self, text):
        pass


async def _big_ended(hub, n, size):
    """`n` ended workflow sessions of a, b, c, each with `size` bytes of knobs (context variables:
    bounded only by the frame size), none of them kept."""
    from runtime_helpers import CHAIN

    ctx = {f"k{i}": "x" * 1000 for i in range(size // 1000)}
    for i in range(n):
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN, "context_vars": ctx},
                                    creator_id="a")
        for p in ("b", "c"):
            await hub.ack(md.session_id, p)
        await hub.close(md.session_id, f"done {i}")
    await asyncio.sleep(0)
    hub._ended.clear()


def test_listing_channels_with_large_knobs_stops_at_the_reply_limit_and_lets_the_others_in(tmp_path):
    """Channels of ~100 KB of knobs each, ended (docs/serve.md, "Limits"): a listing over
    `--max-reply-bytes` is refused as soon as it is over, holding about that much, not everything it
    was asked for (it built all 60 before answering `protocol_error`: 1,000 of 1 MB under 16 MiB,
    gigabytes), and decodes the stored records of ~2 MiB at a time, not of 64 sessions (13.5 MB at its
    peak then, 4.7 MB now); one under the limit lets the other clients in every ~256 KiB encoded (it
    listed 64 at a time: ~400 ms of CPU without answering anyone for 200 of 500 KB)."""
    import tracemalloc

    from turnflow.serve.ops import OpError

    async def go():
        hub, registry, ops = await _listing_ops(tmp_path)()
        try:
            await _big_ended(hub, 60, 100_000)
            ops.max_reply = 1 << 20
            tracemalloc.start()
            try:
                await ops.list_channels(_Conn("a"), {"agent_id": "a", "limit": 1000})
            except OpError as exc:
                refused = (exc.code, exc.message)
            else:
                refused = None
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert refused is not None and refused[0] == "protocol_error", refused
            assert "over this hub's limit for one answer (1048576, --max-reply-bytes)" in refused[1], refused
            assert peak < 8 << 20, peak  # (the records built up to the limit, and ~2 MiB of stored records decoded)

            ops.max_reply = 16 << 20
            text, during = await _turns_of_another_task(ops.list_channels(_Conn("a"), {"agent_id": "a", "limit": 1000}))
            listed = json.loads(text)
            assert len(listed) == 60 and [ch["close_reason"] for ch in listed] == [f"done {i}" for i in range(60)]
            assert during >= 15, during  # (6 MB encoded: a turn every ~256 KiB at most)
        finally:
            await hub.aclose()
            registry.close()

    asyncio.run(asyncio.wait_for(go(), 60))


def test_concurrent_listings_together_hold_at_most_twice_the_reply_limit(tmp_path):
    """Listings run concurrently (64 per connection, on as many connections as there are): together
    they hold at most 2 x `--max-reply-bytes` of records being built (docs/serve.md, "Limits"); the
    one that would go past it is refused, `protocol_error` saying so, and the others are answered
    in full. (Listings that let the loop run between parts interleave: 8 at once of 130 channels of
    500 KB grew the hub by ~680 MiB, bench/list_large_knobs.py.)"""
    from turnflow.serve.ops import OpError

    async def go():
        hub, registry, ops = await _listing_ops(tmp_path)()
        try:
            await _big_ended(hub, 30, 100_000)
            ops.max_reply = 4 << 20

            async def one():
                try:
                    return len(await ops.list_channels(_Conn("a"), {"agent_id": "a", "limit": 30}))
                except OpError as exc:
                    return exc.message

            got = await asyncio.gather(*[one() for _ in range(16)])
            full = [n for n in got if isinstance(n, int)]
            refused = [m for m in got if isinstance(m, str)]
            assert 1 <= len(full) <= 3 and len(set(full)) == 1 and full[0] > 3_000_000, got
            assert all("channel listings being built at once" in m and "(8388608" in m for m in refused), refused
            assert len(await ops.list_channels(_Conn("a"), {"agent_id": "a", "limit": 30})) == full[0]  # (all released)
        finally:
            await hub.aclose()
            registry.close()

    asyncio.run(asyncio.wait_for(go(), 60))
