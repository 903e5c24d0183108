"""The platform tools as the integration contract writes them (docs/contracts.md §2), against the
real runner and hub: send_event with metadata and the adapter event types, every tool callable
both ways (sync and awaited), get_tool_schemas from the table execute_tool_call dispatches on,
paged lookup_peers over the agents the run knows, create_chatroom, and newcomers declared in the
agents file that add_participant brings in under run_session and `turnflow run`."""

from __future__ import annotations

import json

import pytest

from runtime_helpers import fixture_spec, new_hub, run
from turnflow.cli import main
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent, ToolError
from turnflow.runtime.agents.platform_tools import PLATFORM_TOOLS
from turnflow.runtime.runner import run_session

SPEC = fixture_spec("support.json")  # workflow: user, triage, billing, tech
PANEL = {"kind": "discussion", "name": "panel",
         "participants": [{"agent_id": "a", "role": "initiator"}, {"agent_id": "b", "role": "participant"}]}


def session(spec, agents, task=None, **kw):
    async def go():
        hub = await new_hub()
        res = await run_session(hub, spec, agents, task, **kw)
        tel = hub.store.telemetry(res.session_id)
        envs = list(hub.store.read_range(res.session_id))
        others = [hub.metadata(s) for s in hub.sessions if s != res.session_id]
        return res, tel, envs, others
    return run(go())


def support(**kw):
    base = {"triage": ScriptedAgent("triage", [{"say": "to billing", "tool": "transfer_to_billing"}]),
            "billing": ScriptedAgent("billing", [{"say": "done", "set": {"resolved": True}}]),
            "user": ScriptedAgent("user", [{"say": "thanks"}, {"say": "bye", "finish": "done"}]),
            "tech": ScriptedAgent("tech", [{"say": "x"}])}
    base.update(kw)
    return base


def events_of(tel, agent):
    return [t for t in tel if t["agent_id"] == agent and t["event"] != "handshake"]


# -- 1. send_event(content, message_type, metadata) ----------------------------------------------

def test_send_event_takes_metadata_and_the_adapter_event_types_tool_call_and_tool_result():
    def billing(msg, tools):
        assert tools.send_event("Calling lookup", "tool_call", metadata={"tool": "lookup", "input": {"id": 7}})
        assert tools.send_event("Result: ok", message_type="tool_result", metadata={"tool": "lookup", "is_error": False})
        tools.execute_tool_call("send_event", {"content": "hm", "message_type": "thought", "metadata": {"n": 1}})
        with pytest.raises(ToolError, match="metadata must be an object of JSON values"):
            tools.send_event("x", "error", metadata=["not", "an", "object"])
        tools.set_context("resolved", True)
    res, tel, _, _ = session(SPEC, support(billing=FunctionAgent(billing, "billing")), "refund")
    assert res.close_reason == "resolved"
    got = [(t["event"], t["payload"], t.get("metadata")) for t in events_of(tel, "billing")]
    assert got == [("tool_call", {"content": "Calling lookup"}, {"tool": "lookup", "input": {"id": 7}}),
                   ("tool_result", {"content": "Result: ok"}, {"tool": "lookup", "is_error": False}),
                   ("thought", {"content": "hm"}, {"n": 1})]


# -- 2. the same tools, sync and awaited -----------------------------------------------------------

class AwaitingAdapter:
    """Written as the contract's examples are: every tool call awaited."""

    async def open_session(self, ctx, emit):
        return {"control_loop": "self"}

    async def on_message(self, msg, tools):
        await tools.send_event(content="Let me look", message_type="thought")
        await tools.send_event(content="Calling transfer_to_billing", message_type="tool_call",
                               metadata={"tool": "transfer_to_billing"})
        result = await tools.execute_tool_call("transfer_to_billing", {"reason": "money"})
        await tools.send_event(content=f"Result: {result}", message_type="tool_result")
        peers = await tools.lookup_peers(page=1, page_size=2)
        assert [p["agent_id"] for p in peers] == ["user", "billing"] and peers.has_more
        assert await tools.get_participants() == ["user", "triage", "billing", "tech"]
        said = await tools.send_message("Passing you to billing.", ["billing"])
        assert said == "message added to your turn's reply"

    async def close_session(self, session_id):
        pass


