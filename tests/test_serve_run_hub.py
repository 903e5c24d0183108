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


async def _run_with_remote(url, flow, agents_yaml, remote_name, reply, tmp_path):
    from ag2 import Agent
    from ag2.network import HubClient
    from ag2.network.transport.ws import WsLink
    from ag2.testing import TestConfig

    (tmp_path / "s.flow").write_text(flow)
    (tmp_path / "agents.yaml").write_text(agents_yaml)
    hub = HubClient(WsLink(url), rpc_timeout=30)
    try:
        remote = await hub.register(Agent(remote_name, config=TestConfig(reply)))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "turnflow", "run", str(tmp_path / "s.flow"), "--agents", str(tmp_path / "agents.yaml"),
            "--hub", url, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        channels = await hub.list_channels(agent_id=remote.agent_id, include_terminal=True)
        assert len(channels) == 1
        wal = await hub.read_wal(channels[0].channel_id)
        info = await hub.get_channel(channels[0].channel_id)
        names = {p.agent_id: (await hub.get_agent(p.agent_id)).name for p in info.participants}
        return proc.returncode, out.decode(), err.decode(), wal, info, names
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
        _run_with_remote(served.url, CONSULT, agents, "dba", "Add an index on orders(user_id).", tmp_path))
    assert code == 0, err
    assert "engineer: Why is the orders query slow?" in out and "dba: Add an index on orders(user_id)." in out
    assert "closed: consulting_complete" in out
    said = [(names[e.sender_id], e.event_data["text"]) for e in wal if e.event_type == "ag2.msg.text"]
    assert said == [("engineer", "Why is the orders query slow?"), ("dba", "Add an index on orders(user_id).")]
    assert info.close_reason == "consulting_complete"


def test_run_hub_drives_a_workflow_with_a_remote_participant_in_the_middle(served, tmp_path):
    agents = ('agents:\n  alice: {kind: scripted, steps: [{say: "draft"}]}\n'
              '  carol: {kind: scripted, steps: [{say: "approved"}]}\n')
    code, out, err, wal, info, names = asyncio.run(
        _run_with_remote(served.url, RELAY, agents, "bob", "reviewed", tmp_path))
    assert code == 0, err
    rounds = [(names[e.sender_id], e.event_data.get("body") or e.event_data.get("text"))
              for e in wal if e.event_type in ("ag2.packet", "ag2.msg.text")]
    assert rounds == [("alice", "draft"), ("bob", "reviewed"), ("carol", "approved")]
    assert info.close_reason == "relayed" and "closed: relayed" in out


def test_run_hub_says_clearly_when_a_participant_is_nowhere(served, tmp_path):
    import subprocess

    (tmp_path / "s.flow").write_text(CONSULT)
    (tmp_path / "agents.yaml").write_text('agents:\n  engineer: {kind: scripted, steps: [{say: "hi"}]}\n')
    res = subprocess.run([sys.executable, "-m", "turnflow", "run", str(tmp_path / "s.flow"), "--agents",
                          str(tmp_path / "agents.yaml"), "--hub", served.url], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2
    assert "participant 'dba' is not in the agents file and not registered with the hub" in res.stderr
    unreachable = subprocess.run([sys.executable, "-m", "turnflow", "run", str(tmp_path / "s.flow"), "--agents",
                                  str(tmp_path / "agents.yaml"), "--hub", "ws://127.0.0.1:1"], capture_output=True,
                                 text=True, timeout=120, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert unreachable.returncode == 2 and "cannot reach the hub" in unreachable.stderr
