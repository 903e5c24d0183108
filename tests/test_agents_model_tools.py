"""Model agents with the full session tool set (set_context, delete_context, finish, handoff),
tool errors fed back to the model, and the system prompt — end to end for both the OpenAI agent
(tests/openai_server.py) and the Anthropic agent (tests/anthropic_server.py), each through its
official client against a local HTTP server on 127.0.0.1 that scripts the model's tool calls."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

import anthropic_server as A
import openai_server as O
from runtime_helpers import FakeClock, run_on_hub
from turnflow import compile as compile_flow
from turnflow.cli import main
from turnflow.runtime.agents import (AgentContext, AnthropicMessagesAgent, FakeSessionTools, OpenAIChatAgent,
                                     ScriptedAgent, ToolError)
from turnflow.runtime.agents.model_prompt import system_prompt
from turnflow.runtime.agents.model_tools import ModelTools
from turnflow.runtime.agents.session_context import agent_context, allows_dynamic_handoffs
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = compile_flow((ROOT / "examples" / "support.flow").read_text(), path="support.flow")[0]
KEY_ENV = "TURNFLOW_TEST_MODEL_KEY"
ROTATE = compile_flow("""workflow rotate {
    participant a "First"
    participant b "Second"
    start a
    max_turns 4
    * -> next
}""", path="rotate.flow")[0]
CHAT = compile_flow("""conversation chat {
    participant asker "Asks" initiator
    participant helper "Helps"
}""", path="chat.flow")[0]


class Flavour:
    """One wire format: how a scripted reply is written and how a request is read back."""

    def __init__(self, name):
        self.name = name
        self.m = O if name == "openai" else A

    def say(self, text):
        return self.m.say(text)

    def calls(self, named, text=None, n=1):
        """named: [(tool, arguments mapping)]"""
        if self.name == "openai":
            return O.calls([(t, a if isinstance(a, str) else json.dumps(a)) for t, a in named], text, n)
        return A.uses(named, text, n)

    def call(self, tool, args=None, text=None, n=1):
        return self.calls([(tool, {} if args is None else args)], text, n)

    def system(self, body):
        return body["messages"][0]["content"] if self.name == "openai" else body["system"]

    def tool_names(self, body):
        return [t["function"]["name"] if self.name == "openai" else t["name"] for t in body.get("tools") or []]

    def tool(self, body, name):
        for t in body.get("tools") or []:
            if self.name == "openai" and t["function"]["name"] == name:
                return {"description": t["function"]["description"], "schema": t["function"]["parameters"]}
            if self.name == "anthropic" and t["name"] == name:
                return {"description": t["description"], "schema": t["input_schema"]}
        raise KeyError(name)

    def results(self, body):
        """[(ok, text)] of the tool results the request answers the previous reply with."""
        if self.name == "openai":
            return [(not r.startswith("error: "), r) for r in O.tool_results(body)]
        return [(not r.get("is_error", False), r["content"]) for r in A.tool_results(body)]

    def agent(self, srv, name, **kw):
        kw.setdefault("max_retries", 0)
        kw.setdefault("timeout", 5.0)
        cls = OpenAIChatAgent if self.name == "openai" else AnthropicMessagesAgent
        return cls(name, "test-model", base_url=srv.base_url, api_key_env=KEY_ENV, **kw)


@pytest.fixture(params=["openai", "anthropic"])
def flavour(request):
    pytest.importorskip(request.param)
    return Flavour(request.param)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    O.with_test_key(monkeypatch, KEY_ENV)


@pytest.fixture
def serve(flavour):
    servers = []

    def make(responder, **kw):
        s = (O.FakeOpenAI if flavour.name == "openai" else A.FakeAnthropic)(responder, **kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.stop()


def scripted(**steps):
    return {name: ScriptedAgent(name, s) for name, s in steps.items()}


def session(agents, spec=SUPPORT, task="My invoice is wrong"):
    return run_on_hub(agents, spec, task)


def replies(*answers):
    """A responder that gives the answers in order (the last one again when they run out)."""
    def responder(body, n):
        return answers[min(n, len(answers)) - 1]
    return responder


# -- end to end -------------------------------------------------------------------------------------

def test_a_model_sets_context_and_finishes_through_tools(flavour, serve):
    srv = serve(replies(flavour.calls([("set_context", {"key": "category", "value": {"area": "billing"}}),
                                       ("finish", {"reason": "out_of_scope"})], text="We cannot help here.")))
    res, tel = session({"triage": flavour.agent(srv, "triage"),
                        **scripted(user=[{"say": "-"}], billing=[{"say": "-"}], tech=[{"say": "-"}])})
    assert (res.state, res.close_reason, res.error) == ("closed", "out_of_scope", None)
    assert res.turns == [{"speaker": "triage", "kind": "finish", "tool": None, "target": None,
                          "body": "We cannot help here.", "set": {"category": {"area": "billing"}}, "delete": []}]
    assert len(srv.requests) == 1  # the reply routed the round: no further model call
    responses = [t["payload"] for t in tel if t["event"] == "tool_response"]
    assert [(p["tool"], p["ok"]) for p in responses] == [("set_context", True), ("finish", True)]


def test_a_flow_that_ends_on_context_resolved_is_ended_by_a_model(flavour, serve):
    """support.flow: `user -> terminate "resolved" when context.resolved == true`; the user is a model."""
    srv = serve(replies(flavour.call("set_context", {"key": "resolved", "value": True}),
                        flavour.say("Thanks, that fixed it.")))
    agents = {"user": flavour.agent(srv, "user"),
              **scripted(triage=[{"say": "Billing it is", "tool": "transfer_to_billing"}],
                         billing=[{"say": "Refunded"}], tech=[{"say": "-"}])}
    res, _ = session(agents)
    assert (res.close_reason, res.error) == ("resolved", None)
    assert [t["speaker"] for t in res.turns] == ["triage", "billing", "user"]
    assert res.turns[-1]["body"] == "Thanks, that fixed it." and res.turns[-1]["set"] == {"resolved": True}
    assert len(srv.requests) == 2
    assert flavour.results(srv.bodies[1]) == [(True, "context resolved = true (applied when your turn ends)")]


def test_a_bad_call_goes_back_to_the_model_which_corrects_itself(flavour, serve):
    srv = serve(replies(flavour.call("set_context", {"key": "resolved"}, n=1),  # `value` missing
                        flavour.call("handoff", {"to": "nobody"}, n=2),  # not a participant
                        flavour.call("set_context", {"key": "resolved", "value": True}, n=3),
                        flavour.say("All good now.")))
    agents = {"user": flavour.agent(srv, "user"),
              **scripted(triage=[{"say": "to tech", "tool": "transfer_to_tech"}], tech=[{"say": "Restarted"}],
                         billing=[{"say": "-"}])}
    res, tel = session(agents)
    assert (res.close_reason, res.error) == ("resolved", None)
    assert res.turns[-1]["set"] == {"resolved": True} and res.turns[-1]["body"] == "All good now."
    assert len(srv.requests) == 4
    assert flavour.results(srv.bodies[1]) == [
        (False, "error: set_context: missing argument 'value' (it takes key, value; required: key, value)")]
    assert flavour.results(srv.bodies[2]) == [
        (False, "error: handoff: 'nobody' is not a participant you can hand off to "
                "(choose one of: triage, billing, tech)")]
    assert [t["payload"]["ok"] for t in tel if t["event"] == "tool_response"] == [False, False, True]


def test_a_model_hands_off_through_handoff_to(flavour, serve):
    srv = serve(replies(flavour.call("handoff", {"to": "tech", "reason": "sounds like a crash"}, "Over to tech")))
    agents = {"triage": flavour.agent(srv, "triage"),
              **scripted(tech=[{"say": "Fixed", "set": {"resolved": True}}], user=[{"say": "Thanks"}],
                         billing=[{"say": "-"}])}
    res, _ = session(agents)
    assert (res.close_reason, res.error) == ("resolved", None)
    assert [(t["speaker"], t["kind"], t["target"], t["tool"]) for t in res.turns] == [
        ("triage", "handoff", "tech", None), ("tech", "text", None, None), ("user", "text", None, None)]
    handoff = flavour.tool(srv.bodies[0], "handoff")
    assert handoff["schema"]["properties"]["to"]["enum"] == ["user", "billing", "tech"]
    assert handoff["schema"]["required"] == ["to"]


def test_two_routing_decisions_in_one_round_are_refused_then_the_model_picks_one(flavour, serve):
    srv = serve(replies(flavour.calls([("transfer_to_billing", {}), ("handoff", {"to": "tech"})], n=1),
                        flavour.say("Billing will take it.")))
    agents = {"triage": flavour.agent(srv, "triage"),
              **scripted(billing=[{"say": "Refunded", "set": {"resolved": True}}], user=[{"say": "ok"}],
                         tech=[{"say": "-"}])}
    res, _ = session(agents)
    assert res.error is None and [t["speaker"] for t in res.turns] == ["triage", "billing", "user"]
    assert res.turns[0]["tool"] == "transfer_to_billing" and res.turns[0]["body"] == "Billing will take it."
    assert flavour.results(srv.bodies[1]) == [
        (True, "routed via transfer_to_billing"),
        (False, "error: handoff: this round is already routed (transfer_to_billing); one routing decision per round")]


def test_the_system_prompt_holds_the_description_the_task_and_the_session(flavour, serve):
    srv = serve(replies(flavour.call("transfer_to_billing")))
    res, _ = session({"triage": flavour.agent(srv, "triage", system="You route support requests."),
                      **scripted(billing=[{"say": "ok", "set": {"resolved": True}}], user=[{"say": "ok"}],
                                 tech=[{"say": "-"}])}, task="My invoice\nis wrong")
    assert res.error is None
    assert flavour.system(srv.bodies[0]) == """You route support requests.