def test_tools_are_awaitable_where_the_contract_awaits_and_plain_calls_for_function_agents():
    def billing(msg, tools):  # the same tools, not awaited
        tools.send_message("Refunded.")
        tools.send_event("done", "task")
        tools.execute_tool_call("set_context", {"key": "resolved", "value": True})
    res, tel, envs, _ = session(SPEC, support(triage=AwaitingAdapter(), billing=FunctionAgent(billing, "billing")),
                                "refund")
    assert res.close_reason == "resolved"
    pkts = [(e.sender_id, e.event_data["body"], e.event_data["routing"].get("tool")) for e in envs
            if e.event_type == "packet"]
    assert pkts[:2] == [("triage", "Passing you to billing.", "transfer_to_billing"), ("billing", "Refunded.", None)]
    assert [t["event"] for t in events_of(tel, "triage")] == ["thought", "tool_call", "tool_result"]
    assert events_of(tel, "triage")[2]["payload"] == {"content": "Result: routed via transfer_to_billing"}
    assert [t["event"] for t in events_of(tel, "billing")] == ["task"]


# -- 3. get_tool_schemas from the table execute_tool_call dispatches on ----------------------------

def test_get_tool_schemas_lists_every_platform_tool_and_each_runs_by_name():
    seen = {}

    def a(msg, tools):
        if "openai" in seen:
            return {"say": "bye", "finish": "done"}
        seen["openai"] = [s["function"]["name"] for s in tools.get_tool_schemas("openai")]
        seen["anthropic"] = tools.get_tool_schemas("anthropic")
        seen["participants"] = json.loads(tools.execute_tool_call("get_participants", {}))
        seen["peers"] = json.loads(tools.execute_tool_call("lookup_peers", '{"page": 1, "page_size": 10}'))
        tools.execute_tool_call("send_message", {"content": "hello", "mentions": ["b"]})
        tools.execute_tool_call("send_event", {"content": "thinking"})
        return None

    def b(msg, tools):
        seen["workflow_like"] = [s["name"] for s in tools.get_tool_schemas("anthropic")]
        return {"say": "ok"}
    res, tel, envs, _ = session(PANEL, {"a": FunctionAgent(a, "a"), "b": FunctionAgent(b, "b")})
    assert res.close_reason == "done"
    # a discussion: the membership tools, no context tools (a discussion has no context variables)
    assert seen["openai"] == [n for n in PLATFORM_TOOLS if n not in ("set_context", "delete_context")]
    for s in seen["anthropic"]:
        assert s["input_schema"] == PLATFORM_TOOLS[s["name"]][1]
    assert seen["participants"] == ["a", "b"]
    assert seen["peers"]["peers"] == [{"agent_id": "b", "role": "participant", "description": "", "in_session": True}]
    first = [e for e in envs if e.sender_id == "a" and e.event_type == "packet"][0]
    assert (first.event_data["body"], first.event_data["mentions"]) == ("hello", ["b"])
    assert [t["payload"] for t in events_of(tel, "a")] == [{"content": "thinking"}]


def test_in_a_workflow_the_membership_tools_are_not_offered_and_routing_tools_come_first():
    seen = {}

    def triage(msg, tools):
        seen["names"] = [s["name"] for s in tools.get_tool_schemas("anthropic")]
        with pytest.raises(ToolError) as err:
            tools.execute_tool_call("get_participant", {})
        seen["unknown"] = str(err.value)
        tools.execute_tool_call("transfer_to_billing")
    session(SPEC, support(triage=FunctionAgent(triage, "triage")), "refund")
    assert seen["names"][:2] == ["transfer_to_billing", "transfer_to_tech"]
    assert seen["names"][2:] == [n for n in PLATFORM_TOOLS
                                 if n not in ("add_participant", "remove_participant", "create_chatroom")]
    assert "has no routing tool 'get_participant'; did you mean 'get_participants'?" in seen["unknown"]


# -- 4. lookup_peers(page, page_size) over every agent the run knows -------------------------------

def test_lookup_peers_pages_over_the_agents_that_could_be_invited_not_only_participants():
    pages = []

    def a(msg, tools):
        pages.append(tools.lookup_peers(page=1, page_size=2))
        pages.append(tools.lookup_peers(page=2, page_size=2))
        with pytest.raises(ToolError, match="page_size must be an integer from 1 to 500"):
            tools.lookup_peers(page_size=0)
        return {"say": "x", "finish": "done"}
    agents = {"a": FunctionAgent(a, "a"), "b": ScriptedAgent("b", [{"say": "y"}]),
              "expert": ScriptedAgent("expert", [{"say": "z"}])}
    res, _, _, _ = session(PANEL, agents, peers=[{"agent_id": "remote_bot", "description": "served elsewhere"}])
    assert res.close_reason == "done"
    first, second = pages
    assert [(p["agent_id"], p["in_session"]) for p in first] == [("b", True), ("expert", False)]
    assert (first.page, first.total, first.has_more) == (1, 3, True)
    assert [(p["agent_id"], p["description"]) for p in second] == [("remote_bot", "served elsewhere")]
    assert not second.has_more


