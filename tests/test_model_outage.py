"""A model endpoint that is briefly unavailable — rate limited (429), overloaded (529), failing
(500, 502, 503), timing out, or dropping the connection mid-answer — is waited out: the model
call is tried again, within the agent's `retry_seconds` (60 s by default) and its `turn_timeout`,
so a transient outage never ends a session `agent_error` or a batch's task `failed`. A permanent
answer (a refused key, a bad request, a reply that is not JSON) fails the turn at once, with a
clear message. An outage longer than `retry_seconds` ends a single run `agent_error` saying so,
and stops a batch (exit 2) without recording any task failed: the same command continues it.
Real HTTP against tests/openai_server.py and tests/anthropic_server.py; waits are the server's
`retry-after-ms` (milliseconds), so the file runs in a few seconds."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("openai") is None
                                or importlib.util.find_spec("anthropic") is None,
                                reason="openai or anthropic is not installed")

import anthropic_server as A  # noqa: E402
from batch_helpers import SPEC, StoreReader, check_exactly_once  # noqa: E402
from openai_server import DROP, FakeOpenAI, call, say, with_test_key  # noqa: E402
from runtime_helpers import run_on_hub  # noqa: E402
from turnflow import compile as compile_flow  # noqa: E402
from turnflow.cli.app import main  # noqa: E402
from turnflow.runtime.agents import AnthropicMessagesAgent, OpenAIChatAgent, ScriptedAgent  # noqa: E402
from turnflow.runtime.agents.config import build_agent  # noqa: E402
from turnflow.runtime.errors import AdapterError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = compile_flow((ROOT / "examples" / "support.flow").read_text(), path="support.flow")[0]
KEY_ENV = "TURNFLOW_TEST_OPENAI_KEY"
SOON = {"retry-after-ms": "10"}  # the server asks to be tried again in 10 ms


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    with_test_key(monkeypatch, KEY_ENV)


@pytest.fixture
def servers():
    made = []

    def make(responder, cls=FakeOpenAI, **kw):
        s = cls(responder, **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def others():
    return {"user": ScriptedAgent("user", [{"say": "Thanks"}]),
            "billing": ScriptedAgent("billing", [{"say": "Refunded", "set": {"resolved": True}}]),
            "tech": ScriptedAgent("tech", [{"say": "Fixed", "set": {"resolved": True}}])}


def openai_agent(srv, **kw):
    kw.setdefault("max_retries", 0)  # the client's own retries off: what is retried here is turnflow's
    kw.setdefault("timeout", 5.0)
    return OpenAIChatAgent("triage", "test-model", base_url=srv.base_url, api_key_env=KEY_ENV, **kw)


def anthropic_agent(srv, **kw):
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return AnthropicMessagesAgent("triage", "test-model", base_url=srv.base_url, api_key_env=KEY_ENV, **kw)


def error(status, message="unavailable"):
    return status, {"error": {"message": message, "type": "server_error"}}, 0, SOON


FAULTS = {
    "429": error(429, "rate limited"),
    "500": error(500),
    "502": error(502),
    "503": error(503),
    "529": error(529, "overloaded"),
    "dropped mid-answer": (DROP, say("cut")[1]),
    "timeout": (*say("too late"), 0.6),  # the agent's request timeout is 0.2 s below
}


@pytest.fixture
def quick(monkeypatch):
    """Waits of 10 ms where the server names none (turnflow's own are 0.5, 1, 2 ... 8 s)."""
    from turnflow.runtime.agents import openai_chat

    monkeypatch.setattr(openai_chat, "FIRST_WAIT", 0.01)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_brief_outage_is_waited_out_and_the_session_resolves(servers, quick, fault):
    srv = servers(lambda body, n: FAULTS[fault] if n <= 3 else call("transfer_to_billing"))
    agent = openai_agent(srv, timeout=0.2 if fault == "timeout" else 5.0)
    res, tel = run_on_hub({"triage": agent, **others()}, SUPPORT, "My invoice is wrong")
    assert (res.state, res.close_reason, res.error) == ("closed", "resolved", None)
    assert len(srv.requests) == 4
    waits = [t for t in tel if t["event"] == "progress" and t["reason"] == "model endpoint unavailable"]
    assert [w["payload"]["attempt"] for w in waits] == [1, 2, 3]
    assert [e for e in tel if e["event"] == "error"] == []


def test_an_overloaded_anthropic_endpoint_is_waited_out(servers):
    srv = servers(lambda body, n: (529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
                                   0, SOON) if n <= 2 else A.use("transfer_to_billing"), cls=A.FakeAnthropic)
    res, _ = run_on_hub({"triage": anthropic_agent(srv), **others()}, SUPPORT, "My invoice is wrong")
    assert (res.close_reason, res.error) == ("resolved", None)
    assert len(srv.requests) == 3


def test_the_servers_retry_after_is_honoured(servers):
    stamps = []

    def responder(body, n):
        stamps.append(time.monotonic())
        return (429, {"error": {"message": "slow down"}}, 0, {"retry-after-ms": "300"}) if n == 1 \
            else call("transfer_to_billing")
    srv = servers(responder)
    res, _ = run_on_hub({"triage": openai_agent(srv), **others()}, SUPPORT, "My invoice is wrong")
    assert res.close_reason == "resolved"
    assert stamps[1] - stamps[0] >= 0.29


@pytest.mark.parametrize("status, name", [(400, "BadRequestError"), (401, "AuthenticationError"),
                                          (403, "PermissionDeniedError"), (404, "NotFoundError")])
def test_a_permanent_refusal_fails_the_turn_at_once_with_the_endpoints_words(servers, status, name):
    srv = servers(lambda body, n: (status, {"error": {"message": "no such model", "type": "invalid_request_error"}}))
    res, _ = run_on_hub({"triage": openai_agent(srv), **others()}, SUPPORT, "x")
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert f"model call failed: {name}" in res.error and "no such model" in res.error
    assert len(srv.requests) == 1


def test_a_reply_that_is_not_json_fails_the_turn_saying_so(servers):
    srv = servers(lambda body, n: (200, b"<html><body>Bad gateway</body></html>"))
    res, _ = run_on_hub({"triage": openai_agent(srv), **others()}, SUPPORT, "x")
    assert res.close_reason == "agent_error"
    assert "the endpoint's reply is not JSON" in res.error and "JSONDecodeError" not in res.error
    assert len(srv.requests) == 1


def test_an_outage_longer_than_retry_seconds_ends_the_run_saying_how_long(servers):
    srv = servers(lambda body, n: error(503), max_requests=200)
    t0 = time.monotonic()
    res, tel = run_on_hub({"triage": openai_agent(srv, retry_seconds=0.4), **others()}, SUPPORT, "x")
    assert time.monotonic() - t0 < 3
    assert (res.state, res.close_reason) == ("closed", "agent_error")
    assert "model call failed: InternalServerError" in res.error
    assert "the endpoint was unavailable for 0.4 s" in res.error, res.error
    assert len(srv.requests) >= 3


def test_without_a_retry_after_the_first_wait_is_half_a_second(servers):
    stamps = []

    def responder(body, n):
        stamps.append(time.monotonic())
        return (DROP, say("cut")[1]) if n == 1 else call("transfer_to_billing")
    srv = servers(responder)
    res, tel = run_on_hub({"triage": openai_agent(srv), **others()}, SUPPORT, "x")
    assert res.close_reason == "resolved"
    assert 0.35 <= stamps[1] - stamps[0] < 2
    [wait] = [t["payload"] for t in tel if t["event"] == "progress"]
    assert 0.4 <= wait["retry_in"] <= 0.5 and "APIConnectionError" in wait["error"]


def test_retry_seconds_zero_keeps_only_the_clients_own_retries(servers):
    srv = servers(lambda body, n: error(503))
    res, _ = run_on_hub({"triage": openai_agent(srv, retry_seconds=0), **others()}, SUPPORT, "x")
    assert res.close_reason == "agent_error" and "InternalServerError" in res.error
    assert len(srv.requests) == 1


def test_an_outage_is_bounded_by_the_turn_timeout_too(servers):
    srv = servers(lambda body, n: error(503), max_requests=200)
    t0 = time.monotonic()
    res, _ = run_on_hub({"triage": openai_agent(srv, turn_timeout=0.4), **others()}, SUPPORT, "x")
    assert time.monotonic() - t0 < 3
    assert res.close_reason == "agent_error"
    assert "the endpoint was unavailable" in res.error and "turn_timeout=0.4 s" in res.error, res.error


@pytest.mark.parametrize("value", [-1, "5", True, float("nan"), float("inf")])
def test_a_bad_retry_seconds_in_the_agents_file_is_named(value):
    with pytest.raises(AdapterError, match="`retry_seconds` must be a number of seconds, 0 or more"):
        build_agent("w", {"kind": "openai", "model": "m", "retry_seconds": value})


def test_retry_seconds_from_the_agents_file():
    assert build_agent("w", {"kind": "anthropic", "model": "m", "retry_seconds": 0}).retry_seconds == 0.0
    assert build_agent("w", {"kind": "openai", "model": "m"}).retry_seconds == 60.0


# -- a batch ------------------------------------------------------------------------------------

def _batch(tmp_path, srv, n_tasks, retry_seconds=None, concurrency=2, store=None):
    spec = copy.deepcopy(SPEC)
    spec["knobs"]["graph"]["max_turns"] = 3
    (tmp_path / "flow.json").write_text(json.dumps(spec))
    extra = f", retry_seconds: {retry_seconds}" if retry_seconds is not None else ""
    (tmp_path / "agents.yaml").write_text("agents:\n" + "".join(
        f'  {a}: {{kind: openai, model: m, base_url: "{srv.base_url}", api_key_env: {KEY_ENV}, timeout: 2{extra}}}\n'
        for a in "abc"))
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n"
                                                  for i in range(n_tasks)))
    return ["run", str(tmp_path / "flow.json"), "--agents", str(tmp_path / "agents.yaml"),
            "--tasks", str(tmp_path / "tasks.jsonl"), "--store", store or str(tmp_path / "hub.db"),
            "--concurrency", str(concurrency), "--format", "json"]