Session: workflow "support" — Customer support triage
You are triage: Classifies the request
Participants:
- user (initiator)
- triage (you): Classifies the request
- billing: Invoices, refunds, payment methods
- tech: Bugs, outages, how-to questions

Task:
My invoice
is wrong

Context variables (initial values): resolved = false

Your turn ends when you reply with text, or when you route it with one call to a routing tool: \
transfer_to_billing, transfer_to_tech, handoff, finish. set_context and delete_context change the shared \
context and do not end your turn."""
    assert flavour.tool_names(srv.bodies[0]) == ["transfer_to_billing", "transfer_to_tech", "set_context",
                                                 "delete_context", "finish", "handoff", "send_message",
                                                 "send_event"]
    assert "Variables the flow uses: resolved." in flavour.tool(srv.bodies[0], "set_context")["description"]


def test_a_conversation_offers_finish_and_the_platform_tools_and_a_model_ends_it(flavour, serve):
    srv = serve(replies(flavour.call("finish", {"reason": "answered"}, "It is 42.")))
    res, _ = session({"helper": flavour.agent(srv, "helper"),
                      "asker": ScriptedAgent("asker", [{"say": "What is 6 x 7?"}])}, spec=CHAT, task=None)
    assert (res.close_reason, res.error) == ("answered", None)
    assert [(t["speaker"], t["body"]) for t in res.turns] == [("asker", "What is 6 x 7?"), ("helper", "It is 42.")]
    assert flavour.tool_names(srv.bodies[0]) == ["finish", "send_message", "send_event"]
    system = flavour.system(srv.bodies[0])
    assert 'Session: conversation "chat"' in system and "You are helper: Helps" in system
    assert "Task:" not in system and "Context variables" not in system


def test_the_round_cap_and_the_whole_turn_deadline_hold_for_bad_calls(flavour, serve):
    srv = serve(lambda body, n: flavour.call("finish", {"reason": 7}, n=n))  # never a string
    res, _ = session({"triage": flavour.agent(srv, "triage", max_rounds=2),
                      **scripted(user=[{"say": "-"}], billing=[{"say": "-"}], tech=[{"say": "-"}])})
    assert res.close_reason == "agent_error" and "max_rounds=2" in res.error
    assert flavour.results(srv.bodies[1]) == [(False, "error: finish: `reason` must be a string, got 7")]
    srv2 = serve(lambda body, n: (*flavour.call("nope", {}, n=n), 0.1))  # several rounds, none over the deadline
    t0 = time.monotonic()
    res, _ = session({"triage": flavour.agent(srv2, "triage", max_rounds=50, turn_timeout=0.25),
                      **scripted(user=[{"say": "-"}], billing=[{"say": "-"}], tech=[{"say": "-"}])})
    assert time.monotonic() - t0 < 4
    assert res.close_reason == "agent_error" and "longer than turn_timeout=0.25 s" in res.error


def test_http_errors_and_a_missing_key_are_clear_errors(flavour, serve, monkeypatch):
    srv = serve(lambda body, n: (500, {"error": {"message": "boom", "type": "api_error"}}))
    # retry_seconds=0: the 500 is not waited out (that is test_model_outage.py's)
    res, _ = session({"triage": flavour.agent(srv, "triage", retry_seconds=0),
                      **scripted(user=[{"say": "-"}], billing=[{"say": "-"}], tech=[{"say": "-"}])})
    assert res.close_reason == "agent_error" and "model call failed: InternalServerError" in res.error
    monkeypatch.delenv(KEY_ENV)
    res, _ = session({"triage": flavour.agent(srv, "triage"),
                      **scripted(user=[{"say": "-"}], billing=[{"say": "-"}], tech=[{"say": "-"}])})
    assert res.close_reason == "invite_rejected" and f"environment variable {KEY_ENV} is not set" in res.error


def test_turnflow_run_with_openai_and_anthropic_agents_in_one_file(tmp_path, capsys):
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    oai = O.FakeOpenAI(replies(O.call("handoff", '{"to": "tech", "reason": "a crash"}', "Tech will help")))
    ant = A.FakeAnthropic(replies(A.use("set_context", {"key": "resolved", "value": True}, n=1),
                                  A.use("finish", {"reason": "resolved_by_user"}, "Works now, thanks", n=2)))
    try:
        agents = tmp_path / "agents.yaml"
        agents.write_text(f"""agents:
  triage: {{kind: openai, model: test-model, base_url: "{oai.base_url}", api_key_env: {KEY_ENV}, timeout: 5}}
  user: {{kind: anthropic, model: test-model, base_url: "{ant.base_url}", api_key_env: {KEY_ENV},
         max_tokens: 300, system: "You are the customer.", timeout: 5}}
  tech: {{kind: scripted, steps: [{{say: "Restarted"}}]}}
  billing: {{kind: scripted, steps: [{{say: "-"}}]}}
