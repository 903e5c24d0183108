"""The framework-integration guide's promises to an agent author, driven the way an author would
(docs/contracts.md §5): an adapter written with the guide's hooks — `on_started(agent_name,
agent_description)`, `on_message(msg, tools, history, participants_msg, *, is_session_bootstrap,
room_id)`, `on_cleanup(room_id)` — runs unchanged under the real runner and hub; the membership
tools take the guide's argument names (`add_participant(name, role)`, `remove_participant(name)`,
role `member`); every refused tool call is a `ToolError` (the recoverable kind) whether called
directly or by name; the guide's unit test runs against `FakeSessionTools` with `PlatformMessage`;
an adapter's error event survives the turn it failed; `is_session_bootstrap` starts each run of a
session; the handshake text verbatim (`AdapterCapabilities`, `task: str`, `atlas` without stepwise
refused in its own words); a session adapter registered at a new version leaves sessions in flight."""

from __future__ import annotations

import json

import pytest

from runtime_helpers import new_hub, run
from turnflow.runtime.agents import FakeSessionTools, FunctionAgent, PlatformMessage, ScriptedAgent, ToolError
from turnflow.runtime.runner import run_session

PANEL = {"kind": "discussion", "name": "panel",
         "participants": [{"agent_id": "a", "role": "initiator"}, {"agent_id": "b", "role": "participant"}]}
CHAT = {"kind": "conversation", "name": "chat",
        "participants": [{"agent_id": "asker", "role": "initiator"}, {"agent_id": "helper", "role": "respondent"}]}


def session(spec, agents, task=None):
    async def go():
        hub = await new_hub()
        res = await run_session(hub, spec, agents, task)
        return res, hub.store.telemetry(res.session_id), list(hub.store.read_range(res.session_id))
    return run(go())


class MinimalAdapter:
    """The guide's "complete minimal adapter" (Pattern 2, history_converter=None, per-room state),
    its `_call_llm` a scripted model: the first call asks for send_message, the second answers."""

    def __init__(self, calls):
        self.history_converter = None
        self._system_prompt = ""
        self._room_messages: dict[str, list] = {}
        self.calls = calls
        self.llm_calls = 0

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        self.calls.append(("on_started", agent_name, agent_description))
        self._system_prompt = f"You are {agent_name}. {agent_description}"

    async def _call_llm(self, messages, tool_schemas):
        self.llm_calls += 1
        if self.llm_calls % 2 == 1:
            return {"content": "", "tool_calls": [{"id": f"c{self.llm_calls}", "name": "send_message",
                                                   "arguments": json.dumps({"content": f"reply {self.llm_calls}",
                                                                            "mentions": ["asker"]})}]}
        return {"content": "done"}

    async def on_message(self, msg, tools, history, participants_msg, *, is_session_bootstrap, room_id):
        self.calls.append(("on_message", msg.sender_name, msg.content, msg.format_for_llm(),
                           [h["content"] for h in history], participants_msg, is_session_bootstrap, room_id))
        if is_session_bootstrap:
            self._room_messages[room_id] = [{"role": "system", "content": self._system_prompt}]
        messages = self._room_messages[room_id]
        messages.append({"role": "user", "content": msg.format_for_llm()})
        tool_schemas = tools.get_tool_schemas("openai")
        while True:
            response = await self._call_llm(messages, tool_schemas)
            if not response.get("tool_calls"):
                if response.get("content"):
                    messages.append({"role": "assistant", "content": response["content"]})
                break
            messages.append({"role": "assistant", "content": response.get("content", ""),
                             "tool_calls": response["tool_calls"]})
            for tool_call in response["tool_calls"]:
                result = await tools.execute_tool_call(tool_call["name"], tool_call["arguments"])
                messages.append({"role": "tool", "tool_call_id": tool_call["id"], "content": str(result)})

    async def on_cleanup(self, room_id: str) -> None:
        self.calls.append(("on_cleanup", room_id))
        self._room_messages.pop(room_id, None)