def test_a_rate_limited_batch_finishes_every_task_and_fails_none(servers, tmp_path, capsys):
    # model calls are refused with 429 six times in a row out of every ten (the client's own 2 retries
    # are not enough for one of the two sessions at least)
    srv = servers(lambda body, n: error(429, "rate limited") if n % 10 < 6 else say(f"reply {n}"),
                  max_requests=200)
    rc = main(_batch(tmp_path, srv, 4))
    cap = capsys.readouterr()
    lines = [json.loads(x) for x in cap.out.splitlines()]
    assert rc == 0, cap.err
    assert sorted((x["id"], x["status"], x["close_reason"], x["turns"]) for x in lines) == [
        (f"t{i}", "done", "max_turns", 3) for i in range(4)]
    check_exactly_once(StoreReader(str(tmp_path / "hub.db")), [f"t{i}" for i in range(4)])


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    return str(tmp_path / "hub.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")


def test_a_long_outage_stops_the_batch_failing_no_task_and_the_same_command_continues(servers, tmp_path, capsys,
                                                                                      store):
    down = {"from": 4}  # the endpoint answers the first three calls, then is down until told otherwise

    def responder(body, n):
        return error(503) if n >= down["from"] else say(f"reply {n}")
    srv = servers(responder, max_requests=400)
    args = _batch(tmp_path, srv, 3, retry_seconds=0.3, concurrency=1, store=store)
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 2, cap.err
    assert "the endpoint was unavailable for 0.3 s" in cap.err
    assert "no task was recorded failed for it; run the same command again to continue" in cap.err
    assert [json.loads(x)["status"] for x in cap.out.splitlines()] == ["done"]  # t0 finished before the outage
    reader = StoreReader(store)
    assert {t: s for t, (s, *_) in reader.tasks().items()} == {"t0": "done", "t1": "pending", "t2": "pending"}
    down["from"] = 10 ** 9  # the endpoint is back
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    lines = [json.loads(x) for x in cap.out.splitlines()]
    assert sorted((x["id"], x["status"], x.get("skipped")) for x in lines) == [
        ("t0", "done", True), ("t1", "done", False), ("t2", "done", False)]
    check_exactly_once(reader, ["t0", "t1", "t2"])  # one session each, its log contiguous


