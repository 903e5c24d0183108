"""The platform tool surface and the stateful-adapter handshake (docs/contracts.md), against the
real runner and hub: send_message(content, mentions), send_event(content, message_type),
membership tools, execute_tool_call by name with JSON-string arguments, participants_msg and
is_session_bootstrap; aopen_session, control_loop atlas, `behavior:` overrides,
adapter_capabilities in inspect, aplan/aexecute/asynthesize phases, AdapterTelemetryEvent."""

from __future__ import annotations

import json
import re

import pytest

from runtime_helpers import FIXTURES, fixture_spec, new_hub, run
from turnflow.cli import main
from turnflow.runtime.agents import FunctionAgent, ScriptedAgent, SessionTools, ToolError
from turnflow.runtime.agents.contract import AdapterTelemetryEvent, Capabilities, check_telemetry
from turnflow.runtime.runner import run_session

SPEC = fixture_spec("support.json")  # workflow: user, triage, billing, tech
CHAT = {"kind": "conversation", "name": "chat",
        "participants": [{"agent_id": "asker", "role": "participant"}, {"agent_id": "helper", "role": "participant"}]}


def session(spec, agents, task=None):
    async def go():
        hub = await new_hub()
        res = await run_session(hub, spec, agents, task)
        return res, hub.store.telemetry(res.session_id), [e for e in hub.store.read_range(res.session_id)]
    return run(go())


def others(**kw):
    base = {"triage": ScriptedAgent("triage", [{"say": "to billing", "tool": "transfer_to_billing"}]),
            "billing": ScriptedAgent("billing", [{"say": "done", "set": {"resolved": True}}]),
            "user": ScriptedAgent("user", [{"say": "thanks"}, {"say": "bye", "finish": "done"}]),
            "tech": ScriptedAgent("tech", [{"say": "x"}])}
    base.update(kw)
    return base


# -- part 2: the platform tool surface ------------------------------------------------------------

def test_send_message_mentions_and_send_event_types_reach_the_log():
    def billing(msg, tools):
        tools.send_message("Refunded.", mentions=["user"])
        assert tools.send_event("checking the invoice", "thought")
        assert tools.send_event({"ticket": 7}, "task")
        tools.execute_tool_call("send_event", '{"content": "retrying", "message_type": "error"}')  # JSON text
        with pytest.raises(ToolError, match="message_type must be one of"):
            tools.send_event("x", "gossip")
        with pytest.raises(ToolError, match="mentions 'ghost', not a participant"):
            tools.send_message("x", mentions=["ghost"])
        tools.set_context("resolved", True)
    res, tel, envs = session(SPEC, others(billing=FunctionAgent(billing, "billing")), "refund")
    assert res.close_reason == "resolved"
    pkt = [e for e in envs if e.sender_id == "billing" and e.event_type == "packet"][0]
    assert pkt.event_data["body"] == "Refunded." and pkt.event_data["mentions"] == ["user"]
    evs = [(t["event"], t["payload"]) for t in tel if t["agent_id"] == "billing" and t["event"] != "handshake"]
    assert evs == [("thought", {"content": "checking the invoice"}), ("task", {"content": {"ticket": 7}}),
                   ("error", {"content": "retrying"})]


def test_membership_tools_refuse_in_workflow_and_lookup_peers_answers():
    seen = {}

    def triage(msg, tools):
        seen["peers"] = tools.lookup_peers()
        seen["by_name"] = json.loads(tools.execute_tool_call("lookup_peers", "{}"))
        for call in (lambda: tools.add_participant("auditor"), lambda: tools.remove_participant("tech"),
                     lambda: tools.execute_tool_call("add_participant", '{"agent_id": "auditor"}')):
            with pytest.raises(ToolError) as err:
                call()
            seen.setdefault("errors", []).append(str(err.value))
        tools.execute_tool_call("transfer_to_billing", '{"reason": "money"}')
    res, _, _ = session(SPEC, others(triage=FunctionAgent(triage, "triage")), "refund")
    assert res.close_reason == "resolved"
    assert [p["agent_id"] for p in seen["peers"]] == ["user", "billing", "tech"]
    assert seen["peers"][0]["role"] == "initiator" and seen["by_name"]["peers"] == seen["peers"]
    assert (seen["by_name"]["total"], seen["by_name"]["has_more"]) == (3, False)
    assert seen["errors"][0] == ("triage: add_participant('auditor') refused: the participants of a workflow "
                                 "session are fixed by its flow")
    assert "remove_participant('tech') refused" in seen["errors"][1] and "add_participant" in seen["errors"][2]


