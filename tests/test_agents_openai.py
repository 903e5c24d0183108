"""OpenAIChatAgent end to end: the real `openai` client against a local OpenAI-compatible
HTTP server (tests/openai_server.py) on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path

import importlib.util

import pytest

# (found, not imported: the client is imported by the agent when a test runs, not at collection)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="openai is not installed")

from openai_server import FakeOpenAI, call, say, with_test_key  # noqa: E402
from runtime_helpers import run_on_hub  # noqa: E402
from turnflow import compile as compile_flow  # noqa: E402
from turnflow.cli.app import main  # noqa: E402
from turnflow.runtime.agents import OpenAIChatAgent, ScriptedAgent  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = compile_flow((ROOT / "examples" / "support.flow").read_text(), path="support.flow")[0]
KEY_ENV = "TURNFLOW_TEST_OPENAI_KEY"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    with_test_key(monkeypatch, KEY_ENV)


@pytest.fixture
def server_factory():
    servers = []

    def make(responder, **kw):
        s = FakeOpenAI(responder, **kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.stop()


def llm(srv, name="triage", **kw):
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return OpenAIChatAgent(name, "test-model", base_url=srv.base_url, api_key_env=KEY_ENV, **kw)


def others(tech_steps=None):
    return {"user": ScriptedAgent("user", [{"say": "Thanks"}]),
            "billing": ScriptedAgent("billing", [{"say": "Refunded", "set": {"resolved": True}}]),
            "tech": ScriptedAgent("tech", tech_steps or [{"say": "Fixed", "set": {"resolved": True}}])}


def session(agents, spec=SUPPORT, task="My invoice is wrong"):
    return run_on_hub(agents, spec, task)


def test_the_model_gets_the_spec_routing_tools_and_its_tool_call_routes_the_session(server_factory):
    srv = server_factory(lambda body, n: call("transfer_to_billing", '{"reason": "an invoice"}', "Billing it is"))
    res, tel = session({"triage": llm(srv), **others()})
    assert (res.state, res.close_reason, res.error) == ("closed", "resolved", None)
    assert [(t["speaker"], t["kind"], t["tool"]) for t in res.turns] == [
        ("triage", "handoff", "transfer_to_billing"), ("billing", "text", None), ("user", "text", None)]
    assert res.turns[0]["body"] == "Billing it is"
    assert len(srv.requests) == 1
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["authorization"] == "Bearer sk-test"
    tools = req["body"]["tools"]
    assert [(t["type"], t["function"]["name"], t["function"]["description"]) for t in tools[:2]] == [
        ("function", "transfer_to_billing", "The question is about money"),
        ("function", "transfer_to_tech", "The question is technical")]
    assert [t["function"]["name"] for t in tools[2:]] == ["set_context", "delete_context", "finish", "handoff",
                                                          "send_message", "send_event"]
    assert tools[0]["function"]["parameters"] == {"type": "object", "properties": {"reason": {"type": "string"}},
                                                  "required": []}
    msgs = req["body"]["messages"]
    assert msgs[0]["role"] == "system" and "triage" in msgs[0]["content"]
    assert {"role": "user", "content": "<task>: My invoice is wrong"} in msgs
    kinds = [t["event"] for t in tel if t["agent_id"] == "triage"]
    assert kinds == ["handshake", "env_action", "tool_response"]
    hs = tel[[t["agent_id"] for t in tel].index("triage")]
    assert hs["effective"] == {"control_loop": "self", "supports_stepwise": True, "telemetry_stream": True}


def test_an_agent_without_routing_tools_gets_the_session_tools_and_its_text_is_the_body(server_factory):
    srv = server_factory(lambda body, n: say("Refund issued"))
    agents = {"triage": ScriptedAgent("triage", [{"say": "to billing", "tool": "transfer_to_billing"}]),
              "billing": llm(srv, "billing"), "user": ScriptedAgent("user", [{"say": "ok"}]),
              "tech": ScriptedAgent("tech", [{"say": "x"}])}
    res, _ = session(agents)
    assert [t["function"]["name"] for t in srv.requests[0]["body"]["tools"]] == [
        "set_context", "delete_context", "finish", "handoff", "send_message", "send_event"]
    assert res.turns[1] == {"speaker": "billing", "kind": "text", "tool": None, "target": None,
                            "body": "Refund issued", "set": {}, "delete": []}
    msgs = srv.requests[0]["body"]["messages"]
    assert msgs[-1]["role"] == "user" and "to billing" in msgs[-1]["content"]


def test_malformed_tool_arguments_are_fed_back_and_the_model_can_correct_itself(server_factory):
    def responder(body, n):
        return call("transfer_to_billing", "{not json", n=1) if n == 1 else call("transfer_to_tech", "{}", n=2)
    srv = server_factory(responder)
    res, tel = session({"triage": llm(srv), **others()})
    assert res.close_reason == "resolved" and res.error is None
    assert [t["speaker"] for t in res.turns] == ["triage", "tech", "user"]
    assert res.turns[0]["tool"] == "transfer_to_tech"
    second = srv.requests[1]["body"]["messages"]
    fed = [m for m in second if m["role"] == "tool"]
    assert len(fed) == 1 and fed[0]["tool_call_id"] == "call_1"
    assert fed[0]["content"].startswith("error: transfer_to_billing: arguments are not valid JSON")
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["function"]["arguments"] == "{not json"
    responses = [t for t in tel if t["event"] == "tool_response"]
    assert [t["payload"]["ok"] for t in responses] == [False, True]


def test_unknown_tools_are_fed_back_until_the_round_cap_fails_the_turn(server_factory):
    srv = server_factory(lambda body, n: call("transfer_to_nowhere", "{}", n=n))
    res, tel = session({"triage": llm(srv, max_rounds=3), **others()})
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert "max_rounds=3" in res.error and "failed turn 1:" in res.error
    assert len(srv.requests) == 3  # 3 model calls; control_loop self: the hub does not retry the turn
    last = srv.requests[2]["body"]["messages"]
    assert [m["content"] for m in last if m["role"] == "tool"] == [
        "error: triage has no tool 'transfer_to_nowhere' (its tools: transfer_to_billing, transfer_to_tech, "
        "set_context, delete_context, finish, handoff, send_message, send_event)"] * 2
    errors = [t for t in tel if t["event"] == "error"]
    assert [(e["step"], e["payload"]["attempt"], e["payload"]["action"]) for e in errors] == [
        (1, 1, "close_session")]
    assert res.turns == []


def test_http_500_fails_the_turn_which_the_hub_does_not_retry_for_a_self_loop_agent(server_factory):
    srv = server_factory(lambda body, n: (500, {"error": {"message": "boom", "type": "server_error"}}))
    # retry_seconds=0: only the client's own retries (turnflow's waiting out of an outage: test_model_outage.py)
    res, tel = session({"triage": llm(srv, retry_seconds=0), **others()})
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert "model call failed: InternalServerError" in res.error
    assert len(srv.requests) == 1  # control_loop self: one call per turn, retries are the client's business
    assert [e["payload"]["attempt"] for e in tel if e["event"] == "error"] == [1]


def test_the_clients_own_retry_after_one_http_500_succeeds(server_factory):
    def responder(body, n):
        # the retry comes when the server says (openai's own wait is 0.5 s and more)
        return (500, {"error": {"message": "flaky"}}, 0, {"retry-after-ms": "20"}) if n == 1 \
            else call("transfer_to_billing")
    srv = server_factory(responder)
    res, tel = session({"triage": llm(srv, max_retries=1), **others()})
    assert (res.close_reason, res.error) == ("resolved", None)
    assert len(srv.requests) == 2 and [e for e in tel if e["event"] == "error"] == []


def test_a_timeout_fails_the_turn(server_factory):
    srv = server_factory(lambda body, n: (*say("too late"), 1.0))
    t0 = time.monotonic()
    res, _ = session({"triage": llm(srv, timeout=0.25, retry_seconds=0), **others()})
    assert time.monotonic() - t0 < 5
    assert res.close_reason == "agent_error" and "APITimeoutError" in res.error
    assert len(srv.requests) == 1


def test_a_whole_turn_deadline_bounds_a_model_turn(server_factory):
    srv = server_factory(lambda body, n: (*call("transfer_to_nowhere", "{}", n=n), 0.1))  # several rounds
    t0 = time.monotonic()
    res, _ = session({"triage": llm(srv, max_rounds=50, turn_timeout=0.25), **others()})
    assert time.monotonic() - t0 < 3
    assert res.close_reason == "agent_error" and "longer than turn_timeout=0.25 s" in res.error
    assert 1 <= len(srv.requests) <= 4


def test_a_missing_api_key_is_a_clear_handshake_error(monkeypatch, server_factory):
    monkeypatch.delenv(KEY_ENV)
    srv = server_factory(lambda body, n: say("never"))
    res, tel = session({"triage": llm(srv), **others()})
    assert res.state == "closed" and res.close_reason == "invite_rejected"
    assert f"environment variable {KEY_ENV} is not set" in res.error
    assert srv.requests == []
    hs = [t for t in tel if t["agent_id"] == "triage"][0]
    assert hs["event"] == "handshake" and hs["effective"] is None and KEY_ENV in hs["error"]


def test_turnflow_run_with_an_openai_agent_from_the_agents_file(tmp_path, capsys, server_factory):
    srv = server_factory(lambda body, n: call("transfer_to_tech", '{"reason": "crash"}', "Tech will help"))
    agents = tmp_path / "agents.yaml"
    agents.write_text(f"""agents:
  triage: {{kind: openai, model: test-model, base_url: "{srv.base_url}", api_key_env: {KEY_ENV},
           system: "You route support requests.", max_rounds: 2, timeout: 5}}
  tech: {{kind: scripted, steps: [{{say: "Restarted", set: {{resolved: true}}}}]}}
  billing: {{kind: scripted, steps: [{{say: "-"}}]}}
  user: {{kind: scripted, steps: [{{say: "Thanks"}}]}}
""")
    db = str(tmp_path / "hub.db")
    assert main(["run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task", "It crashes",
                 "--store", db, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["tool"]) for t in out["turns"]] == [("triage", "transfer_to_tech"), ("tech", None),
                                                                ("user", None)]
    assert srv.requests[0]["body"]["messages"][0]["content"].startswith("You route support requests.")
    assert main(["inspect", db, "--events"]) == 0
    text = capsys.readouterr().out
    assert "telemetry triage handshake" in text and "telemetry triage tool_response" in text


def test_issue14_defect12_error_bodies_are_stored_and_printed_with_api_keys_masked(monkeypatch, server_factory):
    secret, other = "sk-live-0123456789abcdef", "tok-9876543210fedcba"
    monkeypatch.setenv(KEY_ENV, secret)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", other)
    srv = server_factory(lambda body, n: (401, {"error": {"message": f"Incorrect API key provided: {secret}; "
                                                                     f"also saw {other}", "type": "auth"}}))
    res, tel = session({"triage": llm(srv), **others()})
    assert res.close_reason == "agent_error"
    stored = json.dumps(tel) + res.error
    assert secret not in stored and other not in stored
    assert "Incorrect API key provided: ***" in res.error
