"""`turnflow serve` driven by AG2 1.2.1's own client (`HubClient(WsLink(url))`, unchanged, over a real
WebSocket on 127.0.0.1): the four session kinds, access rules, API keys, a kill -9 restart."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("websockets")
ag2net = pytest.importorskip("ag2.network")

from serve_process import ServeProcess  # noqa: E402

try:
    import uvloop  # noqa: F401
except ImportError:  # (Windows, or the serve extra not installed)
    DEFAULT_LOOP = "asyncio"
else:
    DEFAULT_LOOP = "uvloop"  # `--loop auto`, the default: the PostgreSQL tests below run on it (test_serve_pg.py on asyncio)

TEXT, PACKET, CLOSED = "ag2.msg.text", "ag2.packet", "ag2.channel.closed"


@pytest.fixture
def served(tmp_path):
    server = ServeProcess(str(tmp_path / "hub.db"))
    yield server
    server.stop()


def agent(name, *replies):
    from ag2 import Agent
    from ag2.testing import TestConfig

    return Agent(name, config=TestConfig(*replies))


def client(url):
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink

    return HubClient(WsLink(url), rpc_timeout=20)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def wait_for(ac, channel_id, pred, timeout=30):
    return await ac.wait_for_channel_event(channel_id=channel_id, predicate=pred, timeout=timeout)


def test_consulting_closes_with_consulting_complete_and_both_texts_read_back(served):
    async def main():
        c1, c2 = client(served.url), client(served.url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            await c2.register(agent("bob", "Use an index on (user_id, created_at)."))
            ch = await alice.open(type="consulting", target="bob")
            assert ch.metadata.state.value == "active"
            await ch.send("Why is the orders query slow?")
            closed = await wait_for(alice, ch.channel_id, lambda e: e.event_type == CLOSED)
            info = await ch.info()
            wal = await c1.read_wal(ch.channel_id)
            return closed, info, wal
        finally:
            await c1.close()
            await c2.close()

    closed, info, wal = run(main())
    assert closed.event_data["reason"] == "consulting_complete"
    assert info.state.value == "closed" and info.close_reason == "consulting_complete"
    texts = [e.event_data["text"] for e in wal if e.event_type == TEXT]
    assert texts == ["Why is the orders query slow?", "Use an index on (user_id, created_at)."]
    assert [e.event_type for e in wal] == ["ag2.channel.invite", "ag2.channel.invite.ack", "ag2.channel.opened",
                                           TEXT, TEXT, CLOSED]


def test_discussion_runs_round_robin_across_agents_of_two_clients(served):
    async def main():
        c1, c2 = client(served.url), client(served.url)
        try:
            alice = await c1.register(agent("alice", "alice again"))
            bob = await c1.register(agent("bob", "bob here"))
            carol = await c2.register(agent("carol", "carol here"))
            ch = await alice.open(type="discussion", target=["bob", "carol"], knobs={"ordering": "round_robin"})
            await ch.send("alice opens")
            seen = []  # every text alice is notified of (all but her own), answered by AG2's default handler

            def count(e):
                if e.event_type == TEXT:
                    seen.append(e)
                return len(seen) >= 5  # bob, carol, (alice), bob, carol, (alice), bob
            await wait_for(alice, ch.channel_id, count)
            await ch.close(reason="done")
            wal = await c2.read_wal(ch.channel_id)
            return wal, {alice.agent_id: "alice", bob.agent_id: "bob", carol.agent_id: "carol"}
        finally:
            await c1.close()
            await c2.close()

    wal, names = run(main())
    said = [(names[e.sender_id], e.event_data["text"]) for e in wal if e.event_type == TEXT]
    assert len(said) >= 7
    assert said[:7] == [("alice", "alice opens"), ("bob", "bob here"), ("carol", "carol here"),
                        ("alice", "alice again"), ("bob", "bob here"), ("carol", "carol here"),
                        ("alice", "alice again")]
    cycle = ["alice", "bob", "carol"]
    assert [who for who, _ in said] == [cycle[i % 3] for i in range(len(said))]
    assert wal[-1].event_type == CLOSED and wal[-1].event_data["reason"] == "done"


RELAY = """
workflow relay "three steps" {
    participant alice
    participant bob
    participant carol
    start alice
    alice -> bob
    bob   -> carol
    carol -> terminate "relayed"
}
"""


def test_workflow_runs_on_knobs_compiled_from_a_flow(served):
    import turnflow
    from turnflow.interop.ag2 import bind_agents

    spec = turnflow.compile(RELAY)[0]

    async def main():
        c1, c2 = client(served.url), client(served.url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            bob = await c2.register(agent("bob", "bob's part"))
            carol = await c2.register(agent("carol", "carol's part"))
            ids = {"alice": alice.agent_id, "bob": bob.agent_id, "carol": carol.agent_id}
            ch = await alice.open(type="workflow", target=["bob", "carol"], knobs=bind_agents(spec["knobs"], ids))
            await ch.send("alice starts")
            closed = await wait_for(alice, ch.channel_id, lambda e: e.event_type == CLOSED)
            return closed, await c1.read_wal(ch.channel_id), ids
        finally:
            await c1.close()
            await c2.close()

    closed, wal, ids = run(main())
    names = {v: k for k, v in ids.items()}
    rounds = [(names[e.sender_id], e.event_type, e.event_data.get("text") or e.event_data.get("body"))
              for e in wal if e.event_type in (TEXT, PACKET)]
    assert rounds == [("alice", TEXT, "alice starts"), ("bob", PACKET, "bob's part"), ("carol", PACKET, "carol's part")]
    assert closed.event_data["reason"] == "relayed"


def test_a_non_participant_is_refused_with_access_denied(served):
    from ag2.network.errors import AccessDeniedError

    async def main():
        c1, c2, c3 = client(served.url), client(served.url), client(served.url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            await c2.register(agent("bob", "an answer"))
            await c3.register(agent("mallory", "unused"))
            ch = await alice.open(type="consulting", target="bob")
            outcomes = []
            for call in (lambda: c3.read_wal(ch.channel_id), lambda: c3.get_channel(ch.channel_id),
                         lambda: c3.close_channel(ch.channel_id)):
                try:
                    await call()
                    outcomes.append("allowed")
                except AccessDeniedError as exc:
                    outcomes.append(str(exc))
            # acting as another agent is refused too
            env = ag2net.Envelope(channel_id=ch.channel_id, sender_id=alice.agent_id, audience=None,
                                  event_type=TEXT, event_data={"text": "forged"})
            try:
                await c3.post_envelope(env)
                outcomes.append("allowed")
            except AccessDeniedError as exc:
                outcomes.append(str(exc))
            return outcomes, (await ch.info()).state.value
        finally:
            for c in (c1, c2, c3):
                await c.close()

    outcomes, state = run(main())
    assert all(o != "allowed" for o in outcomes), outcomes
    assert "no participant" in outcomes[0]
    assert state == "active"  # nothing the intruder did changed the session


def test_api_keys_admit_the_right_key_and_refuse_a_bad_one(tmp_path):
    from ag2.network.errors import AuthError
    from ag2.network.identity import AuthBlock, Passport

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"alice": "k-alice", "bob": "k-bob"}))
    server = ServeProcess(str(tmp_path / "hub.db"), "--auth-keys", str(keys))

    def passport(name, token=None, scheme="api_key"):
        return Passport(name=name, auth=AuthBlock(scheme=scheme, claim={} if token is None else {"token": token}))

    async def main():
        c = client(server.url)
        results = {}
        try:
            alice = await c.register(agent("alice", "x"), passport("alice", "k-alice"))
            results["good"] = alice.passport.auth.claim  # the hub never hands a claim back
            for label, pp in (("bad", passport("bob", "k-alice")), ("none", passport("bob", scheme="none")),
                              ("unknown", passport("eve", "k-bob"))):
                try:
                    await c.register(agent(pp.name, "x"), pp)
                    results[label] = "allowed"
                except AuthError as exc:
                    results[label] = str(exc)
            # re-attaching needs the key too (a HelloFrame with the claim)
            c2 = client(server.url)
            try:
                try:
                    await c2.attach(agent("alice", "x"), "alice", passport=passport("alice", "wrong"))
                    results["attach_bad"] = "allowed"
                except AuthError as exc:
                    results["attach_bad"] = str(exc)
            finally:
                await c2.close()
            c3 = client(server.url)
            try:
                again = await c3.attach(agent("alice", "x"), "alice", passport=passport("alice", "k-alice"))
                results["attach_good"] = again.agent_id == alice.agent_id
            finally:
                await c3.close()
        finally:
            await c.close()
        return results

    try:
        results = run(main())
    finally:
        server.stop()
    assert results["good"] == {}
    assert "rejected" in results["bad"] and "requires the 'api_key'" in results["none"]
    assert "rejected" in results["unknown"] and "rejected" in results["attach_bad"]
    assert results["attach_good"] is True


def test_kill_9_and_restart_on_the_same_store_keeps_every_session_and_log(tmp_path):
    store = str(tmp_path / "hub.db")
    server = ServeProcess(store)

    async def before():
        c1, c2 = client(server.url), client(server.url)
        alice = await c1.register(agent("alice", "unused"))
        bob = await c2.register(agent("bob", "the answer"))
        done = await alice.open(type="consulting", target="bob")
        await done.send("a question")
        await wait_for(alice, done.channel_id, lambda e: e.event_type == CLOSED)
        bob.on_envelope(_ack_invites_only(bob))  # bob stays quiet in the discussion: it is left mid-way
        talk = await alice.open(type="conversation", target="bob")
        await talk.send("first")
        await talk.send("second")
        logs = {cid: [e.to_dict() for e in await c1.read_wal(cid)] for cid in (done.channel_id, talk.channel_id)}
        return logs, done.channel_id, talk.channel_id  # no close: the process dies under the clients

    try:
        logs, done_id, talk_id = run(before())
        server.kill9()
        server = ServeProcess(store, port=server.port)

        async def after():
            c1 = client(server.url)
            try:
                alice = await c1.attach(agent("alice", "unused"), "alice")
                again = {cid: [e.to_dict() for e in await c1.read_wal(cid)] for cid in (done_id, talk_id)}
                states = {cid: (await c1.get_channel(cid)).state.value for cid in (done_id, talk_id)}
                env = ag2net.Envelope(channel_id=talk_id, sender_id=alice.agent_id, audience=None,
                                      event_type=TEXT, event_data={"text": "third, after the restart"})
                await c1.post_envelope(env)
                last = (await c1.read_wal(talk_id))[-1]
                return again, states, last
            finally:
                await c1.close()

        again, states, last = run(after())
    finally:
        server.stop()
    assert again == logs
    assert states == {done_id: "closed", talk_id: "active"}
    assert last.event_data == {"text": "third, after the restart"}


def _ack_invites_only(ac):
    from ag2.network.client.handlers import _auto_ack_invite

    async def handler(envelope):
        if envelope.event_type == "ag2.channel.invite":
            await _auto_ack_invite(envelope, ac)

    return handler


def test_the_readme_example_runs_against_a_served_hub(served, monkeypatch):
    import contextlib
    import io
    import runpy
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "ag2_consult.py"
    # twice against the same store: the demo frees the names it registered (issue 35); once as the
    # README runs it, in a process of its own, then in this process (AG2 is imported here already)
    out = subprocess.run([sys.executable, str(example), served.url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    outputs = [out.stdout]
    monkeypatch.setattr(sys, "argv", [str(example), served.url])
    with contextlib.redirect_stdout(io.StringIO()) as again:
        runpy.run_path(str(example), run_name="__main__")
    outputs.append(again.getvalue())
    for stdout in outputs:
        lines = stdout.splitlines()
        assert lines[:2] == ["alice: Why is the orders query slow?", "bob: Add an index on orders(user_id, created_at)."]
        assert lines[2].endswith(": consulting_complete")


def test_serve_refuses_a_store_in_use_and_a_bad_keys_file_with_exit_2(served, tmp_path):
    import subprocess
    import sys

    from serve_process import SRC, serve_here

    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    store = served.proc.args[served.proc.args.index("--store") + 1]
    busy = subprocess.run([sys.executable, "-m", "turnflow", "serve", "--listen", "127.0.0.1:0", "--store", store],
                          capture_output=True, text=True, timeout=60, env=env)
    assert busy.returncode == 2 and "in use" in busy.stderr and "Traceback" not in busy.stderr
    port = subprocess.run([sys.executable, "-m", "turnflow", "serve", "--listen", f"127.0.0.1:{served.port}",
                           "--store", str(tmp_path / "third.db")], capture_output=True, text=True, timeout=60, env=env)
    assert port.returncode == 2 and "cannot listen" in port.stderr and "Traceback" not in port.stderr
    # options refused before anything is served: in this process
    bad = tmp_path / "keys.json"
    bad.write_text('{"alice": 3}')
    code, _, err = serve_here("--auth-keys", str(bad), "--store", str(tmp_path / "other.db"))
    assert code == 2 and "--auth-keys" in err
    code, _, err = serve_here("--listen", "0.0.0.0:x")
    assert code == 2 and "HOST:PORT" in err


def test_listening_beyond_loopback_without_keys_warns(tmp_path):
    server = ServeProcess(str(tmp_path / "hub.db"), host="0.0.0.0")
    server.stop()
    assert "warning: listening on 0.0.0.0 without --auth-keys" in server.stderr()
    keyed = tmp_path / "keys.json"
    keyed.write_text('{"alice": "k"}')
    server = ServeProcess(str(tmp_path / "hub2.db"), "--auth-keys", str(keyed), host="0.0.0.0")
    server.stop()
    assert "warning" not in server.stderr()


def test_on_postgresql_agents_and_sessions_survive_kill_9_and_a_restart_elsewhere(pg_url, tmp_path):
    """The registry lives in the database: a hub restarted from another directory (as on another
    machine, no file of the first one around) knows the agents, their résumés and their sessions."""
    first_dir, second_dir = tmp_path / "machine1", tmp_path / "machine2"
    first_dir.mkdir()
    second_dir.mkdir()
    server = ServeProcess(pg_url, cwd=str(first_dir))

    async def first():
        c1, c2 = client(server.url), client(server.url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            bob = await c2.register(agent("bob", "on postgres"))
            await c2.set_resume(bob.agent_id, ag2net.Resume(summary="knows databases"))
            ch = await alice.open(type="consulting", target="bob")
            await ch.send("where are you?")
            await wait_for(alice, ch.channel_id, lambda e: e.event_type == CLOSED)
            ids = {"alice": alice.agent_id, "bob": bob.agent_id}
            return ids, ch.channel_id, [e.to_dict() for e in await c1.read_wal(ch.channel_id)]
        finally:
            await c1.close()
            await c2.close()

    try:
        ids, cid, wal = run(first())
        server.kill9()
        server = ServeProcess(pg_url, cwd=str(second_dir))

        async def second():
            c = client(server.url)
            try:
                alice = await c.attach(agent("alice", "unused"), "alice")
                bob = await c.get_agent("bob")
                summary = (await c.get_resume(bob.agent_id)).summary
                listed = sorted(p.name for p in await c.list_agents())
                return (alice.agent_id, bob.agent_id, summary, listed,
                        [e.to_dict() for e in await c.read_wal(cid)], (await c.get_channel(cid)).close_reason)
            finally:
                await c.close()

        alice_id, bob_id, summary, listed, again, reason = run(second())
    finally:
        server.stop()
    assert (alice_id, bob_id) == (ids["alice"], ids["bob"]) and summary == "knows databases"
    assert listed == ["alice", "bob"]
    assert again == wal and reason == "consulting_complete"
    assert [e["event_data"].get("text") for e in wal if e["event_type"] == TEXT] == ["where are you?", "on postgres"]
    assert list(first_dir.iterdir()) == [] and list(second_dir.iterdir()) == []  # no registry file anywhere
    assert f"event loop {DEFAULT_LOOP}" in server.stderr().splitlines()[0]


def test_a_registry_file_of_an_earlier_version_is_imported_into_postgresql_once(pg_url, tmp_path):
    sqlite_hub = ServeProcess(str(tmp_path / "old.db"))

    async def register_on(url, name):
        c = client(url)
        try:
            return (await c.register(agent(name, "x"))).agent_id
        finally:
            await c.close()

    async def names_on(url):
        c = client(url)
        try:
            return sorted((p.name, p.agent_id) for p in await c.list_agents())
        finally:
            await c.close()

    try:
        carol = run(register_on(sqlite_hub.url, "carol"))
    finally:
        sqlite_hub.stop()
    old_file = str(tmp_path / "old.db.agents")
    server = ServeProcess(pg_url, "--registry", old_file)
    try:
        imported = run(names_on(server.url))
        run(register_on(server.url, "dave"))
    finally:
        server.stop()
    assert imported == [("carol", carol)]
    assert "imported 1 agent(s) from" in server.stderr()
    again = ServeProcess(pg_url, "--registry", old_file)  # the database has agents now: nothing imported
    try:
        assert [n for n, _ in run(names_on(again.url))] == ["carol", "dave"]
    finally:
        again.stop()
    assert "not imported: the database already holds agents" in again.stderr()
    from serve_process import serve_here  # (refused before anything is served: in this process)

    code, _, err = serve_here("--listen", "127.0.0.1:0", "--store", pg_url, "--registry", str(tmp_path / "nowhere.agents"))
    assert code == 2 and "no such registry file to import" in err
    assert "Traceback" not in err


def test_envelope_task_fields_and_required_acks_are_kept_checked_and_survive_a_restart(tmp_path):
    """AG2's envelope fields `task_id`, `priority`, `depth`, `idempotency_key`, `ttl_seconds` and a
    channel's `required_acks` read back as sent (also after kill -9); `depth` is capped by the
    sender rule's `delegation_depth` (AG2's default 5) and a malformed task id is refused, as AG2's
    hub does; an `idempotency_key` seen before is not deduplicated (AG2's hub ignores it too)."""
    from ag2.network.errors import AccessDeniedError, ProtocolError
    from ag2.network.rule import LimitsBlock, Rule

    store = str(tmp_path / "hub.db")
    server = ServeProcess(store)

    def env(channel_id, sender, text, **fields):
        return ag2net.Envelope(channel_id=channel_id, sender_id=sender, audience=None, event_type=TEXT,
                               event_data={"text": text}, **fields)

    async def before():
        c1, c2 = client(server.url), client(server.url)
        try:
            alice = await c1.register(agent("alice", "unused"))
            bob = await c2.register(agent("bob", "unused"), rule=Rule(limits=LimitsBlock(delegation_depth=2)))
            alice.on_envelope(_ack_invites_only(alice))  # neither answers on its own: the test posts every round
            bob.on_envelope(_ack_invites_only(bob))
            ch = await c1.create_channel(creator_id=alice.agent_id, manifest_type="conversation",
                                         participants=[bob.agent_id], required_acks=1)
            cid = ch.channel_id
            await c1.post_envelope(env(cid, alice.agent_id, "q", task_id="task-1", priority="urgent", depth=1,
                                       idempotency_key="k-1", ttl_seconds=90))
            refused = {}
            for label, c, e in (("alice depth 6", c1, env(cid, alice.agent_id, "x", depth=6)),
                                ("bob depth 3", c2, env(cid, bob.agent_id, "x", depth=3)),
                                ("bad task id", c1, env(cid, alice.agent_id, "x", task_id="../etc"))):
                try:
                    await c.post_envelope(e)
                    refused[label] = "accepted"
                except (AccessDeniedError, ProtocolError) as exc:
                    refused[label] = f"{type(exc).__name__}: {exc}"
            await c2.post_envelope(env(cid, bob.agent_id, "a", depth=2, idempotency_key="k-1"))
            wal = [e.to_dict() for e in await c1.read_wal(cid)]
            return cid, ch.required_acks, (await c1.get_channel(cid)).required_acks, refused, wal
        finally:
            await c1.close()
            await c2.close()

    try:
        cid, created_acks, read_acks, refused, wal = run(before())
        server.kill9()
        server = ServeProcess(store, port=server.port)

        async def after():
            c = client(server.url)
            try:
                await c.attach(agent("alice", "unused"), "alice")
                return [e.to_dict() for e in await c.read_wal(cid)], (await c.get_channel(cid)).required_acks
            finally:
                await c.close()

        again, acks_after = run(after())
    finally:
        server.stop()
    fields = ("task_id", "priority", "depth", "idempotency_key", "ttl_seconds")
    texts = [(e["event_data"]["text"], *(e[f] for f in fields)) for e in wal if e["event_type"] == TEXT]
    assert texts == [("q", "task-1", "urgent", 1, "k-1", 90), ("a", None, "normal", 2, "k-1", None)]
    assert refused["alice depth 6"] == "AccessDeniedError: sender 'alice' exceeded delegation_depth (6 > 5)"
    assert refused["bob depth 3"] == "AccessDeniedError: sender 'bob' exceeded delegation_depth (3 > 2)"
    assert refused["bad task id"].startswith("ProtocolError: invalid task_id")
    assert created_acks == read_acks == acks_after == 1
    assert again == wal
    invite = next(e for e in wal if e["event_type"] == "ag2.channel.invite")
    assert (invite["task_id"], invite["priority"], invite["depth"]) == (None, "normal", 0)


class _RawAgent:
    """One agent over the bare wire protocol, so the test sees exactly which notifications the hub
    sends and when its receipts have been taken in (frames of a connection are handled in order:
    the answer to a later request comes after)."""

    def __init__(self, ws):
        self.ws, self.notes, self.n = ws, [], 0

    @classmethod
    async def connect(cls, url):
        from websockets.asyncio.client import connect

        return cls(await connect(url))

    async def _until(self, done):
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if frame["kind"] == "notify":
                self.notes.append(frame)
            if done(frame):
                return frame

    async def call(self, op, params):
        self.n += 1
        rid = f"r{self.n}"
        await self.ws.send(json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params}))
        frame = await self._until(lambda f: f["kind"] == "response" and f["request_id"] == rid)
        assert frame["ok"], frame
        return frame["result"]

    async def hello(self, name):
        await self.ws.send(json.dumps({"kind": "hello", "name": name, "auth_scheme": "none", "auth_claim": {},
                                       "since_envelope_id": ""}))
        return await self._until(lambda f: f["kind"] in ("welcome", "error"))

    async def note(self):
        return await self._until(lambda f: f["kind"] == "notify")

    async def ack(self, frame):
        env = frame["envelope"]
        await self.ws.send(json.dumps({"kind": "receipt", "envelope_id": env["envelope_id"], "status": "ack",
                                       "recipient_id": frame["recipient_id"], "channel_id": env["channel_id"],
                                       "reason": ""}))


