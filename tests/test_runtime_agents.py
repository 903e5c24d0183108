"""The participant side: ScriptedAgent steps, the SessionTools round, telemetry."""

from __future__ import annotations

import json

import pytest

from runtime_helpers import FIXTURES, active, new_hub, run
from turnflow.cli import main
from turnflow.runtime.agents import Capabilities, ScriptedAgent, SessionTools
from turnflow.runtime.errors import AdapterError

TOOLS = ({"name": "to_b", "description": "B knows", "target": "b"},)


def test_a_round_collects_one_packet():
    t = SessionTools("a", ("a", "b"), TOOLS)
    t.send_message("hello")
    t.execute_tool_call("to_b", {"reason": "B knows"})
    t.set_context("k", 1)
    t.delete_context("old")
    assert t.round() == {"body": "hello", "kind": "handoff", "tool": "to_b", "reason": "B knows", "target": None,
                         "set": {"k": 1}, "delete": ["old"]}
    t.finish("done")
    assert (t.round()["kind"], t.round()["reason"], t.round()["tool"]) == ("finish", "done", "to_b")


def test_tools_are_checked():
    t = SessionTools("a", ("a", "b"), TOOLS)
    with pytest.raises(AdapterError, match="has no routing tool 'to_c' \\(its tools: to_b\\)"):
        t.execute_tool_call("to_c")
    with pytest.raises(AdapterError, match="not a participant"):
        t.handoff("ghost")
    assert SessionTools("a", ("a", "b"), (), any_tool=True).execute_tool_call("anything") == "routed via anything"
    assert t.get_tool_schemas("openai")[0]["function"]["name"] == "to_b"
    assert t.get_tool_schemas("anthropic")[0] == {"name": "to_b", "description": "B knows", "input_schema": {
        "type": "object", "properties": {"reason": {"type": "string"}}, "required": []}}
    with pytest.raises(AdapterError, match="unknown tool schema format"):
        t.get_tool_schemas("xml")


def test_scripted_agent_plays_its_steps_then_raises():
    agent = ScriptedAgent("a", [{"say": "one"}, {"say": "two", "set": {"x": 1}, "delete": "y"}])

    async def go():
        rounds = []
        for _ in range(2):
            t = SessionTools("a", ("a", "b"))
            await agent.on_message([], t)
            rounds.append(t.round())
        with pytest.raises(AdapterError, match="its script ran out after 2 steps"):
            await agent.on_message([], SessionTools("a", ("a", "b")))
        return rounds
    rounds = run(go())
    assert [(r["body"], r["set"], r["delete"]) for r in rounds] == [("one", {}, []), ("two", {"x": 1}, ["y"])]
    with pytest.raises(AdapterError, match="`set` must be a mapping"):
        ScriptedAgent("a", [{"set": [1]}])
    with pytest.raises(AdapterError, match="step must be a non-empty mapping"):
        ScriptedAgent("a", [{}])


def test_bad_capabilities_fail_the_handshake():
    with pytest.raises(AdapterError, match="control_loop must be 'hub', 'self' or 'atlas'"):
        Capabilities(control_loop="sometimes").check("a")


def test_telemetry_is_validated_and_stored():
    async def go():
        hub = await new_hub()
        md = await active(hub, "conversation", ["x", "y"])
        assert await hub.emit_telemetry(md.session_id, "x", {"event": "progress", "payload": {"p": 1}, "step": 2})
        with pytest.warns(UserWarning, match="dropped malformed telemetry"):
            assert not await hub.emit_telemetry(md.session_id, "x", {"event": "bogus"})
        stored = hub.store.telemetry(md.session_id)
        assert [(t["agent_id"], t["event"], t["payload"]) for t in stored] == [("x", "progress", {"p": 1})]
        assert [e.event_type for e in hub.read(md.session_id)][-1] == "session.opened"  # not in the log
    run(go())


def test_store_path_problems_are_clear(tmp_path, capsys):
    spec, agents = str(FIXTURES / "support.json"), str(FIXTURES / "support_agents.yaml")
    assert main(["run", spec, "--agents", agents, "--store", str(tmp_path)]) == 2  # a directory: unusable store
    err = capsys.readouterr().err
    assert "cannot open as a turnflow store" in err and "Traceback" not in err
    assert main(["run", spec, "--agents", agents, "--store", str(tmp_path / "h.db"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "closed"