def test_membership_in_a_conversation_is_refused_with_the_adapters_reason():
    out = {}

    def helper(msg, tools):
        with pytest.raises(ToolError) as err:
            tools.add_participant("third")
        out["err"] = str(err.value)
        tools.finish("answered", "ok")
    res, _, _ = session(CHAT, {"asker": ScriptedAgent("asker", [{"say": "hi"}]),
                               "helper": FunctionAgent(helper, "helper")})
    assert res.close_reason == "answered"
    assert out["err"] == "helper: add_participant('third') refused: a conversation session has at most 2 participants"


def test_execute_tool_call_parses_json_text_and_names_bad_arguments():
    t = SessionTools("a", ("a", "b"), ({"name": "to_b", "description": "", "target": "b"},))
    assert t.execute_tool_call("set_context", '{"key": "k", "value": [1, 2]}') == "context k set (applied when your turn ends)"
    assert t.execute_tool_call("to_b", '{"reason": "why"}') == "routed via to_b"
    with pytest.raises(ToolError, match="set_context: missing argument 'value'"):
        t.execute_tool_call("set_context", '{"key": "k"}')
    with pytest.raises(ToolError, match="send_message: unknown argument 'colour'"):
        t.execute_tool_call("send_message", {"content": "x", "colour": "red"})
    with pytest.raises(ToolError, match="arguments are not valid JSON"):
        t.execute_tool_call("send_message", "{content: x}")
    assert t.round()["set"] == {"k": [1, 2]} and t.round()["tool"] == "to_b"
    assert [s["name"] for s in t.get_tool_schemas("anthropic")][:2] == ["to_b", "send_message"]


def test_bootstrap_and_participants_msg_only_on_a_participants_first_turn():
    seen = []

    def user(msg, tools):
        seen.append((tools.is_session_bootstrap, tools.participants_msg))
        return {"say": "again"} if len(seen) == 1 else {"say": "bye", "finish": "done"}
    triage = ScriptedAgent("triage", [{"say": "to billing", "tool": "transfer_to_billing"}] * 2)
    billing = ScriptedAgent("billing", [{"say": "hm"}] * 2)
    res, _, _ = session(SPEC, others(user=FunctionAgent(user, "user"), triage=triage, billing=billing), "refund")
    assert res.close_reason == "done"
    assert seen[0] == (True, "Participants: user (initiator), triage: Classifies the request, "
                             "billing: Invoices, refunds, payment methods, tech: Bugs, outages, how-to questions")
    assert seen[1] == (False, None)  # the roster did not change since its last turn


# -- part 3: the stateful-adapter handshake --------------------------------------------------------

class KeywordAdapter:
    """The contract's handshake form, a hub-driven loop named `atlas`, telemetry as objects."""

    def __init__(self, loop="atlas"):
        self.loop = loop
        self.opened = None

    async def aopen_session(self, *, task, metadata, emit_event):
        self.opened = (task, metadata)
        await emit_event(AdapterTelemetryEvent("progress", payload={"phase": "open"}, timestamp="2026-01-01T00:00:00Z",
                                               metadata={"model": "m"}))
        await emit_event({"event": "thought", "payload": "dict form", "timestamp": 1.5})
        return {"control_loop": self.loop, "supports_stepwise": True, "telemetry_stream": True}

    async def on_message(self, msg, tools):
        tools.emit_event(AdapterTelemetryEvent("task", payload={"do": "route"}))
        tools.execute_tool_call("transfer_to_billing")