async def _conversation_with_raw_bob(c, bob: "_RawAgent"):
    """alice (AG2's client `c`) opens a conversation with bob, a raw-wire agent that registers
    and acks the invite itself; the open channel."""
    bob_id = (await bob.call("register", {"passport": {"name": "bob"}}))["agent_id"]
    alice = await c.register(agent("alice", "unused"))
    opening = asyncio.ensure_future(alice.open(type="conversation", target="bob"))
    invite = await bob.note()
    await bob.call("post_envelope", {"envelope": {"channel_id": invite["envelope"]["channel_id"],
                                                  "sender_id": bob_id, "audience": None,
                                                  "event_type": "ag2.channel.invite.ack", "event_data": {}}})
    return await opening


def test_on_postgresql_delivery_cursors_survive_a_restart_elsewhere(pg_url, tmp_path):
    """bob acknowledged the first text, not the second: a hub restarted from another directory on
    the same database replays only the second when bob attaches again."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    server = ServeProcess(pg_url, cwd=str(tmp_path / "one"))

    async def first():
        c = client(server.url)
        bob = await _RawAgent.connect(server.url)
        try:
            ch = await _conversation_with_raw_bob(c, bob)
            await ch.send("first")
            while not any(n["envelope"].get("event_data", {}).get("text") == "first" for n in bob.notes):
                await bob.note()
            for frame in bob.notes:  # bob acks everything so far, "first" included
                await bob.ack(frame)
            await bob.call("get_agent", {"name_or_id": "bob"})  # the receipts are in
            await ch.send("second")  # never acked by bob
            return ch.channel_id
        finally:
            await bob.ws.close()
            await c.close()

    try:
        cid = run(first())
        server.stop()  # a clean stop: the cursors are flushed (a kill -9 may lose the last second's)
        server = ServeProcess(pg_url, cwd=str(tmp_path / "two"))

        async def second():
            bob = await _RawAgent.connect(server.url)
            try:
                welcome = await bob.hello("bob")
                await bob.call("get_agent", {"name_or_id": "bob"})  # every replayed notification came before
                return welcome["kind"], [(n["envelope"]["channel_id"], n["envelope"]["event_type"],
                                          n["envelope"]["event_data"].get("text")) for n in bob.notes]
            finally:
                await bob.ws.close()

        welcome, replayed = run(second())
    finally:
        server.stop()
    assert welcome == "welcome"
    assert replayed == [(cid, TEXT, "second")]
    assert f"event loop {DEFAULT_LOOP}" in server.stderr().splitlines()[0]


def test_an_invited_agent_is_notified_of_the_invite_once(served):
    """Each envelope reaches each recipient once: the invite of a new channel included (the hub
    hands it to the listener; the opening request does not send it a second time)."""
    async def main():
        c = client(served.url)
        bob = await _RawAgent.connect(served.url)
        try:
            ch = await _conversation_with_raw_bob(c, bob)
            await ch.send("hello")
            while not any(n["envelope"]["event_type"] == TEXT for n in bob.notes):
                await bob.note()
            return [n["envelope"]["event_type"] for n in bob.notes]
        finally:
            await bob.ws.close()
            await c.close()

    assert run(main()) == ["ag2.channel.invite", "ag2.channel.opened", TEXT]
