"""`turnflow run FLOW --agents A --hub ws://...`: the agents file's agents take part in a session on a
served hub alongside an AG2 1.2.1 agent connected with AG2's own client (no mocks, real sockets)."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest.importorskip("websockets")
pytest.importorskip("ag2.network")

from serve_process import SRC, ServeProcess  # noqa: E402

CONSULT = """
consulting ask "Ask the DBA" {
    participant engineer initiator
    participant dba respondent
}
"""

RELAY = """
workflow relay "local, remote, local" {
    participant alice
    participant bob
    participant carol
    start alice
    alice -> bob
    bob   -> carol
    carol -> terminate "relayed"
}
"""


async def _run_here(*argv):
    """`turnflow run ARGV` in this process (tests/cli_here.py): (exit status, stdout, stderr). For the
    tests about what the command does with scripted agents; those about the run as a process of its
    own (a signal, nothing constructed in its process, python agents imported from the tests'
    directories) start one."""
    from cli_here import amain_here

    return await amain_here(["run", *argv], 120)


async def _run_with_remote(url, flow, agents_yaml, remote_name, reply, tmp_path, also=(), here=False):
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    (tmp_path / "s.flow").write_text(flow)
    (tmp_path / "agents.yaml").write_text(agents_yaml)
    hub = HubClient(WsLink(url), rpc_timeout=30)
    try:
        remote = await hub.register(Agent(remote_name, config=TestConfig(reply)))
        for name in also:  # registered on the hub, not in the session
            await hub.register(Agent(name, config=TestConfig("-")))
        argv = (str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"), "--hub", url)
        if here:
            code, out, err = await _run_here(*argv)
        else:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "turnflow", "run", *argv, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
            out_b, err_b = await asyncio.wait_for(proc.communicate(), 120)
            code, out, err = proc.returncode, out_b.decode(), err_b.decode()
        channels = await hub.list_channels(agent_id=remote.agent_id, include_terminal=True)
        assert len(channels) == 1
        wal = await hub.read_wal(channels[0].channel_id)
        info = await hub.get_channel(channels[0].channel_id)
        names = {p.agent_id: (await hub.get_agent(p.agent_id)).name for p in info.participants}
        return code, out, err, wal, info, names
    finally:
        await hub.close()


@pytest.fixture
def served(tmp_path):
    server = ServeProcess(str(tmp_path / "hub.db"))
    yield server
    server.stop()


def test_run_hub_consults_a_remote_ag2_agent(served, tmp_path):
    agents = 'agents:\n  engineer: {kind: scripted, steps: [{say: "Why is the orders query slow?"}]}\n'
    code, out, err, wal, info, names = asyncio.run(
        _run_with_remote(served.url, CONSULT, agents, "dba", "Add an index on orders(user_id).", tmp_path, here=True))
    assert code == 0, err
    assert "engineer: Why is the orders query slow?" in out and "dba: Add an index on orders(user_id)." in out
    assert "closed: consulting_complete" in out
    assert out.splitlines()[0] == f"session {info.channel_id}"  # the served session's id (issue 35)
    said = [(names[e.sender_id], e.event_data["text"]) for e in wal if e.event_type == "ag2.msg.text"]
    assert said == [("engineer", "Why is the orders query slow?"), ("dba", "Add an index on orders(user_id).")]
    assert info.close_reason == "consulting_complete"


def test_run_hub_lookup_peers_lists_the_served_hubs_registered_agents(served, tmp_path):
    (tmp_path / "asker.py").write_text(
        "def engineer(msg, tools):\n"
        "    page = tools.lookup_peers(page_size=10)\n"
        "    return {'say': 'peers: ' + ', '.join(f\"{p['agent_id']}={p['in_session']}\" for p in page)}\n")
    agents = "agents:\n  engineer: {kind: python, ref: 'asker:engineer'}\n"
    code, out, err, wal, info, names = asyncio.run(
        _run_with_remote(served.url, CONSULT, agents, "dba", "ok", tmp_path, also=("auditor",)))
    assert code == 0, err
    assert "engineer: peers: dba=True, auditor=False" in out


def test_run_hub_drives_a_workflow_with_a_remote_participant_in_the_middle(served, tmp_path):
    agents = ('agents:\n  alice: {kind: scripted, steps: [{say: "draft"}]}\n'
              '  carol: {kind: scripted, steps: [{say: "approved"}]}\n')
    code, out, err, wal, info, names = asyncio.run(
        _run_with_remote(served.url, RELAY, agents, "bob", "reviewed", tmp_path, here=True))
    assert code == 0, err
    rounds = [(names[e.sender_id], e.event_data.get("body") or e.event_data.get("text"))
              for e in wal if e.event_type in ("ag2.packet", "ag2.msg.text")]
    assert rounds == [("alice", "draft"), ("bob", "reviewed"), ("carol", "approved")]
    assert info.close_reason == "relayed" and "closed: relayed" in out


def test_run_hub_says_clearly_when_a_participant_is_nowhere(served, tmp_path):
    import subprocess

    (tmp_path / "s.flow").write_text(CONSULT)
    (tmp_path / "agents.yaml").write_text('agents:\n  engineer: {kind: scripted, steps: [{say: "hi"}]}\n')
    code, _, err = asyncio.run(_run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                         "--hub", served.url))
    assert code == 2
    assert "participant 'dba' is not in the agents file and not registered with the hub" in err
    unreachable = subprocess.run([sys.executable, "-m", "turnflow", "run", str(tmp_path / "s.flow"), "--agents",
                                  str(tmp_path / "agents.yaml"), "--hub", "ws://127.0.0.1:1"], capture_output=True,
                                 text=True, timeout=120, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert unreachable.returncode == 2 and "cannot reach the hub" in unreachable.stderr


OPENED_BY_REMOTE = """
consulting ask "The engineer (remote) asks the DBA (this run)" {
    participant engineer initiator
    participant dba respondent
}
"""


def _turnflow_run(tmp_path, flow, agents_yaml, *extra):
    (tmp_path / "s.flow").write_text(flow)
    (tmp_path / "agents.yaml").write_text(agents_yaml)
    return asyncio.create_subprocess_exec(
        sys.executable, "-m", "turnflow", "run", str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
        *extra, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})


def test_run_hub_joins_a_session_a_remote_ag2_agent_opens(served, tmp_path):
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    agents = 'agents:\n  dba: {kind: scripted, steps: [{say: "Add an index on orders(user_id)."}]}\n'

    async def main():
        hub = HubClient(WsLink(served.url), rpc_timeout=30)
        try:
            engineer = await hub.register(Agent("engineer", config=TestConfig("unused")))
            proc = await _turnflow_run(tmp_path, OPENED_BY_REMOTE, agents, "--hub", served.url)
            waiting = await asyncio.wait_for(proc.stderr.readline(), 60)  # registered, waiting for the invite
            ch = await engineer.open(type="consulting", target="dba")
            await ch.send("Why is the orders query slow?")
            await engineer.wait_for_channel_event(channel_id=ch.channel_id, timeout=60,
                                                  predicate=lambda e: e.event_type == "ag2.channel.closed")
            out, err = await asyncio.wait_for(proc.communicate(), 120)
            wal = await hub.read_wal(ch.channel_id)
            info = await hub.get_channel(ch.channel_id)
            names = {p.agent_id: (await hub.get_agent(p.agent_id)).name for p in info.participants}
            return proc.returncode, waiting.decode(), out.decode(), err.decode(), wal, info, names
        finally:
            await hub.close()

    code, waiting, out, err, wal, info, names = asyncio.run(main())
    assert code == 0, err
    assert "waiting for 'engineer' to open the consulting session" in waiting
    assert "engineer: Why is the orders query slow?" in out and "dba: Add an index on orders(user_id)." in out
    said = [(names[e.sender_id], e.event_data["text"]) for e in wal if e.event_type == "ag2.msg.text"]
    assert said == [("engineer", "Why is the orders query slow?"), ("dba", "Add an index on orders(user_id).")]
    assert info.close_reason == "consulting_complete" and "closed: consulting_complete" in out


def test_run_hub_gives_the_agents_file_agents_their_api_keys_and_never_prints_them(tmp_path):
    import json

    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.identity import AuthBlock, Passport
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    (tmp_path / "hub-keys.json").write_text(json.dumps({"engineer": "sekrit-engineer-key", "dba": "sekrit-dba-key"}))
    (tmp_path / "mine.json").write_text(json.dumps({"engineer": "sekrit-engineer-key"}))
    (tmp_path / "wrong.json").write_text(json.dumps({"engineer": "sekrit-but-wrong"}))
    server = ServeProcess(str(tmp_path / "hub.db"), "--auth-keys", str(tmp_path / "hub-keys.json"))
    agents = 'agents:\n  engineer: {kind: scripted, steps: [{say: "Why is the orders query slow?"}]}\n'
    (tmp_path / "s.flow").write_text(CONSULT)
    (tmp_path / "agents.yaml").write_text(agents)

    async def main():
        hub = HubClient(WsLink(server.url), rpc_timeout=30)
        runs = {}
        try:
            passport = Passport(name="dba", auth=AuthBlock(scheme="api_key", claim={"token": "sekrit-dba-key"}))
            await hub.register(Agent("dba", config=TestConfig("Add an index.")), passport)
            for label, extra in (("no keys", ()), ("wrong key", ("--hub-keys", str(tmp_path / "wrong.json"))),
                                 ("its key", ("--hub-keys", str(tmp_path / "mine.json"))),
                                 ("again", ("--hub-keys", str(tmp_path / "mine.json")))):  # re-attach with the key
                if label != "again":  # (in this process; the last run is a process of its own)
                    runs[label] = await _run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                                  "--hub", server.url, *extra)
                    continue
                proc = await _turnflow_run(tmp_path, CONSULT, agents, "--hub", server.url, *extra)
                out, err = await asyncio.wait_for(proc.communicate(), 120)
                runs[label] = (proc.returncode, out.decode(), err.decode())
        finally:
            await hub.close()
        return runs

    try:
        runs = asyncio.run(main())
    finally:
        server.stop()
    assert runs["no keys"][0] == 2 and "auth_failed" in runs["no keys"][2] and "api_key" in runs["no keys"][2]
    assert runs["wrong key"][0] == 2 and "api_key rejected for 'engineer'" in runs["wrong key"][2]
    for label in ("its key", "again"):
        code, out, err = runs[label]
        assert code == 0, err
        assert "dba: Add an index." in out and "closed: consulting_complete" in out
    assert not any("sekrit" in out + err for _, out, err in runs.values())
    bare_code, _, bare_err = asyncio.run(_run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                                   "--hub-keys", str(tmp_path / "mine.json")))
    assert bare_code == 2 and "--hub-keys needs --hub" in bare_err


STARTED_BY_REMOTE = """
workflow relay "remote, local, local" {
    participant alice
    participant bob
    participant carol
    start bob
    bob   -> alice
    alice -> carol
    carol -> terminate "relayed"
}
"""


def test_run_hub_joins_a_remote_workflow_only_on_the_flows_own_graph(served, tmp_path):
    import turnflow
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.errors import ProtocolError
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig
    from turnflow.interop.ag2 import bind_agents

    spec = turnflow.compile(STARTED_BY_REMOTE)[0]
    other = turnflow.compile(STARTED_BY_REMOTE.replace('terminate "relayed"', 'terminate "elsewhere"'))[0]
    agents = ('agents:\n  alice: {kind: scripted, steps: [{say: "reviewed"}]}\n'
              '  carol: {kind: scripted, steps: [{say: "approved"}]}\n')

    async def main():
        hub = HubClient(WsLink(served.url), rpc_timeout=30)
        try:
            bob = await hub.register(Agent("bob", config=TestConfig("unused")))
            proc = await _turnflow_run(tmp_path, STARTED_BY_REMOTE, agents, "--hub", served.url)
            await asyncio.wait_for(proc.stderr.readline(), 60)  # alice and carol are registered now
            ids = {n: (await hub.get_agent(n)).agent_id for n in ("alice", "bob", "carol")}
            try:
                await bob.open(type="workflow", target=["alice", "carol"], knobs=bind_agents(other["knobs"], ids))
                refused = "opened"
            except ProtocolError as exc:  # the reject's reason is in the log of the refused session
                refused_id = str(exc).split("'")[1]
                refused = [(e.event_type, e.event_data.get("reason")) for e in await hub.read_wal(refused_id)
                           if e.event_type == "ag2.channel.invite.reject"]
            ch = await bob.open(type="workflow", target=["alice", "carol"], knobs=bind_agents(spec["knobs"], ids))
            await ch.send("draft")
            await bob.wait_for_channel_event(channel_id=ch.channel_id, timeout=60,
                                             predicate=lambda e: e.event_type == "ag2.channel.closed")
            out, err = await asyncio.wait_for(proc.communicate(), 120)
            wal = await hub.read_wal(ch.channel_id)
            return proc.returncode, refused, out.decode(), err.decode(), wal, {v: k for k, v in ids.items()}
        finally:
            await hub.close()

    code, refused, out, err, wal, names = asyncio.run(main())
    assert code == 0, err
    assert refused == [("ag2.channel.invite.reject", "the workflow differs from the flow this participant runs")]
    rounds = [(names[e.sender_id], e.event_data.get("body") or e.event_data.get("text"))
              for e in wal if e.event_type in ("ag2.packet", "ag2.msg.text")]
    assert rounds == [("bob", "draft"), ("alice", "reviewed"), ("carol", "approved")]
    assert "closed: relayed" in out


def test_run_hub_waiting_for_a_remote_opener_ends_at_timeout_or_ctrl_c(served, tmp_path):
    import signal

    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    agents = 'agents:\n  dba: {kind: scripted, steps: [{say: "x"}]}\n'

    async def main():
        hub = HubClient(WsLink(served.url), rpc_timeout=30)
        try:
            await hub.register(Agent("engineer", config=TestConfig("unused")))
            (tmp_path / "s.flow").write_text(OPENED_BY_REMOTE)
            (tmp_path / "agents.yaml").write_text(agents)
            t_code, _, t_err = await _run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                               "--hub", served.url, "--timeout", "300ms")  # (in this process)
            stopped = await _turnflow_run(tmp_path, OPENED_BY_REMOTE, agents, "--hub", served.url)
            await asyncio.wait_for(stopped.stderr.readline(), 60)  # waiting now
            stopped.send_signal(signal.SIGINT)
            _, s_err = await asyncio.wait_for(stopped.communicate(), 120)
            return t_code, t_err, stopped.returncode, s_err.decode()
        finally:
            await hub.close()

    t_code, t_err, s_code, s_err = asyncio.run(main())
    assert t_code == 2 and "'engineer' did not open the session within 0.3 s" in t_err
    assert s_code == 2 and "stopped while waiting for 'engineer' to open the session (interrupted)" in s_err
    assert "Traceback" not in t_err + s_err


def test_run_hub_acks_an_invite_sent_before_it_attached(served, tmp_path):
    """The file's agent is registered already and unbound when the remote opener invites it: the
    hub replays the pending invite when the run attaches, and the run joins that session."""
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    agents = 'agents:\n  dba: {kind: scripted, steps: [{say: "Add an index."}]}\n'

    async def main():
        hub = HubClient(WsLink(served.url), rpc_timeout=30)
        earlier = HubClient(WsLink(served.url), rpc_timeout=30)
        try:
            engineer = await hub.register(Agent("engineer", config=TestConfig("unused")))
            await earlier.register(Agent("dba", config=TestConfig("unused")))
            await earlier.close()  # dba is registered, and bound to no connection now
            opening = asyncio.ensure_future(engineer.open(type="consulting", target="dba"))
            channels = []
            while not channels:  # the invite is stored once the channel is listed (pending)
                channels = await hub.list_channels(agent_id=engineer.agent_id)
            (tmp_path / "s.flow").write_text(OPENED_BY_REMOTE)
            (tmp_path / "agents.yaml").write_text(agents)
            running = asyncio.ensure_future(_run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                                      "--hub", served.url))
            ch = await asyncio.wait_for(opening, 60)
            await ch.send("Why is it slow?")
            await engineer.wait_for_channel_event(channel_id=ch.channel_id, timeout=60,
                                                  predicate=lambda e: e.event_type == "ag2.channel.closed")
            code, out, err = await running
            return code, out, err, (await hub.get_channel(ch.channel_id)).close_reason
        finally:
            await hub.close()

    code, out, err, reason = asyncio.run(main())
    assert code == 0, err
    assert "engineer: Why is it slow?" in out and "dba: Add an index." in out
    assert reason == "consulting_complete"


GUARDED = """
workflow review "a guarded rule: all_of(from_speaker, ...) unless compiled in AG2's built-ins" {
    participant alice
    participant bob
    start alice
    max_turns 6
    context done = false
    alice -> bob
    bob -> terminate "approved" when context.done == false
    bob -> alice
}
"""

# an AG2 participant in a process of its own that never calls register_extensions()
PLAIN_AG2_PARTICIPANT = """
import asyncio, sys
from ag2 import Agent
from ag2.network import HubClient
from ag2.network.transport.ws import WsLink
from ag2.testing import TestConfig