def test_aopen_session_and_control_loop_atlas():
    adapter = KeywordAdapter()
    res, tel, _ = session(SPEC, others(triage=adapter), "refund")
    assert res.close_reason == "resolved" and res.error is None
    task, md = adapter.opened
    assert task == "refund" and md["agent_id"] == "triage" and md["kind"] == "workflow"
    assert md["tools"][0]["name"] == "transfer_to_billing" and md["participants"] == ["user", "triage", "billing", "tech"]
    shake = next(t for t in tel if t["agent_id"] == "triage" and t["event"] == "handshake")
    assert shake["raw"]["control_loop"] == "atlas" and shake["effective"]["control_loop"] == "hub"
    mine = [(t["event"], t["payload"], t.get("timestamp"), t.get("metadata")) for t in tel
            if t["agent_id"] == "triage" and t["event"] != "handshake"]
    assert mine == [("progress", {"phase": "open"}, "2026-01-01T00:00:00Z", {"model": "m"}),
                    ("thought", "dict form", 1.5, None), ("task", {"do": "route"}, None, None)]


def test_bad_telemetry_objects_are_dropped_with_a_warning():
    with pytest.warns(UserWarning, match="`timestamp` must be epoch seconds or ISO-8601 text"):
        assert check_telemetry({"event": "progress", "timestamp": [1]}, "a") is None
    with pytest.warns(UserWarning, match="a mapping or an AdapterTelemetryEvent"):
        assert check_telemetry(42, "a") is None
    assert Capabilities("atlas").check("a") == Capabilities("hub")


def test_behavior_override_in_the_agents_file_and_adapter_capabilities_in_inspect(tmp_path, capsys):
    (tmp_path / "my_adapters.py").write_text(
        "class Phased:\n"
        "    async def aopen_session(self, *, task, metadata, emit_event):\n"
        "        return {'control_loop': 'self', 'supports_stepwise': True}\n"
        "    async def aplan(self, task, metadata):\n"
        "        return ['look up the invoice', 'refund']\n"
        "    async def aexecute(self, task, plan, step, metadata):\n"
        "        return {'done': plan, 'step': step}\n"
        "    async def asynthesize(self, task, plan, step_results, metadata):\n"
        "        return 'Refunded after ' + str(len(step_results)) + ' step'\n"
        "billing = Phased()\n"
        "class Hubby:\n"
        "    async def open_session(self, ctx, emit):\n"
        "        return {'control_loop': 'hub'}\n"
        "    async def on_message(self, msg, tools):\n"
        "        tools.execute_tool_call('transfer_to_billing')\n"
        "triage = Hubby()\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage:  {kind: python, ref: 'my_adapters:triage', behavior: self}\n"
                      "  billing: {kind: python, ref: 'my_adapters:billing', behavior: atlas}\n"
                      "  user:    {kind: scripted, steps: [{say: thanks}, {finish: done}]}\n"
                      "  tech:    {kind: scripted, steps: [{say: x}]}\n")
    db = str(tmp_path / "hub.db")
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents), "--store", db,
                 "--task", "refund", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["body"]) for t in out["turns"]][:2] == [("triage", ""), ("billing", "Refunded after 1 step")]
    assert main(["inspect", db, "--events"]) == 0
    assert ('telemetry triage handshake raw={"control_loop": "hub"} effective={"control_loop": "self", '
            '"supports_stepwise": true, "telemetry_stream": false} behavior=self') in capsys.readouterr().out
    assert main(["inspect", db, "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["created_at"])
    caps = rec["adapter_capabilities"]
    assert caps["triage"] == {"raw": {"control_loop": "hub"}, "behavior": "self",
                              "effective": {"control_loop": "self", "supports_stepwise": True, "telemetry_stream": False}}
    assert caps["billing"] == {"raw": {"control_loop": "self", "supports_stepwise": True}, "behavior": "atlas",
                               "effective": {"control_loop": "hub", "supports_stepwise": True, "telemetry_stream": False}}
    assert caps["user"]["effective"]["control_loop"] == "hub" and "behavior" not in caps["user"]
    phases = [(t["event"], t["reason"], t["payload"]) for t in rec["telemetry"] if t["agent_id"] == "billing"
              and t["event"] != "handshake"]
    assert len(phases) == 6  # billing took two turns: three phases each
    assert phases[:3] == [("task", "plan", ["look up the invoice", "refund"]),
                      ("progress", "step", {"step": 2, "result": {"done": ["look up the invoice", "refund"], "step": 2}}),
                      ("tool_response", "final", "Refunded after 1 step")]


def test_a_bad_behavior_is_a_clear_error(tmp_path, capsys):
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  triage: {kind: scripted, steps: [{say: x}], behavior: hub}\n")
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents)]) == 1
    err = capsys.readouterr().err
    assert "agent 'triage': `behavior` must be one of self, atlas, got 'hub'" in err and "Traceback" not in err


