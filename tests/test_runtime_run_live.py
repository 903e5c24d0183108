"""`turnflow run` during a real session: expectations and TTL enforced while agents work (fake
clock in-process, a real 1 s deadline through the CLI), signals, live output, agent errors a
user can act on, and the capabilities an agent declares."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runtime_helpers import FakeClock, FIXTURES, run
from turnflow.cli import main
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent
from turnflow.runtime.agents.contract import Capabilities
from turnflow.runtime.envelope import EV_EXPECTATION_VIOLATED
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import RunControl, run_session
from turnflow.runtime.store import SQLiteStore

SPEC = str(FIXTURES / "support.json")
AGENTS = str(FIXTURES / "support_agents.yaml")
ROOT = Path(__file__).resolve().parents[1]


def pair_spec(expectations=(), ttl=None, kind="workflow"):
    if kind == "discussion":
        return {"kind": "discussion", "name": "d", "participants": [
            {"agent_id": a, "role": "initiator" if a == "a" else "participant", "order": i}
            for i, a in enumerate("abc")], "knobs": {"ordering": "round_robin"},
            "expectations": list(expectations), "ttl_seconds": ttl, "tools": []}
    graph = {"initial_speaker": "a", "transitions": [
        {"when": {"name": "from_speaker", "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": {"agent_id": "b"}},
         "priority": 0}], "default_target": {"name": "terminate", "args": {"reason": "done"}}, "max_turns": None}
    return {"kind": "workflow", "name": "w", "participants": [
        {"agent_id": "a", "role": "initiator", "order": 0}, {"agent_id": "b", "role": "participant", "order": 1}],
        "knobs": {"graph": graph}, "expectations": list(expectations), "ttl_seconds": ttl, "tools": []}


def exp(name, seconds, action):
    return {"name": name, "params": {"seconds": seconds}, "on_violation": action}


def go(spec, agents, clock, on_violation=None, **kw):
    async def inner():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=clock)
        if on_violation is not None:
            async def listener(env, md):
                if env.event_type == EV_EXPECTATION_VIOLATED:
                    on_violation.set()
            hub.subscribe(listener)
        res = await run_session(hub, spec, agents, sweep_interval=0.01, **kw)
        envs = list(hub.read(res.session_id))
        tel = hub.store.telemetry(res.session_id)
        await hub.aclose()
        return res, envs, tel
    return run(inner())


def stalling(clock, seconds, calls, then=None):
    async def fn(msg, tools):
        calls.append(time.monotonic())
        if then is not None and len(calls) > 1:
            return then
        clock.advance(seconds)
        await asyncio.sleep(30)  # stuck: only the hub can end this turn
        return "never"
    return fn


# -- expectations and TTL on a fake clock ---------------------------------------------------------

def test_auto_close_ends_a_stuck_turn_which_is_not_retried():
    clock, calls = FakeClock(), []
    t0 = time.monotonic()
    res, envs, tel = go(pair_spec([exp("turn_within", 5, "auto_close")]),
                        {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": FunctionAgent(stalling(clock, 6, calls))}, clock)
    assert time.monotonic() - t0 < 5
    assert (res.state, res.close_reason, res.error, res.ok) == ("closed", "expectation_violated:turn_within", None, False)
    assert len(calls) == 1  # the turn the hub closed was not retried
    assert [e.event_data["name"] for e in envs if e.event_type == EV_EXPECTATION_VIOLATED] == ["turn_within"]
    assert [t for t in tel if t["event"] == "error"] == []


def test_ttl_expires_the_session_while_an_agent_works():
    clock, calls = FakeClock(), []
    res, _, _ = go(pair_spec(ttl=60), {"a": FunctionAgent(stalling(clock, 61, calls)),
                                       "b": ScriptedAgent("b", [{"say": "x"}])}, clock)
    assert (res.state, res.close_reason, res.ok) == ("expired", "ttl_expired", False)


def test_warn_is_stored_and_the_session_goes_on():
    clock, violated = FakeClock(), asyncio.Event()

    async def slow(msg, tools):
        clock.advance(6)
        await asyncio.wait_for(violated.wait(), 20)  # the sweeper notices meanwhile
        return {"say": "late but here"}
    res, envs, _ = go(pair_spec([exp("turn_within", 5, "warn")]),
                      {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": FunctionAgent(slow)}, clock, violated)
    assert (res.close_reason, res.ok) == ("done", True)
    warned = [e for e in envs if e.event_type == EV_EXPECTATION_VIOLATED]
    assert [(e.event_data["action"], e.event_data["agent_id"], e.audience) for e in warned] == [("warn", "b", None)]
    assert [t["body"] for t in res.turns] == ["hi", "late but here"]


def test_hide_moves_the_turn_on_and_cancels_the_stalled_turn():
    clock, calls = FakeClock(), []
    agents = {"a": ScriptedAgent("a", [{"say": "opening"}]),
              "b": FunctionAgent(stalling(clock, 11, calls)),
              "c": ScriptedAgent("c", [{"say": "I take it from here", "finish": "wrapped_up"}])}
    res, envs, _ = go(pair_spec([exp("turn_within", 10, "hide")], kind="discussion"), agents, clock)
    assert [t["speaker"] for t in res.turns] == ["a", "c"]
    assert (res.close_reason, res.ok) == ("wrapped_up", True)
    assert [(e.event_data["action"], e.event_data["agent_id"]) for e in envs
            if e.event_type == EV_EXPECTATION_VIOLATED] == [("hide", "b")]
    assert len(calls) == 1


def test_audit_is_recorded_for_nobody_and_changes_nothing():
    clock, violated = FakeClock(), asyncio.Event()

    async def slow(msg, tools):
        clock.advance(6)
        await asyncio.wait_for(violated.wait(), 20)  # the sweeper notices meanwhile
        return "ok"
    res, envs, _ = go(pair_spec([exp("max_silence", 5, "audit")]),
                      {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": FunctionAgent(slow)}, clock, violated)
    assert res.close_reason == "done"
    assert [e.audience for e in envs if e.event_type == EV_EXPECTATION_VIOLATED] == [[]]


# -- capabilities ---------------------------------------------------------------------------------

class Flaky:
    def __init__(self, caps):
        self.caps, self.calls = caps, 0

    async def open_session(self, ctx, emit):
        return self.caps

    async def on_message(self, msg, tools):
        self.calls += 1
        if self.calls == 1:
            raise ConnectionError("first call fails")
        tools.send_message("second call")

    async def close_session(self, sid):
        pass


def test_control_loop_self_gets_one_call_per_turn_and_no_retry():
    hub_driven, self_driven = Flaky(Capabilities()), Flaky(Capabilities(control_loop="self"))
    a = {"a": ScriptedAgent("a", [{"say": "hi"}])}
    res1, _, _ = go(pair_spec(), {**a, "b": hub_driven}, FakeClock())
    res2, _, tel = go(pair_spec(), {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": self_driven}, FakeClock())
    assert (hub_driven.calls, res1.close_reason) == (2, "done")
    assert (self_driven.calls, res2.close_reason) == (1, "agent_error")
    assert "failed turn 2: ConnectionError: first call fails" in res2.error
    assert [t["payload"]["action"] for t in tel if t["event"] == "error"] == ["close_session"]


def test_a_single_shot_agent_is_called_once_per_session():
    calls = []

    class Once:
        async def open_session(self, ctx, emit):
            return {"control_loop": "self", "supports_stepwise": False}

        async def on_message(self, msg, tools):
            calls.append(1)
            tools.send_message("all at once")

        async def close_session(self, sid):
            pass
    spec = pair_spec()
    spec["knobs"]["graph"]["transitions"].append(
        {"when": {"name": "from_speaker", "args": {"agent_id": "b"}}, "then": {"name": "agent", "args": {"agent_id": "a"}},
         "priority": 0})
    res, _, _ = go(spec, {"a": ScriptedAgent("a", [{"say": "1"}, {"say": "2"}]), "b": Once()}, FakeClock())
    assert len(calls) == 1 and res.close_reason == "agent_error"
    assert "single-shot (supports_stepwise: false)" in res.error


def test_telemetry_with_metadata_reaches_subscribers_while_the_turn_runs():
    seen, order = [], []

    async def chatty(msg, tools):
        assert tools.emit_event({"event": "progress", "reason": "thinking", "metadata": {"model": "m", "tokens": 3}})
        await asyncio.sleep(0)
        order.append(("turn still running", len(seen)))
        return "done thinking"

    async def inner():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        hub.subscribe_telemetry(lambda sid, rec: seen.append(rec))
        res = await run_session(hub, pair_spec(), {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": FunctionAgent(chatty)})
        stored = hub.store.telemetry(res.session_id)
        await hub.aclose()
        return stored
    stored = run(inner())
    ev = [r for r in stored if r["event"] == "progress"]
    assert ev and ev[0]["metadata"] == {"model": "m", "tokens": 3}
    assert order == [("turn still running", 3)]  # two handshakes, then the event: before the turn ended


def test_sync_agents_run_in_a_worker_thread_so_the_loop_keeps_sweeping():
    clock, release = FakeClock(), threading.Event()

    def blocking(msg, tools):
        clock.advance(6)
        release.wait(30)  # a synchronous agent stuck in a blocking call (let go once the test has its answer)
        return "never"
    t0 = time.monotonic()
    try:
        res, _, _ = go(pair_spec([exp("turn_within", 5, "auto_close")]),
                       {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": FunctionAgent(blocking)}, clock)
        assert time.monotonic() - t0 < 3
    finally:
        release.set()
    assert res.close_reason == "expectation_violated:turn_within"


def test_run_control_interrupt_closes_the_session_interrupted():
    async def inner():
        hub = await Hub.open(SQLiteStore(":memory:"))
        ctl = RunControl()

        async def wait_forever(msg, tools):
            asyncio.get_running_loop().call_later(0.05, ctl.interrupt)
            await asyncio.sleep(30)
        res = await run_session(hub, pair_spec(), {"a": ScriptedAgent("a", [{"say": "hi"}]),
                                                   "b": FunctionAgent(wait_forever)}, control=ctl)
        await hub.aclose()
        return res
    res = run(inner())
    assert (res.state, res.close_reason, res.interrupted, res.error, res.ok) == ("closed", "interrupted", True, None, False)
    assert [t["body"] for t in res.turns] == ["hi"]


# -- the CLI --------------------------------------------------------------------------------------

def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


AGENT_MODULE = '''
import os, time

def opener(msg, tools):
    return "hello"

def sleeper(msg, tools):
    marker = os.environ.get("TF_MARKER")
    if marker:
        open(marker, "w").write("started")
    time.sleep(float(os.environ.get("TF_SLEEP", "60")))
    return "woke up"

def broken(msg, tools):
    values = {}
    return values["missing"]
'''


def cli_files(tmp_path, expectation=None, second="sleeper"):
    module = f"agents_{tmp_path.name.replace('-', '_')}"  # each test its own module: imports are cached
    write(tmp_path, f"{module}.py", AGENT_MODULE)
    spec = pair_spec([expectation] if expectation else [])
    spec_path = write(tmp_path, "spec.json", json.dumps(spec))
    agents = write(tmp_path, "agents.yaml", f"agents:\n  a: {{kind: python, ref: \"{module}:opener\"}}\n"
                                            f"  b: {{kind: python, ref: \"{module}:{second}\"}}\n")
    return spec_path, agents


def test_a_real_one_second_expectation_closes_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TF_SLEEP", "8")
    spec, agents = cli_files(tmp_path, exp("turn_within", 1, "auto_close"))
    t0 = time.monotonic()
    assert main(["run", spec, "--agents", agents]) == 1
    assert 1.0 < time.monotonic() - t0 < 4
    cap = capsys.readouterr()
    assert cap.out.splitlines()[1:] == ["  1 a: hello", "closed: expectation_violated:turn_within"]
    assert "closing the session: expectation turn_within (1 s) violated: 'b' did not speak in time" in cap.err


def test_a_python_agents_exception_names_its_file_and_line(tmp_path, capsys):
    spec, agents = cli_files(tmp_path, second="broken")
    assert main(["run", spec, "--agents", agents]) == 1
    err = capsys.readouterr().err
    assert "agent 'b' failed turn 2 twice: KeyError: 'missing' (at " in err
    assert f"{tmp_path / 'agents_'}" in err and ".py:16 in broken)" in err


def test_quiet_json_max_turns_and_timeout(tmp_path, capsys):
    assert main(["run", SPEC, "--agents", AGENTS, "--quiet"]) == 0
    cap = capsys.readouterr()
    assert (cap.out, cap.err) == ("closed: resolved\n", "")
    assert main(["run", SPEC, "--agents", AGENTS, "--format", "json", "--max-turns", "1"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["close_reason"] == "max_turns" and cap.err == ""
    spec, agents = cli_files(tmp_path)
    os.environ["TF_SLEEP"] = "8"
    try:
        t0 = time.monotonic()
        assert main(["run", spec, "--agents", agents, "--timeout", "200ms"]) == 1
        assert time.monotonic() - t0 < 4
    finally:
        del os.environ["TF_SLEEP"]
    assert capsys.readouterr().out.splitlines()[-1] == "expired: ttl_expired"
    with pytest.raises(SystemExit) as e:
        main(["run", SPEC, "--agents", AGENTS, "--timeout", "soon"])
    assert e.value.code == 2
    assert "expected a positive duration" in capsys.readouterr().err


def test_verbose_prints_telemetry_on_stderr(capsys):
    assert main(["run", SPEC, "--agents", AGENTS, "--verbose", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "telemetry triage handshake" in err


def test_a_scripted_agents_unknown_tool_is_reported_when_the_file_is_loaded(tmp_path, capsys):
    agents = write(tmp_path, "agents.yaml", "agents:\n"
                   "  triage:  {kind: scripted, steps: [{say: \"Billing it is\", tool: transfer_to_billing}]}\n"
                   "  billing:\n    kind: scripted\n    steps:\n      - {say: ok}\n      - {say: oops, tool: transfer_to_mars}\n"
                   "  user:    {kind: scripted, steps: [{say: \"Thanks\"}]}\n"
                   "  tech:    {kind: scripted, steps: [{say: \"unused\"}]}\n")
    assert main(["run", SPEC, "--agents", agents]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == (f"turnflow run: {agents}:7: agent 'billing' step 2: unknown tool 'transfer_to_mars' "
                       "(it owns no routing tools)\n")


def test_a_flow_without_blocks_is_a_clear_error(tmp_path, capsys):
    flow = write(tmp_path, "empty.flow", "# nothing here yet\n")
    assert main(["run", flow, "--agents", AGENTS]) == 1
    assert capsys.readouterr().err == f"turnflow run: {flow}: nothing to run: the file declares no blocks\n"


# -- signals to a child `turnflow run` ------------------------------------------------------------

def _child(tmp_path, extra_args, env_extra):
    spec, agents = cli_files(tmp_path)
    marker = tmp_path / "started"
    env = {**os.environ, "TF_MARKER": str(marker), "TF_SLEEP": "60",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]), **env_extra}
    proc = subprocess.Popen([sys.executable, "-m", "turnflow", "run", spec, "--agents", agents, *extra_args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 20
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return proc


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_closes_the_stored_session_interrupted(tmp_path, sig, code):
    db = tmp_path / "hub.db"
    proc = _child(tmp_path, ["--store", str(db)], {})
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == code, err
    assert out.splitlines()[1:] == ["  1 a: hello", "closed: interrupted"]
    assert f"{signal.Signals(sig).name}: closing the session (reason: interrupted)" in err
    hub = Hub(SQLiteStore(str(db)))
    hub.hydrate()
    [live] = hub.sessions.values()
    assert (live.metadata.state.value, live.metadata.close_reason) == ("closed", "interrupted")


def test_sigterm_removes_the_temporary_store(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _child(tmp_path, [], {"TMPDIR": str(tmp)})
    assert [p.name for p in tmp.iterdir() if p.name.startswith("turnflow-run-")]
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    assert proc.returncode == 143
    assert [p.name for p in tmp.iterdir() if p.name.startswith("turnflow-run-")] == []


def test_an_opener_listed_last_still_runs():
    spec = pair_spec()
    spec["participants"].reverse()
    res, _, _ = go(spec, {"a": ScriptedAgent("a", [{"say": "hi"}]), "b": ScriptedAgent("b", [{"say": "yo"}])},
                   FakeClock())
    assert ([t["speaker"] for t in res.turns], res.close_reason) == (["a", "b"], "done")


def test_a_warn_expectation_prints_a_warning_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TF_SLEEP", "0.6")
    spec, agents = cli_files(tmp_path, exp("turn_within", 0.2, "warn"))
    assert main(["run", spec, "--agents", agents]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines()[1:] == ["  1 a: hello", "  2 b: woke up", "closed: done"]
    assert cap.err == "turnflow run: warning: expectation turn_within (0.2 s) violated: 'b' did not speak in time\n"
