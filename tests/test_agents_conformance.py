"""The agent contract (docs/agents.md) checked the same way for every built-in agent:
ScriptedAgent, FunctionAgent and OpenAIChatAgent (against a local OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime_helpers import FakeClock
from turnflow import compile as compile_flow
from turnflow.runtime.agents import Capabilities, FunctionAgent, ScriptedAgent
from turnflow.runtime.agents.contract import AgentContext
from turnflow.runtime.envelope import Envelope
from turnflow.runtime.hub import Hub
from turnflow.runtime.runner import run_session
from turnflow.runtime.store import SQLiteStore

PAIR = compile_flow((Path(__file__).parent / "fixtures" / "agents" / "pair.flow").read_text(), path="pair.flow")[0]
KINDS = ["scripted", "function", "openai"]
KEY_ENV = "TURNFLOW_TEST_OPENAI_KEY"


def _openai_responder(body, n):
    from openai_server import call, say

    if any(t["function"]["name"] == "ask_helper" for t in body.get("tools") or []):  # the asker owns ask_helper
        return call("ask_helper", '{"reason": "needs an expert"}', "What is six times seven?")
    return say("ANSWER: 42")


@pytest.fixture
def make_pair(monkeypatch):
    """make_pair(kind) -> {"asker": agent, "helper": agent}, fresh agents of one kind."""
    servers = []

    def make(kind):
        if kind == "scripted":
            return {"asker": ScriptedAgent("asker", [{"say": "What is six times seven?", "tool": "ask_helper"}]),
                    "helper": ScriptedAgent("helper", [{"say": "ANSWER: 42"}])}
        if kind == "function":
            async def asker(msg, tools):
                tools.execute_tool_call("ask_helper", {"reason": "needs an expert"})
                return "What is six times seven?"

            def helper(msg, tools):
                assert msg[-1]["sender"] == "asker"
                return {"say": "ANSWER: 42"}
            return {"asker": FunctionAgent(asker), "helper": FunctionAgent(helper)}
        pytest.importorskip("openai")
        from openai_server import FakeOpenAI

        from turnflow.runtime.agents import OpenAIChatAgent

        monkeypatch.setenv(KEY_ENV, "sk-test")
        srv = FakeOpenAI(_openai_responder)
        servers.append(srv)
        return {n: OpenAIChatAgent(n, "test-model", base_url=srv.base_url, api_key_env=KEY_ENV, max_retries=0,
                                   timeout=5.0) for n in ("asker", "helper")}
    yield make
    for s in servers:
        s.stop()


def _ctx(name, sid="a" * 32):
    return AgentContext(sid, name, "workflow", ("asker", "helper"),
                        tuple(t for t in PAIR["tools"] if t["owner"] == name))


async def _noop_emit(event):
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_handshake_answers_valid_capabilities(kind, make_pair):
    async def go():
        out = {}
        for name, agent in make_pair(kind).items():
            caps = await agent.open_session(_ctx(name), _noop_emit)
            out[name] = Capabilities.from_handshake(caps, name)
            await agent.close_session("a" * 32)
        return out
    for _name, caps in asyncio.run(go()).items():
        assert caps.control_loop in ("hub", "self") and caps.supports_stepwise is True
        assert isinstance(caps.telemetry_stream, bool)


@pytest.mark.parametrize("kind", KINDS)
def test_close_session_is_idempotent_and_never_raises(kind, make_pair):
    async def go():
        for name, agent in make_pair(kind).items():
            await agent.close_session("b" * 32)  # never opened
            await agent.open_session(_ctx(name), _noop_emit)
            assert await agent.close_session("a" * 32) is None
            assert await agent.close_session("a" * 32) is None
    asyncio.run(go())


def _log(db):
    """Every envelope of the only session in a store, without its session id, plus the
    session's state as a hub hydrated from the store sees it."""
    store = SQLiteStore(db)
    try:
        hub = Hub(store, clock=FakeClock())
        report = hub.hydrate()
        assert report.problems == []
        (live,) = hub.sessions.values()
        envs = list(store.read_range(live.session_id))
        assert all(isinstance(e, Envelope) for e in envs)
        recs = [{k: v for k, v in e.to_record().items() if k != "session_id"} for e in envs]
        return recs, {k: v for k, v in hub.info(live.session_id).items() if k != "session_id"}
    finally:
        store.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_two_agent_handoff_session_replays_to_an_identical_log(kind, make_pair, tmp_path):
    async def once(db):
        hub = await Hub.open(SQLiteStore(db), clock=FakeClock())
        try:
            res = await run_session(hub, PAIR, make_pair(kind), task="Ask about 6 x 7")
            return res, hub.info(res.session_id)
        finally:
            await hub.aclose()

    logs = []
    for i in range(2):
        db = str(tmp_path / f"run{i}.db")
        res, live_info = asyncio.run(once(db))
        assert (res.state, res.close_reason, res.error) == ("closed", "answered", None)
        assert [(t["speaker"], t["kind"], t["tool"], t["body"]) for t in res.turns] == [
            ("asker", "handoff", "ask_helper", "What is six times seven?"), ("helper", "text", None, "ANSWER: 42")]
        log, hydrated = _log(db)
        assert hydrated == {k: v for k, v in live_info.items() if k != "session_id"}  # hydrate replays the log
        logs.append(log)
    assert logs[0] == logs[1]
    assert [r["event_type"] for r in logs[0]] == ["session.invite", "session.ack", "session.opened", "packet",
                                                 "packet", "session.closed"]