async def main():
    hub = HubClient(WsLink(sys.stdin.readline().strip()), rpc_timeout=30)
    await hub.register(Agent("bob", config=TestConfig("looks good")))
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def test_run_hub_serves_a_guarded_workflow_to_an_unchanged_ag2_participant(tmp_path):
    """Observation 8: a workflow with a guarded rule compiled as `turnflow.compile` does needs
    AG2's extension `all_of`, which an AG2 participant's own adapter refuses unless its process
    calls register_extensions(). Served, it is compiled in AG2's built-in conditions where they
    are exact, so bob (AG2's client, nothing else) takes his turn and the workflow ends as the
    flow says; a flow that needs the extensions says so when the run starts."""
    import subprocess

    import turnflow
    from turnflow.interop.ag2 import extensions_needed

    assert extensions_needed(turnflow.compile(GUARDED)[0]["knobs"]) == ["all_of"]  # the default form
    # bob's process starts first (importing AG2 takes it seconds) and reads the hub's address once it is up
    bob = subprocess.Popen([sys.executable, "-c", PLAIN_AG2_PARTICIPANT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    served = None
    try:
        served = ServeProcess(str(tmp_path / "hub.db"), "--invite-timeout", "1.5")  # (bob is gone for the second run)
        bob.stdin.write(served.url + "\n")
        bob.stdin.close()
        assert bob.stdout.readline().strip() == "ready"
        (tmp_path / "s.flow").write_text(GUARDED)
        (tmp_path / "agents.yaml").write_text('agents:\n  alice: {kind: scripted, steps: [{say: "draft"}]}\n')
        # the runs in this process (scripted agents; bob is the process of its own that matters)
        code, out, err = asyncio.run(_run_here(str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                               "--hub", served.url, "--timeout", "20"))
        assert code == 0, err
        assert "bob: looks good" in out and "closed: approved" in out
        assert "register_extensions" not in err  # nothing for the AG2 side to do

        bob.kill()
        bob.wait()
        needs = GUARDED.replace("when context.done == false", 'when text contains "LGTM"')
        (tmp_path / "n.flow").write_text(needs)
        _, _, told = asyncio.run(_run_here(str(tmp_path / "n.flow"), "--agents", str(tmp_path / "agents.yaml"),
                                           "--hub", served.url, "--timeout", "5"))
    finally:
        bob.kill()
        bob.wait()
        if served is not None:
            served.stop()
    assert ("the workflow uses all_of, text_contains, which AG2 1.2.1 does not ship: every AG2 participant's "
            "process must call turnflow.interop.ag2.register_extensions()") in told
    # the served hub says it too, of the session that run opened
    assert "its workflow uses all_of, text_contains, which AG2 1.2.1 does not ship" in served.stderr()


# `turnflow run` with every Hub construction counted (issue 29: no hub, no mirror, in the run's process)
COUNTING_RUN = """
import sys
from turnflow.runtime.hub import Hub
made = []
init = Hub.__init__
def counted(self, *args, **kw):
    made.append(type(self).__name__)
    init(self, *args, **kw)
Hub.__init__ = counted
from turnflow.cli import main
try:
    code = main(sys.argv[1:])
finally:
    sys.stderr.write(f"hubs constructed here: {len(made)}\\n")
sys.exit(code)
"""


def test_run_hub_drives_the_served_session_with_no_hub_in_its_process(served, tmp_path):
    """The run's printed session id is the served session's, its turns are the served log's, and no
    `Hub` is constructed in the run's process (the served hub runs in its own); `--store` keeps a
    copy of the served session (same id, same rounds) and the agents' telemetry."""
    import contextlib
    import io
    import json

    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    from turnflow.cli import main as turnflow_main

    (tmp_path / "s.flow").write_text(RELAY)
    (tmp_path / "agents.yaml").write_text('agents:\n  alice: {kind: scripted, steps: [{say: "draft"}]}\n'
                                          '  carol: {kind: scripted, steps: [{say: "approved"}]}\n')
    local = tmp_path / "local.db"

    async def main():
        hub = HubClient(WsLink(served.url), rpc_timeout=30)
        try:
            bob = await hub.register(Agent("bob", config=TestConfig("reviewed")))
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", COUNTING_RUN, "run", str(tmp_path / "s.flow"), "--agents",
                str(tmp_path / "agents.yaml"), "--hub", served.url, "--store", str(local), "--verbose",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
            out, err = await asyncio.wait_for(proc.communicate(), 120)
            channels = await hub.list_channels(agent_id=bob.agent_id, include_terminal=True)
            return proc.returncode, out.decode(), err.decode(), [c.channel_id for c in channels]
        finally:
            await hub.close()

    code, out, err, channel_ids = asyncio.run(main())
    assert code == 0, err
    assert "hubs constructed here: 0" in err  # the code before issue 29 ran a mirror hub here: 1
    assert len(channel_ids) == 1
    assert out.splitlines() == [f"session {channel_ids[0]}", "  1 alice: draft", "  2 bob: reviewed", "  3 carol: approved",
                                "closed: relayed"]
    assert "telemetry alice handshake" in err and "telemetry carol handshake" in err  # --verbose, as it is kept
    with contextlib.redirect_stdout(io.StringIO()) as copy, contextlib.redirect_stderr(io.StringIO()) as copy_err:
        copied = turnflow_main(["inspect", str(local), "--format", "json"])  # (the copy read back in this process)
    assert copied == 0, copy_err.getvalue()
    (kept,) = json.loads(copy.getvalue())
    assert (kept["session_id"], kept["state"], kept["close_reason"], kept["turn_count"], kept["last_speaker"]) == \
        (channel_ids[0], "closed", "relayed", 3, "carol")
    assert [(t["agent_id"], t["event"]) for t in kept["telemetry"]] == [("alice", "handshake"), ("carol", "handshake")]


def test_run_hub_enforces_the_flows_own_expectations_on_the_served_session(served, tmp_path):
    """The wire carries no `expect` clauses: the run checks the flow's own on the served session as
    it folds it, prints each violation, and an `auto_close` one closes the served session."""
    (tmp_path / "slow.py").write_text("import asyncio\n\nasync def engineer(msg, tools):\n"
                                      "    await asyncio.sleep(60)\n    return {'say': 'late'}\n")
    flow = CONSULT.replace("participant dba respondent", "participant dba respondent\n"
                           "    expect turn_within 300ms warn\n    expect turn_within 600ms auto_close")
    agents = "agents:\n  engineer: {kind: python, ref: 'slow:engineer'}\n"
    code, out, err, wal, info, names = asyncio.run(_run_with_remote(served.url, flow, agents, "dba", "-", tmp_path))
    assert code == 1, err
    assert "warning: expectation turn_within (0.3 s) violated: 'engineer' did not speak in time" in err
    assert "closing the session: expectation turn_within (0.6 s) violated" in err
    assert out.splitlines() == [f"session {info.channel_id}", "closed: expectation_violated:turn_within"]
    assert info.close_reason == "expectation_violated:turn_within"



@pytest.mark.parametrize("offset, within, engineer, code, reason", [
    # the hub an hour behind: a turn on time is on time (0.9 s: longer than a sweep interval, 0.5 s, so
    # a sweep falls inside the turn; 1.1 s short of the limit)
    (-3600.0, "2s", "0.9", 0, "consulting_complete"),
    # an hour ahead: a late turn is still late (30 s against 600 ms: the close comes at the first
    # sweep past the limit, not 2 s in — no margin is needed on this side)
    (3600.0, "600ms", "30", 1, "expectation_violated:turn_within"),
])
def test_run_hub_measures_the_flows_expectations_on_its_own_clock_not_the_hubs(tmp_path, monkeypatch, offset, within,
                                                                              engineer, code, reason):
    """The served hub may run on another machine whose clock is off by an hour (or stepped): the
    run's own expectations time each turn from when it reads it, on its own clock. Before, they
    compared this machine's clock with the times the hub wrote: a hub an hour behind closed every
    session `expectation_violated` at the first sweep, a hub an hour ahead never caught a late turn."""
    (tmp_path / "slow.py").write_text("import asyncio, os\n\nasync def engineer(msg, tools):\n"
                                      "    await asyncio.sleep(float(os.environ['TF_ENGINEER']))\n"
                                      "    return {'say': 'why slow?'}\n")
    flow = CONSULT.replace("participant dba respondent", "participant dba respondent\n"
                           f"    expect turn_within {within} auto_close")  # swept every limit/4
    agents = "agents:\n  engineer: {kind: python, ref: 'slow:engineer'}\n"
    monkeypatch.setenv("TF_ENGINEER", engineer)
    server = ServeProcess(str(tmp_path / "hub.db"), clock_offset=offset)
    try:
        got, out, err, wal, info, _ = asyncio.run(
            _run_with_remote(server.url, flow, agents, "dba", "an index", tmp_path, here=True))
    finally:
        server.stop()
    assert (got, info.close_reason) == (code, reason), err


@pytest.mark.parametrize("offset", [-3600.0, 3600.0])
def test_run_hub_times_acks_within_on_its_own_clock_too(offset):
    """`acks_within` counts from the session's opening: as this process saw it, not as the served
    hub's clock wrote it (an hour behind, it fired at the first check; an hour ahead, never)."""
    from datetime import datetime, timezone

    from turnflow import compile as compile_flow
    from turnflow.runtime.session_spec import SessionSpec
    from turnflow.serve.served_port import ServedPort

    now = [1_700_000_000.0]
    spec = SessionSpec.parse(compile_flow(CONSULT.replace(
        "participant dba respondent", "participant dba respondent\n    expect acks_within 2s warn"), path="c.flow")[0])
    opened = datetime.fromtimestamp(now[0] + offset, timezone.utc).isoformat()
    channel = {"channel_id": "0" * 32, "created_at": opened, "creator_id": "E" * 32,
               "participants": [{"agent_id": "E" * 32, "order": 0}, {"agent_id": "D" * 32, "order": 1}]}
    port = ServedPort(object(), channel, spec, {"engineer": "E" * 32, "dba": "D" * 32}, {"engineer"},
                      clock=lambda: now[0])

    async def sweeps():
        first = await port.sweep()
        now[0] += 2.5  # the invite waits 2.5 s by this process's clock
        return first, await port.sweep()
    first, later = asyncio.run(sweeps())
    assert first == []
    assert [(e.event_data["name"], e.event_data["agent_id"]) for e in later] == [("acks_within", "dba")]

    async def copied():  # the local copy (`--store`) keeps the time the served hub wrote
        from turnflow.runtime.hub import Hub
        from turnflow.runtime.store import SQLiteStore

        store = SQLiteStore(":memory:")
        await port.copy_to(store)
        hub = await Hub.open(store)
        try:
            return (await hub.get_session("0" * 32)).created_at
        finally:
            await hub.aclose()
    assert asyncio.run(copied()) == opened.replace("+00:00", ".000Z")