def test_a_python_agent_says_an_outage_by_raising_endpoint_unavailable(tmp_path, capsys, monkeypatch):
    """A `kind: python` agent calling a service of its own raises `EndpointUnavailable` when that
    service is away: the batch stops as for a model endpoint (exit 2), no task recorded failed, and
    the same command continues once the service is back."""
    spec = copy.deepcopy(SPEC)
    spec["knobs"]["graph"]["max_turns"] = 3
    (tmp_path / "flow.json").write_text(json.dumps(spec))
    (tmp_path / "tf_outage_agents.py").write_text(
        "import os\n"
        "from turnflow.runtime.errors import EndpointUnavailable\n"
        "def speak(msg, tools):\n"
        "    if os.path.exists(os.environ['TF_DOWN']) and tools.agent_id == 'b':\n"
        "        raise EndpointUnavailable('the search service did not answer for 60 s')\n"
        "    return f'{tools.agent_id} says {len(msg)}'\n")
    (tmp_path / "agents.yaml").write_text("agents:\n" + "".join(
        f'  {a}: {{kind: python, ref: "tf_outage_agents:speak"}}\n' for a in "abc"))
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": f"t{i}"}) + "\n" for i in range(2)))
    args = ["run", str(tmp_path / "flow.json"), "--agents", str(tmp_path / "agents.yaml"),
            "--tasks", str(tmp_path / "tasks.jsonl"), "--store", str(tmp_path / "hub.db"), "--format", "json"]
    down = tmp_path / "down"
    down.write_text("")
    monkeypatch.setenv("TF_DOWN", str(down))
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 2, cap.err
    assert "the search service did not answer for 60 s" in cap.err
    assert "no task was recorded failed for it" in cap.err
    reader = StoreReader(str(tmp_path / "hub.db"))
    assert {s for s, *_ in reader.tasks().values()} == {"pending"}
    down.unlink()
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert sorted((x["id"], x["status"], x["resumed"]) for x in map(json.loads, cap.out.splitlines())) == [
        ("t0", "done", True), ("t1", "done", True)]
    check_exactly_once(reader, ["t0", "t1"])