# -- part 4: the session API names ------------------------------------------------------------------

def test_get_session_and_default_view_policy_per_participant():
    from turnflow.runtime.views import WindowedSummary

    async def go():
        hub = await new_hub()  # FakeClock: the session is created at epoch 1,000,000 s
        res = await run_session(hub, SPEC, others(), "refund")
        rec = await hub.get_session(res.session_id)
        adapter = hub.sessions[res.session_id].adapter
        return rec, adapter.default_view_policy(hub.metadata(res.session_id), "billing"), hub, res.session_id
    rec, policy, hub, sid = run(go())
    assert rec.state.value == "closed" and rec.close_reason == "resolved"
    assert rec.created_at == "1970-01-12T13:46:40.000Z" and rec.closed_at == "1970-01-12T13:46:40.000Z"
    assert hub.metadata(sid).created_at == 1_000_000.0  # the hub keeps epoch seconds (TTL, sweep, summaries)
    assert sorted(rec.adapter_capabilities) == ["billing", "tech", "triage", "user"]
    assert rec.adapter_capabilities["user"]["effective"]["control_loop"] == "hub"
    assert rec.participant_ids == ["user", "triage", "billing", "tech"]
    d = rec.to_dict()
    assert json.loads(json.dumps(d)) == d and d["created_at"] == rec.created_at and d["state"] == "closed"
    info = hub.info(sid)
    assert info["created_at"] == rec.created_at and info["adapter_capabilities"] == rec.adapter_capabilities
    assert hub.sessions[sid].info()["created_at"] == rec.created_at
    assert isinstance(policy, WindowedSummary)
    from turnflow.runtime.errors import ProtocolError
    with pytest.raises(ProtocolError):
        run(hub.get_session("0" * 32))


def test_on_accepted_may_answer_with_the_contracts_names():
    from turnflow.runtime.adapters import AdapterResult
    from turnflow.runtime.errors import ProtocolError

    assert AdapterResult(auto_close_reason="quota").close_reason == "quota"
    assert AdapterResult(next_state="closing").close_reason == "adapter_closed"
    assert AdapterResult(next_state="closed", auto_close_reason="done").close_reason == "done"
    assert AdapterResult(next_state="active").close_reason is None
    with pytest.raises(ProtocolError, match="next_state must be one of active, closing, closed"):
        AdapterResult(next_state="sleeping")