# -- 5. create_chatroom(name) ----------------------------------------------------------------------

def test_create_chatroom_opens_a_discussion_where_the_kind_allows_it_and_refuses_in_a_workflow():
    out = {}

    def a(msg, tools):
        out["said"] = tools.create_chatroom("side_talk")
        return {"say": "see you there", "finish": "done"}

    def triage(msg, tools):
        with pytest.raises(ToolError) as err:
            tools.create_chatroom("side")
        out["refused"] = str(err.value)
        tools.execute_tool_call("transfer_to_billing")
    res, tel, _, others = session(PANEL, {"a": FunctionAgent(a, "a"), "b": ScriptedAgent("b", [{"say": "y"}])})
    assert res.close_reason == "done"
    assert out["said"].startswith("chatroom 'side_talk' opens when your turn ends, with a, b")
    (room,) = others
    assert (room.kind, room.name, room.participant_ids, room.creator_id) == ("discussion", "side_talk", ["a", "b"], "a")
    (ev,) = [t for t in events_of(tel, "a") if t["reason"] == "create_chatroom"]
    assert ev["payload"]["session_id"] == room.session_id
    session(SPEC, support(triage=FunctionAgent(triage, "triage")), "refund")
    assert out["refused"] == ("triage: create_chatroom('side') refused: a workflow session's participants are fixed "
                              "by its flow, so its agents cannot open other sessions (allowed from: conversation, "
                              "discussion)")


# -- 6. newcomers declared in the agents file ------------------------------------------------------

def _newcomer_agents(seen):
    def a(msg, tools):
        seen.append("a")
        if seen.count("a") == 1:
            assert tools.add_participant("expert", description="knows the answer").startswith("added expert")
            return {"say": "let us ask the expert"}
        return {"say": "thanks", "finish": "done"}

    class Expert:
        async def open_session(self, ctx, emit):
            seen.append(("expert opened", ctx.participants))
            return {"control_loop": "hub"}

        async def on_message(self, msg, tools):
            seen.append("expert")
            await tools.send_message(f"expert saw {len(msg)} messages")

        async def close_session(self, session_id):
            pass
    return {"a": FunctionAgent(a, "a"), "b": ScriptedAgent("b", [{"say": "b says"}] * 3), "expert": Expert()}


def test_add_participant_brings_in_a_declared_newcomer_under_run_session():
    seen: list = []
    res, _, envs, _ = session(PANEL, _newcomer_agents(seen))
    assert res.close_reason == "done" and res.error is None
    assert seen == ["a", ("expert opened", ("a", "b", "expert")), "expert", "a"]  # handed the session on its turn
    speakers = [t["speaker"] for t in res.turns]
    assert speakers == ["a", "b", "expert", "a"]
    assert res.turns[2]["body"] == "expert saw 2 messages"


def test_a_workflow_still_refuses_an_agent_that_is_not_a_participant():
    with pytest.raises(Exception, match="agents file names auditor, not a participant of"):
        session(SPEC, support(auditor=ScriptedAgent("auditor", [{"say": "x"}])), "refund")


def test_turnflow_run_with_an_agents_file_declaring_a_newcomer(tmp_path, capsys):
    flow = tmp_path / "panel.flow"
    flow.write_text('discussion panel "two, then three" {\n'
                    '    participant a "host" initiator\n'
                    '    participant b "guest"\n'
                    '    ordering round_robin\n'
                    '}\n')
    (tmp_path / "panel_agents.py").write_text(
        "def a(msg, tools):\n"
        "    if len(msg) == 0:\n"
        "        tools.add_participant('expert')\n"
        "        return {'say': 'welcome expert'}\n"
        "    return {'say': 'done', 'finish': 'done'}\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  a: {kind: python, ref: 'panel_agents:a'}\n"
                      "  b: {kind: scripted, steps: [{say: hi}]}\n"
                      "  expert: {kind: scripted, steps: [{say: 'the answer is 42'}]}\n")
    assert main(["check", str(flow)]) == 0
    capsys.readouterr()
    assert main(["run", str(flow), "--agents", str(agents), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["body"]) for t in out["turns"]] == [
        ("a", "welcome expert"), ("b", "hi"), ("expert", "the answer is 42"), ("a", "done")]
    assert out["close_reason"] == "done"