def test_an_adapter_with_the_guides_hooks_runs_unchanged_and_the_hooks_come_in_order():
    calls: list = []
    adapter = MinimalAdapter(calls)
    asker = ScriptedAgent("asker", [{"say": "first question"}, {"say": "second question"},
                                    {"say": "thanks", "finish": "done"}])
    res, _, _ = session(CHAT, {"asker": asker, "helper": adapter}, "help me")
    assert res.close_reason == "done" and res.error is None
    assert [t["body"] for t in res.turns if t["speaker"] == "helper"] == ["reply 1", "reply 3"]
    sid = res.session_id
    assert [c[0] for c in calls] == ["on_started", "on_message", "on_message", "on_cleanup"]
    assert calls[0] == ("on_started", "helper", "")
    first, second = calls[1], calls[2]
    # msg: the message this turn answers; history: the view before it (raw, no converter)
    assert first[1:4] == ("asker", "first question", "[asker]: first question")
    assert first[4] == ["help me"]
    assert first[5].startswith("Participants: asker (initiator), helper (respondent)")
    assert first[6:] == (True, sid)
    assert second[1:4] == ("asker", "second question", "[asker]: second question")
    assert second[4] == ["help me", "first question", "reply 1"]
    assert second[5:] == (None, False, sid)  # the roster did not change; not the room session's first delivery
    assert calls[3] == ("on_cleanup", sid)
    assert sid not in adapter._room_messages  # its per-room state was cleaned up


def test_on_started_is_called_once_per_agent_even_when_it_opens_another_session():
    calls: list = []
    adapter = MinimalAdapter(calls)

    async def go():
        hub = await new_hub()
        for _ in range(2):  # the same adapter object in two runs, one after the other
            asker = ScriptedAgent("asker", [{"say": "q"}, {"say": "bye", "finish": "done"}])
            res = await run_session(hub, CHAT, {"asker": asker, "helper": adapter}, "t")
            assert res.close_reason == "done", res.error
    run(go())
    assert [c[0] for c in calls] == ["on_started", "on_message", "on_cleanup", "on_message", "on_cleanup"]
    rooms = [c[-1] for c in calls if c[0] in ("on_message", "on_cleanup")]
    assert rooms[0] == rooms[1] != rooms[2] == rooms[3]  # one room_id per session


def test_the_membership_tools_take_the_guides_argument_names_and_role_member():
    seen: list = []

    def a(msg, tools):
        if tools.step == 1:
            seen.append(tools.execute_tool_call("add_participant", {"name": "expert", "role": "member"}))
            props = {s["function"]["name"]: s["function"]["parameters"] for s in tools.get_tool_schemas("openai")}
            seen.append((sorted(props["add_participant"]["properties"]), props["add_participant"]["required"],
                         props["remove_participant"]["required"]))
            return {"say": "welcome"}
        seen.append(tools.remove_participant(name="b"))
        return {"say": "bye", "finish": "done"}

    class Expert:
        async def open_session(self, ctx, emit):
            return {}

        async def on_message(self, msg, tools):
            await tools.send_message("expert here")

    res, _, envs = session(PANEL, {"a": FunctionAgent(a, "a"), "b": ScriptedAgent("b", [{"say": "b"}] * 3),
                                   "expert": Expert()})
    assert res.close_reason == "done", res.error
    assert seen[0] == "added expert (participant): it takes part from the next turn"
    assert seen[1] == (["description", "name", "role"], ["name"], ["name"])
    assert seen[2] == "removed b: it takes no further turns"
    roster = [(e.event_type, e.event_data.get("agent_id"), e.event_data.get("role")) for e in envs
              if e.event_type.startswith("participant.")]
    assert roster == [("participant.added", "expert", "participant"), ("participant.removed", "b", None)]
    assert [t["speaker"] for t in res.turns] == ["a", "b", "expert", "a"]