""")
        db = str(tmp_path / "hub.db")
        assert main(["run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents), "--task",
                     "It crashes", "--store", db, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
    finally:
        oai.stop()
        ant.stop()
    assert out["close_reason"] == "resolved_by_user"
    assert [(t["speaker"], t["kind"], t["target"]) for t in out["turns"]] == [
        ("triage", "handoff", "tech"), ("tech", "text", None), ("user", "finish", None)]
    assert out["turns"][-1]["set"] == {"resolved": True} and out["turns"][-1]["body"] == "Works now, thanks"
    assert ant.bodies[0]["max_tokens"] == 300 and ant.requests[0]["path"] == "/v1/messages"
    # the key as the client sends it (x-api-key in older clients, a bearer token in newer ones)
    assert "sk-test" in (ant.requests[0]["x-api-key"], (ant.requests[0]["authorization"] or "")[len("Bearer "):])
    assert ant.bodies[0]["system"].startswith("You are the customer.\n\nSession: workflow \"support\"")
    assert "Task:\nIt crashes" in ant.bodies[0]["system"]
    assert "Task:\nIt crashes" in oai.bodies[0]["messages"][0]["content"]


def test_an_unknown_agents_file_key_for_anthropic_is_refused(tmp_path, capsys):
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  triage: {kind: anthropic, model: m, max_token: 5}\n")
    assert main(["run", str(ROOT / "examples" / "support.flow"), "--agents", str(agents)]) == 1
    err = capsys.readouterr().err
    assert "unknown key 'max_token' for a anthropic agent" in err and "max_tokens" in err


# -- the tool set without a server ------------------------------------------------------------------

def _ctx(spec, name, task=None):
    return agent_context(SessionSpec.parse(spec), "s" * 32, name, task)


def test_which_sessions_allow_dynamic_handoffs():
    assert allows_dynamic_handoffs(SessionSpec.parse(SUPPORT)) is True
    assert allows_dynamic_handoffs(SessionSpec.parse(ROTATE)) is False  # only round_robin: no named routing
    assert allows_dynamic_handoffs(SessionSpec.parse(CHAT)) is False
    tools = FakeSessionTools("a", ["a", "b"])
    assert ModelTools(tools, _ctx(ROTATE, "a")).names == ["set_context", "delete_context", "finish"]
    assert ModelTools(tools, None).names == ["finish"]
    assert ModelTools(tools, _ctx(ROTATE, "a"), session_tools=False).names == []


def test_a_routing_tool_named_like_a_session_tool_wins():
    spec = compile_flow("""workflow w {
    participant a
    participant b
    start a
    handoff a -> b via finish "Done here: pass to b"
    b -> terminate
}""", path="w.flow")[0]
    tools = FakeSessionTools("a", ["a", "b"], [{"name": "finish", "description": "Done here: pass to b"}])
    ts = ModelTools(tools, _ctx(spec, "a"))
    assert ts.names == ["finish", "set_context", "delete_context", "handoff"]
    assert ts.call("finish", "{}") == "routed via finish" and tools.round()["tool"] == "finish"


@pytest.mark.parametrize("name,args,error", [
    ("set_context", "[1]", "set_context: arguments must be an object, got [1]"),
    ("set_context", "{bad", "set_context: arguments are not valid JSON"),
    ("set_context", {"key": "", "value": 1}, "set_context: `key` must not be empty"),
    ("set_context", {"key": 1, "value": 1}, "set_context: `key` must be a string, got 1"),
    ("delete_context", {"key": "x", "force": True}, "delete_context: unknown argument 'force' (it takes key)"),
    ("finish", {}, "finish: missing argument 'reason'"),
    ("handoff", {"to": "triage"}, "handoff: 'triage' is not a participant you can hand off to"),
    ("handoff", {"to": "tech", "reason": ["x"]}, 'handoff: `reason` must be a string, got ["x"]'),
    ("transfer_to_tech", {"why": "x"}, "transfer_to_tech: unknown argument 'why'"),
    ("send_message", {}, "triage has no tool 'send_message' (its tools: transfer_to_billing, transfer_to_tech, "
                         "set_context, delete_context, finish, handoff)"),
])
def test_bad_calls_raise_tool_errors_and_change_nothing(name, args, error):
    tools = FakeSessionTools("triage", [p["agent_id"] for p in SUPPORT["participants"]],
                             [t for t in SUPPORT["tools"] if t["owner"] == "triage"])
    ts = ModelTools(tools, _ctx(SUPPORT, "triage"))
    with pytest.raises(ToolError) as e:
        ts.call(name, args)
    assert str(e.value).startswith(error)
    assert tools.round() == {"body": "", "kind": "text", "tool": None, "reason": None, "target": None, "set": {},
                             "delete": []}


def test_the_prompt_without_a_handshake_context_names_the_participants():
    tools = FakeSessionTools("a", ["a", "b", "c"])
    assert system_prompt("a", None, None, ModelTools(tools, None), tools.get_participants()) == (
        "You are a, a participant in a multi-agent session.\nYou are a. Other participants: b, c.")


def test_a_hand_built_context_still_gets_a_prompt_and_the_workflow_tools():
    ctx = AgentContext("s", "a", "workflow", ("a", "b"), ())
    tools = FakeSessionTools("a", ["a", "b"])
    ts = ModelTools(tools, ctx)
    assert ts.names == ["set_context", "delete_context", "finish"]
    assert system_prompt("a", "Be brief.", ctx, ts) == (
        "Be brief.\n\nSession: workflow\nYou are a.\nParticipants:\n- a (you)\n- b\n\n"
        "Your turn ends when you reply with text, or when you route it with one call to a routing tool: finish. "
        "set_context and delete_context change the shared context and do not end your turn.")


def test_a_reply_without_text_after_a_context_change_posts_the_change(flavour, serve):
    srv = serve(replies(flavour.call("set_context", {"key": "resolved", "value": True}), flavour.say("")))
    agents = {"user": flavour.agent(srv, "user"),
              **scripted(triage=[{"say": "to tech", "tool": "transfer_to_tech"}], tech=[{"say": "Restarted"}],
                         billing=[{"say": "-"}])}
    res, _ = session(agents)
    assert (res.close_reason, res.error) == ("resolved", None)
    assert res.turns[-1] == {"speaker": "user", "kind": "text", "tool": None, "target": None, "body": "",
                             "set": {"resolved": True}, "delete": []}


def test_one_model_agent_in_two_concurrent_sessions_gets_each_sessions_task(flavour, serve):
    from turnflow.runtime.agents import FunctionAgent

    srv = serve(lambda body, n: (*flavour.call("transfer_to_billing", n=n), 0.1))
    triage = flavour.agent(srv, "triage")
    others = {"billing": FunctionAgent(lambda msg, tools: {"say": "Refunded", "set": {"resolved": True}}, "billing"),
              "user": FunctionAgent(lambda msg, tools: "Thanks", "user"),
              "tech": FunctionAgent(lambda msg, tools: "-", "tech")}

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        try:
            return await asyncio.gather(*(run_session(hub, SUPPORT, {"triage": triage, **others}, task)
                                          for task in ("Task one", "Task two")))
        finally:
            await hub.aclose()
    results = asyncio.run(go())
    assert [(r.close_reason, r.error) for r in results] == [("resolved", None)] * 2
    tasks = sorted(flavour.system(b).split("Task:\n")[1].split("\n")[0] for b in srv.bodies)
    assert tasks == ["Task one", "Task two"]


def test_the_anthropic_transcript_alternates_and_starts_and_ends_with_the_user():
    agent = AnthropicMessagesAgent("a", "m", api_key_env=KEY_ENV)
    tools = FakeSessionTools("a", ["a", "b", "c"])
    msg = [{"sender": "a", "text": "I start"}, {"sender": "b", "text": "hi"}, {"sender": "c", "text": "yo"},
           {"sender": "a", "text": "done"}]
    assert agent.anthropic_messages(msg, tools) == [
        {"role": "user", "content": "(the session has just started: begin)"},
        {"role": "assistant", "content": "I start"},
        {"role": "user", "content": "b: hi\n\nc: yo"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "(it is your turn)"}]
    assert agent.anthropic_messages([], tools) == [{"role": "user", "content": "(the session has just started: begin)"}]
    assert A.anthropic_problem({"model": "m", "max_tokens": 5, "messages": agent.anthropic_messages(msg, tools)}) is None


from hypothesis import given, settings, strategies as st  # noqa: E402

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
                     max_leaves=4)
_VALID = {"transfer_to_billing": st.just({}), "transfer_to_tech": st.just({"reason": "why"}),
          "set_context": st.builds(lambda v: {"key": "resolved", "value": v}, _JSON),
          "delete_context": st.just({"key": "resolved"}), "finish": st.just({"reason": "done"}),
          "handoff": st.builds(lambda to: {"to": to}, st.sampled_from(["tech", "user", "billing", "triage", "x"])),
          "send_message": st.just({"text": "hi"}), "": st.just({})}
_JUNK = st.one_of(st.dictionaries(st.sampled_from(["key", "value", "reason", "to", "extra"]), _JSON, max_size=3),
                  _JSON, st.text(max_size=6))
_CALL = st.sampled_from(sorted(_VALID)).flatmap(lambda n: st.tuples(st.just(n), _VALID[n] | _JUNK))


@settings(max_examples=100, deadline=None)
@given(st.lists(_CALL, max_size=6))
def test_any_sequence_of_calls_either_succeeds_or_raises_a_tool_error_that_changes_nothing(seq):
    tools = FakeSessionTools("triage", [p["agent_id"] for p in SUPPORT["participants"]],
                             [t for t in SUPPORT["tools"] if t["owner"] == "triage"])
    ts = ModelTools(tools, _ctx(SUPPORT, "triage"))
    routes = set()
    for name, args in seq:
        before = tools.round()
        try:
            ts.call(name, args)
        except ToolError:
            assert tools.round() == before
            continue
        r = tools.round()
        if r["kind"] != "text":
            routes.add((r["kind"], r["tool"], r["target"]))
    assert len(routes) <= 1  # one routing decision per round, whatever the model tries


def test_the_example_models_file_builds_both_kinds_of_model_agent(monkeypatch):
    from turnflow.cli.run_inputs import load_agents

    monkeypatch.setenv("OPENAI_API_KEY", "local")  # the keys its header says to export
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    agents = load_agents(str(ROOT / "examples" / "support_models.yaml"))
    assert type(agents["triage"]) is OpenAIChatAgent and type(agents["billing"]) is AnthropicMessagesAgent
    assert agents["billing"].max_tokens == 512 and agents["billing"].api_key_env == "ANTHROPIC_API_KEY"
    assert sorted(agents) == sorted(p["agent_id"] for p in SUPPORT["participants"])


def test_session_tools_off_offers_the_routing_tools_alone(flavour, serve):
    srv = serve(replies(flavour.say("Refund issued")))
    agents = {"billing": flavour.agent(srv, "billing", session_tools=False),
              **scripted(triage=[{"say": "to billing", "tool": "transfer_to_billing"}],
                         user=[{"say": "ok", "finish": "done"}], tech=[{"say": "-"}])}
    res, _ = session(agents)
    assert (res.close_reason, res.error) == ("done", None) and res.turns[1]["body"] == "Refund issued"
    assert "tools" not in srv.bodies[0]  # billing owns no routing tool: no tools at all
    assert "Your turn ends" not in flavour.system(srv.bodies[0])


def test_the_last_context_call_for_a_key_wins_within_a_round():
    tools = FakeSessionTools("triage", [p["agent_id"] for p in SUPPORT["participants"]])
    ts = ModelTools(tools, _ctx(SUPPORT, "triage"))
    ts.call("set_context", {"key": "resolved", "value": True})
    ts.call("delete_context", {"key": "resolved"})
    ts.call("delete_context", {"key": "note"})
    ts.call("set_context", {"key": "note", "value": "kept"})
    r = tools.round()
    assert (r["set"], r["delete"]) == ({"note": "kept"}, ["resolved"])


def test_the_context_variables_include_every_key_a_rule_reads():
    spec = compile_flow("""workflow w {
    participant coder
    participant critic
    start coder
    context attempts = 0
    coder -> critic when context.attempts > 2 or text contains "BLOCKED"
    critic -> coder when not context.approved == true and len(context.notes) > 0
    otherwise -> terminate
}""", path="w.flow")[0]
    ctx = _ctx(spec, "critic")
    assert ctx.context_vars == (("attempts", 0), ("approved", None), ("notes", None))
    prompt = system_prompt("critic", None, ctx, ModelTools(FakeSessionTools("critic", ["coder", "critic"]), ctx))
    assert "Context variables (initial values): attempts = 0, approved = (unset), notes = (unset)" in prompt


def test_issue14_defect12_endpoint_error_text_is_stored_with_api_keys_masked(flavour, serve, monkeypatch):
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv(KEY_ENV, secret)
    srv = serve(lambda body, n: (401, {"type": "error", "error": {"type": "authentication_error",
                                                                  "message": f"Incorrect API key provided: {secret}"}}))
    res, tel = session({"triage": flavour.agent(srv, "triage"), **scripted(
        user=[{"say": "Thanks"}], billing=[{"say": "Refunded"}], tech=[{"say": "Fixed"}])})
    assert res.close_reason == "agent_error" and "model call failed" in res.error
    assert secret not in res.error and secret not in json.dumps(tel)
    assert "***" in res.error