def test_session_context_reads_the_graph_with_the_spec_models():
    from turnflow.runtime.agents.session_context import agent_context, allows_dynamic_handoffs, context_vars
    from turnflow.runtime.session_spec import SessionSpec

    ce = lambda k, v: {"name": "context_equals", "args": {"key": k, "value": v}}
    graph = {"initial_speaker": "a", "max_turns": None,
             "default_target": {"name": "round_robin", "args": {}},
             "transitions": [
                 {"when": {"name": "all_of", "args": {"conditions": [
                     ce("stage", "review"),
                     {"name": "not", "args": {"condition": {"name": "context_compare",
                                                            "args": {"key": "items", "op": ">", "value": 2, "len": True}}}}]}},
                  "then": {"name": "stay", "args": {}}, "priority": 0},
                 {"when": ce("stage", "done"), "then": {"name": "agent", "args": {"agent_id": "b"}}, "priority": 1}]}
    raw = {"kind": "workflow", "name": "w", "participants": [{"agent_id": "a"}, {"agent_id": "b"}],
           "knobs": {"graph": graph, "context_vars": {"owner": "a"}}}
    spec = SessionSpec.parse(raw)
    assert context_vars(spec) == (("owner", "a"), ("stage", None), ("items", None))
    assert allows_dynamic_handoffs(spec) is True
    no_agent = SessionSpec.parse({**raw, "knobs": {"graph": {**graph, "transitions": graph["transitions"][:1]}}})
    assert allows_dynamic_handoffs(no_agent) is False
    broken = SessionSpec.parse({**raw, "knobs": {"graph": {"initial_speaker": "a",
                                                           "transitions": [{"when": {"name": "nope"}}]}}})
    assert context_vars(broken) == () and allows_dynamic_handoffs(broken) is False
    assert agent_context(spec, "s" * 32, "a").context_vars == (("owner", "a"), ("stage", None), ("items", None))


def test_invites_are_delivered_to_hub_listeners():
    async def go():
        hub = await new_hub()
        got = []

        async def listener(env, md):
            got.append((env.event_type, env.sender_id, env.audience))
        hub.subscribe(listener)
        md = await hub.open_session("discussion", ["a", "b", "c"])
        await hub.ack(md.session_id, "b")
        return got
    got = run(go())
    assert got[:3] == [("session.invite", "a", ["b"]), ("session.invite", "a", ["c"]), ("session.ack", "b", ["a"])]


def test_render_envelope_none_skips_an_envelope_in_every_view():
    from turnflow.runtime.views import FullTranscript, WindowedSummary

    seen = {}

    def billing(msg, tools):
        seen["billing"] = [m["text"] for m in msg]
        tools.set_context("resolved", True)  # a round that only changes the context: nothing to read
    def user(msg, tools):
        seen["user"] = list(msg)
        return "thanks"

    async def go():
        hub = await new_hub()
        res = await run_session(hub, SPEC, others(billing=FunctionAgent(billing, "billing"),
                                                  user=FunctionAgent(user, "user")), "refund")
        live = hub.sessions[res.session_id]
        envs = [e for e in hub.store.read_range(res.session_id)]
        full = FullTranscript().project(envs, "user", live.adapter.render_envelope)
        window = WindowedSummary(1).project(envs, "user", live.adapter.render_envelope)
        return res, full, window
    res, full, window = run(go())
    assert res.close_reason == "resolved"
    # the live view the user got, and both projections of the log, leave billing's context-only packet out
    assert [m["sender"] for m in seen["user"]] == ["<task>", "triage"]
    assert [m["sender"] for m in full] == ["triage", "user"]
    assert window == [{"sender": "<summary>", "text": "[1 earlier message not shown; from triage (1)]"},
                      {"sender": "user", "text": "thanks"}]


def test_a_turns_input_comes_through_the_adapters_extract_turn_input():
    seen = []

    def user(msg, tools):
        seen.append(tools.turn_input)
        return "thanks"
    res, _, _ = session(SPEC, others(user=FunctionAgent(user, "user")), "refund")
    assert res.close_reason == "resolved"
    assert seen == ["done"]  # billing's packet body, as the workflow adapter extracts it


def test_scripted_steps_are_checked_under_a_behavior_override_too(tmp_path, capsys):
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  triage: {kind: scripted, steps: [{tool: transfer_to_bil}], behavior: self}\n"
                      "  billing: {kind: scripted, steps: [{say: x}]}\n  user: {kind: scripted, steps: [{say: x}]}\n"
                      "  tech: {kind: scripted, steps: [{say: x}]}\n")
    assert main(["run", str(FIXTURES / "support.json"), "--agents", str(agents)]) != 0
    assert "unknown tool 'transfer_to_bil'; did you mean 'transfer_to_billing'?" in capsys.readouterr().err