def test_the_membership_tools_still_take_agent_id_and_refuse_both_names_at_once():
    t = FakeSessionTools("a", participants=["a", "b"])
    t.session_kind = "discussion"
    with pytest.raises(ToolError, match="add_participant: give the participant's name once"):
        t.execute_tool_call("add_participant", {"name": "x", "agent_id": "y"})
    with pytest.raises(ToolError, match="add_participant: missing argument 'name'"):
        t.execute_tool_call("add_participant", {"role": "member"})
    with pytest.raises(ToolError, match="refused: this turn is not part of a running session"):
        t.execute_tool_call("remove_participant", {"agent_id": "b"})  # the old name still reaches the check
    with pytest.raises(ToolError, match="role must be text"):
        t.add_participant("x", role=7)


def test_every_refused_tool_call_is_a_tool_error_called_directly_or_by_name():
    """The guide's recoverable errors (invalid arguments, not found, refused) are one class an
    adapter can catch and feed back to its model: `ToolError`, both ways of calling."""
    t = FakeSessionTools("a", participants=["a", "b"])
    direct = [lambda: t.send_message(5), lambda: t.send_message("x", mentions=["ghost"]),
              lambda: t.send_event("x", "gossip"), lambda: t.set_context(1, 2), lambda: t.set_context("k", {1}),
              lambda: t.delete_context(3), lambda: t.handoff("ghost"), lambda: t.lookup_peers(page=0),
              lambda: t.add_participant("x"), lambda: t.remove_participant("b"), lambda: t.create_chatroom("")]
    by_name = [("send_message", {"content": 5}), ("send_message", {}), ("send_event", {"content": "x", "x": 1}),
               ("set_context", {"key": 1, "value": 2}), ("handoff", {"target": "ghost"}),
               ("lookup_peers", {"page_size": 501}), ("add_participant", {"name": "x"}),
               ("create_chatroom", {"name": 3}), ("no_such_tool", {}), ("send_message", "not json")]
    for call in direct:
        with pytest.raises(ToolError):
            call()
    for name, args in by_name:
        with pytest.raises(ToolError):
            t.execute_tool_call(name, args)
    assert t.round()["body"] == "" and t.round()["set"] == {}  # a refused call changes nothing


def test_the_guides_unit_test_runs_with_fake_session_tools_and_platform_message():
    calls: list = []
    adapter = MinimalAdapter(calls)
    tools = FakeSessionTools("helper", participants=["asker", "helper"])

    async def go():
        await adapter.on_started("helper", "helps")
        await adapter.on_message(msg=PlatformMessage(id="1", content="Hello", sender_name="User"), tools=tools,
                                 history=[], participants_msg=None, is_session_bootstrap=True, room_id="room-1")
    run(go())
    assert tools.sent_messages == ["reply 1"]  # the LLM called send_message
    assert calls[1][1:4] == ("User", "Hello", "[User]: Hello")
    assert PlatformMessage(id="2", content="hi", sender_name="").format_for_llm() == "hi"


def test_an_adapters_error_event_before_it_raises_is_kept_and_the_message_marked_failed():
    """The guide's error reporting: `send_event(content=f"Error: {e}", message_type="error")`, then
    re-raise "so the message is marked as failed" — the event is stored, the failed turn recorded
    (and retried once), and a recoverable ToolError caught inside the loop fails nothing."""
    attempts: list = []

    class Reporter:
        async def open_session(self, ctx, emit):
            return {}

        async def on_message(self, msg, tools):
            attempts.append(tools.step)
            try:
                await tools.execute_tool_call("send_message", {"content": "x", "mentions": ["nobody"]})
            except ToolError as exc:  # recoverable: the loop goes on
                await tools.send_event(content=f"send_message recoverable error: {exc}", message_type="tool_result",
                                       metadata={"tool": "send_message", "is_error": True})
            try:
                raise TimeoutError("model timed out")
            except Exception as e:
                await tools.send_event(content=f"Error: {e}", message_type="error")
                raise

    res, tel, _ = session(CHAT, {"asker": ScriptedAgent("asker", [{"say": "q"}]), "helper": Reporter()}, "t")
    assert res.close_reason == "agent_error" and "model timed out" in res.error
    assert len(attempts) == 2
    mine = [(t["event"], t.get("reason"), (t.get("payload") or {}).get("content")) for t in tel
            if t["agent_id"] == "helper" and t["event"] != "handshake"]
    assert [m[0] for m in mine] == ["tool_result", "error", "error", "tool_result", "error", "error"]
    assert mine[1][2] == "Error: model timed out" and mine[2][1].startswith("turn failed: TimeoutError")


