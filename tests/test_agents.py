"""The agent contract in detail: handshakes, failed turns, telemetry, SessionTools,
FakeSessionTools, FunctionAgent, `kind: python` agents files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from runtime_helpers import FakeClock, run_on_hub
from turnflow import compile as compile_flow
from turnflow.cli import main
from turnflow.runtime.agents import (Capabilities, FakeSessionTools, FunctionAgent, ScriptedAgent, SessionTools,
                                     ToolError, telemetry_problem)
from turnflow.runtime.errors import AdapterError
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.store import SQLiteStore

FIX = Path(__file__).parent / "fixtures" / "agents"
PAIR = compile_flow((FIX / "pair.flow").read_text(), path="pair.flow")[0]
PAIR_FLOW = str(FIX / "pair.flow")


def session(agents, spec=PAIR, task=None):
    return run_on_hub(agents, spec, task)


def helper_ok():
    return ScriptedAgent("helper", [{"say": "ANSWER: yes"}])


def asker_ok():
    return ScriptedAgent("asker", [{"say": "Question?", "tool": "ask_helper"}])


class Handshaking:
    """An agent whose handshake answer is given."""

    def __init__(self, answer, raises=None):
        self.answer, self.raises = answer, raises
        self.closed = 0

    async def open_session(self, ctx, emit):
        if self.raises:
            raise self.raises
        return self.answer

    async def on_message(self, msg, tools):
        tools.send_message("ANSWER: fine")

    async def close_session(self, session_id):
        self.closed += 1


# -- handshake ----------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, raises, message", [
    (None, None, "bad handshake: open_session must return Capabilities, got NoneType"),
    ({"control_loop": "both"}, None, "bad handshake: control_loop must be 'hub', 'self' or 'atlas', got 'both'"),
    ({"loop": "hub"}, None, "bad handshake: unknown capability 'loop'"),
    ({"telemetry_stream": "yes"}, None, "bad handshake: telemetry_stream must be true or false, got 'yes'"),
    (Capabilities("hub", supports_stepwise=False), None, "control_loop 'hub' needs supports_stepwise"),
    (Capabilities(), RuntimeError("no GPU"), "agent 'helper': handshake failed: RuntimeError: no GPU"),
])
def test_a_bad_handshake_fails_the_session_start_clearly_and_is_logged(answer, raises, message):
    agent = Handshaking(answer, raises)
    res, tel = session({"asker": asker_ok(), "helper": agent})
    assert message in res.error
    assert (res.state, res.close_reason, res.turns) == ("closed", "invite_rejected", [])
    hs = [t for t in tel if t["agent_id"] == "helper"]
    assert len(hs) == 1 and hs[0]["event"] == "handshake" and hs[0]["effective"] is None
    assert message in hs[0]["error"]
    assert agent.closed == 1  # closed anyway


def test_raw_and_effective_capabilities_are_both_logged():
    res, tel = session({"asker": asker_ok(), "helper": Handshaking({"telemetry_stream": True})})
    assert res.close_reason == "answered"
    hs = {t["agent_id"]: t for t in tel if t["event"] == "handshake"}
    assert hs["helper"]["raw"] == {"telemetry_stream": True}
    assert hs["helper"]["effective"] == {"control_loop": "hub", "supports_stepwise": True, "telemetry_stream": True}
    assert hs["asker"]["raw"] == hs["asker"]["effective"]


# -- failed turns -------------------------------------------------------------------------------

def test_a_failed_turn_is_logged_and_retried_once_with_the_same_input():
    seen = []

    def flaky(msg, tools):
        seen.append([m["text"] for m in msg])
        if len(seen) == 1:
            raise ConnectionError("model overloaded")
        return "ANSWER: second try"
    res, tel = session({"asker": asker_ok(), "helper": FunctionAgent(flaky)})
    assert (res.close_reason, res.error) == ("answered", None)
    assert seen[0] == seen[1] and len(seen) == 2
    errors = [t for t in tel if t["event"] == "error"]
    where = f"tests/test_agents.py:{flaky.__code__.co_firstlineno + 3} in flaky"  # the `raise`
    assert errors == [{"agent_id": "helper", "at": errors[0]["at"], "event": "error", "step": 2,
                       "reason": f"turn failed: ConnectionError: model overloaded (at {where})",
                       "payload": {"attempt": 1, "error": "ConnectionError", "action": "retry", "where": where}}]


def test_a_turn_that_fails_twice_closes_the_session_with_a_clear_reason():
    res, tel = session({"asker": ScriptedAgent("asker", [{"say": "?", "tool": "ask_someone"}]),
                        "helper": helper_ok()})
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert res.error == ("agent 'asker' failed turn 1 twice: asker has no routing tool 'ask_someone' "
                         "(its tools: ask_helper)")
    assert [(e["payload"]["attempt"], e["payload"]["action"]) for e in tel if e["event"] == "error"] == [
        (1, "retry"), (2, "close_session")]


def test_a_script_that_runs_out_fails_its_turn():
    res, _ = session({"asker": ScriptedAgent("asker", [{"say": "?", "tool": "ask_helper"}]),
                      "helper": ScriptedAgent("helper", [{"say": "no idea"}])})
    # helper -> asker; the asker has no second step
    assert res.close_reason == "agent_error" and "its script ran out after 1 step" in res.error
    assert [t["speaker"] for t in res.turns] == ["asker", "helper"]


# -- telemetry ----------------------------------------------------------------------------------

def test_telemetry_is_validated_stamped_stored_and_shown_by_inspect(tmp_path, capsys):
    def helper(msg, tools):
        assert tools.emit_event({"event": "progress", "payload": {"pct": 50}, "reason": "thinking"})
        assert tools.emit_event({"event": "tool_response", "payload": "ok", "step": 7})
        with pytest.warns(UserWarning, match="dropped malformed telemetry event from 'helper'"):
            assert tools.emit_event({"event": "gossip"}) is False
        with pytest.warns(UserWarning, match="unknown key 'colour'"):
            assert tools.emit_event({"event": "progress", "colour": "red"}) is False
        return "ANSWER: done"
    db = str(tmp_path / "hub.db")

    async def go():
        hub = await Hub.open(SQLiteStore(db), clock=FakeClock(5.0))
        try:
            return await run_session(hub, PAIR, {"asker": asker_ok(), "helper": FunctionAgent(helper)})
        finally:
            await hub.aclose()
    res = asyncio.run(go())
    assert res.close_reason == "answered"
    assert main(["inspect", db, "--format", "json"]) == 0
    (info,) = json.loads(capsys.readouterr().out)
    events = [t for t in info["telemetry"] if t["event"] != "handshake"]
    assert events == [
        {"agent_id": "helper", "at": 5.0, "event": "progress", "payload": {"pct": 50}, "reason": "thinking", "step": 2},
        {"agent_id": "helper", "at": 5.0, "event": "tool_response", "payload": "ok", "reason": None, "step": 7}]
    assert main(["inspect", db, "--events"]) == 0
    text = capsys.readouterr().out
    assert 'telemetry helper progress step=2 reason=thinking payload={"pct": 50}' in text


@pytest.mark.parametrize("event, problem", [
    ([], "a telemetry event is a mapping or an AdapterTelemetryEvent, got list"),
    ({"payload": 1}, "`event` must be one of env_action, tool_response, progress, error, thought, task, got None"),
    ({"event": "error", "reason": 3}, "`reason` must be a string, got 3"),
    ({"event": "error", "step": -1}, "`step` must be a non-negative integer, got -1"),
    ({"event": "error", "step": True}, "`step` must be a non-negative integer, got True"),
    ({"event": "error", "payload": float("nan")}, "`payload` must be a JSON value"),
    ({"event": "error", "payload": {1, 2}}, "`payload` must be a JSON value"),
])
def test_malformed_telemetry_events_are_named(event, problem):
    assert problem in telemetry_problem(event)


def test_the_handshake_emit_drops_malformed_events_and_stores_valid_ones():
    class Streaming(Handshaking):
        async def open_session(self, ctx, emit):
            with pytest.warns(UserWarning):
                assert await emit({"event": "nope"}) is False
            assert await emit({"event": "progress", "reason": "warming up"}) is True
            return Capabilities(telemetry_stream=True)
    res, tel = session({"asker": asker_ok(), "helper": Streaming(None)})
    assert res.close_reason == "answered"
    assert [(t["agent_id"], t["event"], t.get("reason")) for t in tel if t["event"] == "progress"] == [
        ("helper", "progress", "warming up")]


# -- SessionTools / FakeSessionTools -------------------------------------------------------------

def tools_for(**kw):
    return SessionTools("triage", ("user", "triage", "billing"),
                        ({"name": "transfer_to_billing", "description": "money", "target": "billing"},), **kw)


def test_tool_schemas_in_both_formats():
    t = tools_for()
    (o,) = t.get_tool_schemas("openai")
    (a,) = t.get_tool_schemas("anthropic")
    assert o["function"]["name"] == a["name"] == "transfer_to_billing"
    assert o["function"]["description"] == a["description"] == "money"
    assert o["function"]["parameters"] == a["input_schema"]
    with pytest.raises(AdapterError, match="unknown tool schema format 'gemini'"):
        t.get_tool_schemas("gemini")


@pytest.mark.parametrize("name, args, message", [
    ("transfer_to_tech", None, "triage has no routing tool 'transfer_to_tech' (its tools: transfer_to_billing)"),
    ("transfer_to_billing", "{oops", "arguments are not valid JSON"),
    ("transfer_to_billing", "[1]", "arguments must be an object, got [1]"),
    ("transfer_to_billing", {"target": "tech"}, "unknown argument 'target'"),
    ("transfer_to_billing", {"reason": 5}, "`reason` must be a string, got 5"),
])
def test_bad_tool_calls_raise_tool_errors(name, args, message):
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        tools_for().execute_tool_call(name, args)


def test_a_routing_tool_call_makes_the_round_an_ag2_handoff_packet_routing():
    t = tools_for()
    assert t.execute_tool_call("transfer_to_billing", '{"reason": "refund"}') == "routed via transfer_to_billing"
    t.send_message("Over to billing")
    assert t.round() == {"body": "Over to billing", "kind": "handoff", "tool": "transfer_to_billing",
                         "reason": "refund", "target": None, "set": {}, "delete": []}
    t.execute_tool_call("transfer_to_billing")  # the same tool again is harmless
    two = SessionTools("a", ("a", "b"), any_tool=True)
    two.execute_tool_call("x")
    with pytest.raises(ToolError, match="already routed via x; one routing tool per round"):
        two.execute_tool_call("y")


def test_handoff_finish_and_context():
    t = tools_for()
    with pytest.raises(ToolError, match="cannot hand off to 'tech': not a participant"):
        t.handoff("tech")
    t.handoff("billing", "money")
    t.set_context("resolved", False)
    with pytest.raises(AdapterError, match="must be a JSON value"):
        t.set_context("when", object())
    t.finish("done", "summary text")
    assert t.round() == {"body": "summary text", "kind": "finish", "tool": None, "reason": "done", "target": None,
                         "set": {"resolved": False}, "delete": []}
    assert t.get_participants() == ["user", "triage", "billing"]


def test_fake_session_tools_unit_tests_a_users_agent():
    async def triage(msg, tools):
        if "refund" in msg[-1]["text"]:
            tools.emit_event({"event": "progress", "reason": "classified as billing"})
            tools.execute_tool_call("transfer_to_billing", {"reason": "refund"})
            return "Billing will help"
        return "Could you tell me more?"
    tools = FakeSessionTools("triage", participants=["user", "triage", "billing"],
                             tools=[{"name": "transfer_to_billing", "description": "money"}])
    asyncio.run(FunctionAgent(triage).on_message([{"sender": "user", "text": "refund please"}], tools))
    assert tools.tool_calls == ["transfer_to_billing"]
    assert tools.messages == ["Billing will help"]
    assert tools.round()["kind"] == "handoff"
    assert [e["reason"] for e in tools.events] == ["classified as billing"]
    with pytest.warns(UserWarning):
        tools.emit_event({"event": "bogus"})
    assert tools.dropped == [{"event": "bogus"}]
    other = FakeSessionTools("triage", tools=["transfer_to_billing"])
    asyncio.run(FunctionAgent(triage).on_message([{"sender": "user", "text": "hello"}], other))
    assert other.round()["kind"] == "text" and other.calls == [("send_message", "Could you tell me more?")]


# -- FunctionAgent ------------------------------------------------------------------------------

def test_function_agent_results():
    async def go(fn):
        t = FakeSessionTools("asker", ["asker", "helper"], ["ask_helper"])
        await FunctionAgent(fn).on_message([], t)
        return t.round()
    assert asyncio.run(go(lambda m, t: "hi"))["body"] == "hi"
    assert asyncio.run(go(lambda m, t: {"say": "q", "tool": "ask_helper"}))["tool"] == "ask_helper"
    assert asyncio.run(go(lambda m, t: None))["body"] == ""
    with pytest.raises(AdapterError, match="must return None, a string or a step mapping, got int"):
        asyncio.run(go(lambda m, t: 3))
    with pytest.raises(AdapterError, match="unknown step key 'shout'"):
        asyncio.run(go(lambda m, t: {"shout": "x"}))
    with pytest.raises(AdapterError, match="needs a callable"):
        FunctionAgent("not callable")


# -- kind: python -------------------------------------------------------------------------------

def test_python_agents_from_the_agents_file(tmp_path, capsys):
    (tmp_path / "my_agents_t6.py").write_text('''
from turnflow.runtime.agents import Capabilities

def asker(msg, tools):
    tools.execute_tool_call("ask_helper")
    return "What now?"

class Helper:
    async def open_session(self, ctx, emit):
        return Capabilities()
    async def on_message(self, msg, tools):
        tools.send_message("ANSWER: " + msg[-1]["text"])
    async def close_session(self, session_id):
        pass

helper = Helper()
''')
    agents = tmp_path / "agents.yaml"
    agents.write_text('agents:\n  asker: {kind: python, ref: "my_agents_t6:asker"}\n'
                      '  helper: {kind: python, ref: "my_agents_t6:helper"}\n')
    assert main(["run", PAIR_FLOW, "--agents", str(agents), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["body"] for t in out["turns"]] == ["What now?", "ANSWER: [asker] [Handed off via ask_helper]\nWhat now?"]
    assert out["close_reason"] == "answered"


@pytest.mark.parametrize("ref, message", [
    ("no_such_module_t6:f", "cannot import module 'no_such_module_t6'"),
    ("os:no_such_attr", "module 'os' has no attribute 'no_such_attr'"),
    ("os:path", "is neither an agent object"),
    ("os:system('true')", "`ref` must be \"module:function\""),
    ("__import__('os')", "`ref` must be \"module:function\""),
])
def test_bad_python_refs_are_clear_errors_and_nothing_is_evaluated(tmp_path, capsys, ref, message):
    agents = tmp_path / "agents.yaml"
    agents.write_text(f"agents:\n  asker: {{kind: python, ref: {json.dumps(ref)}}}\n"
                      "  helper: {kind: scripted, steps: [{say: x}]}\n")
    assert main(["run", PAIR_FLOW, "--agents", str(agents)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("conf, message", [
    ("{kind: openai, model: m, max_rounds: 0}", "`max_rounds` must be a positive integer, got 0"),
    ("{kind: openai, model: m, timeout: -1}", "`timeout` must be a positive number of seconds"),
    ("{kind: openai, model: m, temperture: 1}", "unknown key 'temperture' for a openai agent"),
    ("{kind: python}", "`ref` must be \"module:function\""),
    ("{kind: robot}", "unknown kind 'robot' (supported: scripted, openai, anthropic, python, langgraph, ag2, autogen)"),
])
def test_bad_agent_entries(tmp_path, capsys, conf, message):
    agents = tmp_path / "agents.yaml"
    agents.write_text(f"agents:\n  asker: {conf}\n  helper: {{kind: scripted, steps: [{{say: x}}]}}\n")
    assert main(["run", PAIR_FLOW, "--agents", str(agents)]) == 1
    assert message in capsys.readouterr().err