def test_an_agents_file_names_an_adapter_class_with_the_guides_hooks_and_its_history_converter(
        tmp_path, capsys, monkeypatch):
    """`turnflow run` with the guide's adapter class in the agents file (with `behavior:` and a
    `history_converter:`, so the entry is wrapped): the hooks run in order, `history` is converted."""
    from runtime_helpers import FIXTURES
    from turnflow.cli import main

    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "hooks.log"
    (tmp_path / "guide_adapters.py").write_text(
        "LOG = " + repr(str(log)) + "\n"
        "def note(*a):\n"
        "    open(LOG, 'a').write(repr(a) + '\\n')\n"
        "class Upper:\n"
        "    def convert(self, raw):\n"
        "        return [m['content'].upper() for m in raw]\n"
        "class BillingAdapter:\n"
        "    def __init__(self, model='gpt-4o'):\n"
        "        self.model = model\n"
        "    async def on_started(self, agent_name, agent_description):\n"
        "        note('on_started', agent_name)\n"
        "    async def on_message(self, msg, tools, history, participants_msg, *, is_session_bootstrap, room_id):\n"
        "        note('on_message', msg.format_for_llm(), history, is_session_bootstrap)\n"
        "        await tools.send_message('refund issued')\n"
        "        await tools.execute_tool_call('set_context', {'key': 'resolved', 'value': True})\n"
        "    async def on_cleanup(self, room_id):\n"
        "        note('on_cleanup')\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage: {kind: scripted, steps: [{say: 'to billing', tool: transfer_to_billing}]}\n"
                      "  billing:\n"
                      "    type: python\n"
                      "    behavior: atlas\n"
                      "    import_path: guide_adapters\n"
                      "    attribute: BillingAdapter\n"
                      "    history_converter: guide_adapters:Upper\n"
                      "  user: {kind: scripted, steps: [{say: thanks}, {finish: done}]}\n"
                      "  tech: {kind: scripted, steps: [{say: x}]}\n")
    main(["run", str(FIXTURES / "support.json"), "--agents", str(agents), "--task", "refund?", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["close_reason"] == "resolved"
    assert [(t["speaker"], t["body"]) for t in out["turns"]][:2] == [("triage", "to billing"),
                                                                    ("billing", "refund issued")]
    lines = log.read_text().splitlines()
    assert lines == [repr(("on_started", "billing")),
                     repr(("on_message", "[triage]: [Handed off via transfer_to_billing]\nto billing", ["REFUND?"],
                           True)),  # msg.content: the workflow adapter's extract_turn_input
                     repr(("on_cleanup",))]


def test_is_session_bootstrap_is_true_again_when_a_run_continues_the_session_with_a_new_agent():
    """"First message delivery for this room session, not first message ever in the room": a run
    continuing a session (in the same hub) hands it to its agents again, and each one's first
    turn of that run is a bootstrap with the roster — the guide's per-room state starts there."""
    import asyncio

    class Stalls:  # the asker's second turn never ends: the run is cancelled there, the session left open
        def __init__(self, started):
            self.started, self.turns = started, 0

        async def open_session(self, ctx, emit):
            return {}

        async def on_message(self, msg, tools):
            self.turns += 1
            if self.turns == 1:
                await tools.send_message("first question")
                return
            self.started.set()
            await asyncio.Event().wait()

        async def close_session(self, session_id):
            pass

    calls: list = []

    async def go():
        hub = await new_hub()
        started = asyncio.Event()
        task = asyncio.create_task(run_session(hub, CHAT, {"asker": Stalls(started), "helper": MinimalAdapter(calls)},
                                               "t", keep_open=True))
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait([task, waiting], timeout=60, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        assert started.is_set(), task.result() if task.done() else "the asker's second turn never started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        (sid,) = list(hub.sessions)
        again = {"asker": ScriptedAgent("asker", [{"say": "second question"}, {"say": "bye", "finish": "done"}]),
                 "helper": MinimalAdapter(calls)}  # a new adapter object: no per-room state yet
        return sid, await run_session(hub, CHAT, again, "t", session_id=sid)
    sid, res = run(go())
    assert res.close_reason == "done", res.error
    turns = [(c[2], c[5] is not None, c[6]) for c in calls if c[0] == "on_message"]
    assert turns == [("first question", True, True), ("second question", True, True)]


def test_get_tool_schemas_takes_the_guides_argument_name_format():
    t = FakeSessionTools("a", participants=["a", "b"])
    assert t.get_tool_schemas(format="anthropic") == t.get_tool_schemas("anthropic")
    assert t.get_tool_schemas() == t.get_tool_schemas(format="openai")
    with pytest.raises(ToolError, match="unknown tool schema format 'xml' \\(known: openai, anthropic\\)"):
        t.get_tool_schemas(format="xml")


def test_the_guides_step_by_step_adapter_subclasses_simple_adapter_with_its_history_converter():
    """Steps 1 and 2 of the guide with only the imports changed: `SimpleAdapter[T]` with
    `super().__init__(history_converter=...)` and `await super().on_started(...)`, and a
    `HistoryConverter[T]` subclass whose `convert(raw)` reads the raw fields the guide lists."""
    from typing import Any

    from turnflow.runtime.agents import SimpleAdapter
    from turnflow.runtime.agents.history import HistoryConverter

    MyMessages = list[dict[str, Any]]
    seen: list = []

    class MyHistoryConverter(HistoryConverter[MyMessages]):
        def convert(self, raw: list[dict[str, Any]]) -> MyMessages:
            return [{"role": m["role"], "content": m["content"], "who": (m["sender_name"], m["sender_type"],
                                                                          m["message_type"])} for m in raw]

    class MyFrameworkAdapter(SimpleAdapter[MyMessages]):
        def __init__(self, model: str = "gpt-4o", custom_section: str = "",
                     history_converter: MyHistoryConverter | None = None):
            super().__init__(history_converter=history_converter or MyHistoryConverter())
            self.model = model
            self._system_prompt = ""

        async def on_started(self, agent_name: str, agent_description: str) -> None:
            await super().on_started(agent_name, agent_description)
            self._system_prompt = f"{agent_name}: {agent_description}"

        async def on_message(self, msg, tools, history, participants_msg, *, is_session_bootstrap, room_id):
            seen.append((self._system_prompt, self.agent_name, msg.content, history, is_session_bootstrap))
            await tools.send_message("ok", mentions=[msg.sender_name])

    asker = ScriptedAgent("asker", [{"say": "q1"}, {"say": "bye", "finish": "done"}])
    res, _, _ = session(CHAT, {"asker": asker, "helper": MyFrameworkAdapter()}, "task text")
    assert res.close_reason == "done", res.error
    assert seen == [("helper: ", "helper", "q1",
                     [{"role": "user", "content": "task text", "who": ("<task>", "User", "text")}], True)]
    with pytest.raises(NotImplementedError, match="Bare must implement on_message"):
        class Bare(SimpleAdapter[list]):
            pass
        run(Bare().on_message(PlatformMessage(), FakeSessionTools(), [], None, is_session_bootstrap=True,
                              room_id="r"))


def test_the_handshake_text_verbatim_adapter_capabilities_and_its_emitter_type():
    """The handshake as the stateful-adapter text writes it: `aopen_session(self, *, task,
    metadata=None, emit_event: AdapterEventEmitter | None = None) -> AdapterCapabilities` answering
    its JSON example; the telemetry example emitted through `emit_event` is stored with its fields."""
    from typing import Any

    from turnflow.runtime.agents import AdapterCapabilities, AdapterEventEmitter

    class StatefulAdapter:
        async def aopen_session(self, *, task: str, metadata: dict[str, Any] | None = None,
                                emit_event: AdapterEventEmitter | None = None) -> AdapterCapabilities:
            assert emit_event is not None
            await emit_event({"event": "env_action", "payload": {"sql": "select 1"},
                              "reason": "Deriving answer from demo dataset.", "step": 1})
            return AdapterCapabilities(control_loop="self", supports_stepwise=False, telemetry_stream=True)

        async def on_message(self, msg, tools):
            await tools.send_message("answer")

    asker = ScriptedAgent("asker", [{"say": "q"}, {"say": "bye", "finish": "done"}])
    res, tel, _ = session(CHAT, {"asker": asker, "helper": StatefulAdapter()}, "t")
    assert res.close_reason == "done", res.error
    hs = [t for t in tel if t["agent_id"] == "helper" and t["event"] == "handshake"][0]
    assert hs["raw"] == hs["effective"] == {"control_loop": "self", "supports_stepwise": False,
                                            "telemetry_stream": True}
    ev = [t for t in tel if t["agent_id"] == "helper" and t["event"] == "env_action"][0]
    assert (ev["payload"], ev["reason"], ev["step"]) == ({"sql": "select 1"}, "Deriving answer from demo dataset.", 1)


def test_registering_an_adapter_at_a_new_version_leaves_sessions_in_flight_on_theirs():
    """SessionAdapter: "looked up at session-create time by (manifest.type, manifest.version).
    Re-registering an adapter at a new version does not retroactively change in-flight sessions —
    they keep their original manifest snapshot." """
    from dataclasses import replace as dc_replace

    from test_agents_adapter_protocol import QUIZ, QuizAdapter
    from turnflow.runtime.errors import ProtocolError

    class QuizV2(QuizAdapter):
        manifest = dc_replace(QuizAdapter.manifest, version=2)

        def validate_send(self, metadata, envelope, state):
            raise ProtocolError("v2 refuses every send")

    async def go():
        hub = await new_hub()
        hub.adapters[("quiz", 1)] = QuizAdapter()

        def host(msg, tools):
            if tools.step == 1:
                hub.adapters[("quiz", 2)] = QuizV2()  # registered while the v1 session runs
                return {"say": "2+2?"}
            return {"say": "right"}
        res = await run_session(hub, QUIZ, {"host": FunctionAgent(host, "host"),
                                            "guest": ScriptedAgent("guest", [{"say": "4"}])})
        record = await hub.get_session(res.session_id)
        v2 = await hub.open_spec(QUIZ, version=2)
        return res, record, v2
    res, record, v2 = run(go())
    assert res.close_reason == "quiz_over", res.error
    assert [t["body"] for t in res.turns] == ["2+2?", "4", "right"]
    assert record.manifest.version == 1 and v2.manifest.version == 2


def test_atlas_without_stepwise_is_refused_naming_what_the_agent_said():
    """`control_loop: "atlas"` is the hub-driven loop, which drives one turn at a time; an agent
    answering it with `supports_stepwise: false` is told so in its own words, with the fix."""
    from turnflow.runtime.agents import Capabilities
    from turnflow.runtime.errors import AdapterError

    with pytest.raises(AdapterError) as err:
        Capabilities.from_handshake({"control_loop": "atlas", "supports_stepwise": False}, "helper")
    assert str(err.value) == ("agent 'helper': bad handshake: control_loop 'atlas' (the hub drives one turn at a "
                              "time) needs supports_stepwise; declare control_loop 'self' instead")


def test_the_message_a_hooked_turn_answers_is_never_a_windows_summary_line():
    from turnflow.runtime.agents.hooks import split_turn

    view = [{"sender": "<summary>", "text": "[3 earlier messages not shown; from a, b]"},
            {"sender": "me", "text": "my last word"}]
    msg, history = split_turn(view, "me")
    assert (msg.content, msg.sender_name, msg.format_for_llm()) == ("", "", "")
    assert history == view
    msg, history = split_turn([{"sender": "<task>", "text": "do it"}, *view], "me")
    assert (msg.id, msg.sender_name, msg.sender_type, msg.content) == ("1", "<task>", "User", "do it")
    assert history == view


def test_task_is_text_in_the_handshake_and_the_phases_even_when_the_run_has_none():
    """The stateful-adapter text types `task: str` in `aopen_session` and the phases: a run
    without `--task` hands "" (never None), so `task.strip()` and the like work."""
    seen: list = []

    class Phased:
        async def aopen_session(self, *, task: str, metadata=None, emit_event=None):
            seen.append(("open", task.strip()))
            return {"control_loop": "self", "supports_stepwise": True}

        async def aplan(self, task: str, metadata=None):
            seen.append(("plan", task.strip()))
            return {"steps": 1}

        async def aexecute(self, task, plan, step, metadata=None):
            return {"output": "x"}

        async def asynthesize(self, task, plan, step_results, metadata=None):
            return "answer"

    res, _, _ = session(CHAT, {"asker": Phased(), "helper": ScriptedAgent("helper", [{"say": "ok", "finish": "done"}])})
    assert res.close_reason == "done", res.error
    assert seen == [("open", ""), ("plan", "")]


def test_a_failed_on_started_fails_that_handshake_clearly_and_is_called_again_next_time():
    calls: list = []

    class Flaky(MinimalAdapter):
        async def on_started(self, agent_name, agent_description):
            calls.append("on_started")
            if calls.count("on_started") == 1:
                raise ConnectionError("no network yet")
            await super().on_started(agent_name, agent_description)

    adapter = Flaky(calls)

    async def go():
        hub = await new_hub()
        out = []
        for _ in range(2):
            asker = ScriptedAgent("asker", [{"say": "q"}, {"say": "bye", "finish": "done"}])
            out.append(await run_session(hub, CHAT, {"asker": asker, "helper": adapter}, "t"))
        return out
    first, second = run(go())
    assert first.close_reason == "invite_rejected"
    assert "agent 'helper': handshake failed: ConnectionError: no network yet" in first.error
    assert second.close_reason == "done", second.error
    assert [c if isinstance(c, str) else c[0] for c in calls] == [
        "on_started", "on_cleanup", "on_started", "on_started", "on_message", "on_cleanup"]


def test_an_agent_with_only_aclose_session_has_it_called_when_the_session_ends():
    """protocol.py's contract: `close_session` or `aclose_session`, optional; an agent object
    handed to the runner directly (not through an agents file) with the async spelling only."""
    closed: list = []

    class Helper:
        async def aopen_session(self, **handshake):
            return {"control_loop": "hub", "supports_stepwise": True, "telemetry_stream": False}

        async def on_message(self, msg, tools):
            await tools.send_message("on it")

        async def aclose_session(self, session_id: str) -> None:
            closed.append(session_id)

    asker = ScriptedAgent("asker", [{"say": "a question"}, {"say": "thanks", "finish": "done"}])
    res, _, _ = session(CHAT, {"asker": asker, "helper": Helper()}, "help me")
    assert res.close_reason == "done" and res.error is None
    assert closed == [res.session_id]


def test_a_second_session_opening_while_on_started_runs_waits_for_it():
    """`on_started` is called once per agent object; a second session's handshake that comes
    while it still runs waits for it to finish before the agent takes a turn there (before, it
    went ahead, so `on_message` could run before the agent had started)."""
    import asyncio

    calls: list = []

    class Slow:
        async def on_started(self, agent_name, agent_description):
            calls.append("on_started begins")
            await asyncio.sleep(0.05)
            calls.append("on_started ends")

        async def on_message(self, msg, tools, history, participants_msg, *, is_session_bootstrap, room_id):
            calls.append("on_message")
            await tools.send_message("on it")

    helper = Slow()

    async def go():
        hub = await new_hub()
        asks = [ScriptedAgent("asker", [{"say": "q"}, {"say": "thanks", "finish": "done"}]) for _ in range(2)]
        return await asyncio.gather(*(run_session(hub, CHAT, {"asker": a, "helper": helper}, "t") for a in asks))

    results = run(go())
    assert [r.close_reason for r in results] == ["done", "done"], [r.error for r in results]
    assert calls[:2] == ["on_started begins", "on_started ends"], calls
    assert calls.count("on_started begins") == 1 and calls.count("on_message") == 2, calls
