"""The session-adapter protocol as the contract writes it (docs/contracts.md §1), against the real
hub and runner: an adapter with exactly the contract's methods runs unchanged (the optional
ones take their documented defaults), the built-in adapters answer `on_accepted` with
`next_state` / `auto_close_reason`, `hub.get_session()` records carry `pending_acks`, the
consulting state has `initiator_sent` / `respondent_replied`, and an agents-file entry naming an
adapter class in the contract's shape (`type: python, import_path, attribute`) is accepted."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Optional

from runtime_helpers import new_hub, run
from turnflow.cli import main
from turnflow.runtime.adapters.protocol import AdapterResult
from turnflow.runtime.adapters.conversation import ConversationAdapter
from turnflow.runtime.agents import ScriptedAgent
from turnflow.runtime.envelope import EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.runner import run_session
from turnflow.runtime.session import Participant, SessionMetadata


@dataclass(frozen=True)
class QuizState:
    expected_next_speaker: Optional[str] = None
    asked: int = 0


class QuizAdapter:
    """Written to the contract's protocol and nothing else: manifest, initial_state, fold,
    validate_create, validate_send, on_accepted."""

    manifest = replace(ConversationAdapter.manifest, type="quiz")

    def initial_state(self, metadata: Any) -> QuizState:
        return QuizState(expected_next_speaker=metadata.creator_id)

    def fold(self, envelope: Any, state: QuizState) -> QuizState:
        if envelope.event_type not in (EV_TEXT, EV_PACKET):
            return state
        other = "host" if envelope.sender_id == "guest" else "guest"
        return QuizState(expected_next_speaker=other, asked=state.asked + 1)

    def validate_create(self, metadata: Any) -> None:
        if len(metadata.participants) != 2:
            raise ProtocolError("a quiz has two participants")

    def validate_send(self, metadata: Any, envelope: Any, state: QuizState) -> None:
        if envelope.event_type in (EV_TEXT, EV_PACKET) and envelope.sender_id != state.expected_next_speaker:
            raise ProtocolError(f"not {envelope.sender_id}'s turn")

    def on_accepted(self, metadata: Any, envelope: Any, state: QuizState) -> AdapterResult:
        if state.asked >= 3:
            return AdapterResult(next_state="closed", auto_close_reason="quiz_over")
        return AdapterResult(next_state="active")


QUIZ = {"kind": "quiz", "name": "quiz",
        "participants": [{"agent_id": "host", "role": "participant"}, {"agent_id": "guest", "role": "participant"}]}


def test_an_adapter_with_exactly_the_contracts_methods_runs_unchanged():
    async def go():
        hub = await new_hub()
        hub.adapters[("quiz", 1)] = QuizAdapter()
        agents = {"host": ScriptedAgent("host", [{"say": "2+2?"}, {"say": "right"}]),
                  "guest": ScriptedAgent("guest", [{"say": "4"}])}
        res = await run_session(hub, QUIZ, agents)
        record = await hub.get_session(res.session_id)
        return res, record, hub.view(res.session_id, "guest")
    res, record, view = run(go())
    assert res.error is None and res.close_reason == "quiz_over"
    assert [(t["speaker"], t["body"]) for t in res.turns] == [("host", "2+2?"), ("guest", "4"), ("host", "right")]
    assert record.turn_count == 3  # from the state's own field (the adapter has no turn_count)
    assert [m["text"] for m in view] == ["2+2?", "4", "right"]  # the default view: the full transcript


def test_built_in_adapters_answer_with_the_contracts_names_and_records_carry_pending_acks():
    from turnflow.runtime.adapters.consulting import ConsultingAdapter

    async def go():
        hub = await new_hub()
        md = await hub.open_session("consulting", [{"agent_id": "alice", "role": "initiator"},
                                                   {"agent_id": "bob", "role": "respondent"}], creator_id="alice")
        before = await hub.get_session(md.session_id)
        await hub.ack(md.session_id, "bob")
        after = await hub.get_session(md.session_id)
        return before, after
    before, after = run(go())
    assert before.pending_acks == ("bob",) and before.to_dict()["pending_acks"] == ["bob"]
    assert after.pending_acks == ()
    adapter = ConsultingAdapter()
    md = SessionMetadata(session_id="s", manifest=adapter.manifest, creator_id="alice", knobs={}, created_at=0.0,
                         participants=[Participant("alice", "initiator", 0), Participant("bob", "respondent", 1)])
    state = adapter.initial_state(md)
    assert (state.initiator_sent, state.respondent_replied) == (False, False)
    for who in ("alice", "bob"):
        env = Envelope("s", who, None, EV_TEXT, {"text": "x"})
        state = adapter.fold(env, state)
    assert (state.initiator_sent, state.respondent_replied) == (True, True)
    result = adapter.on_accepted(md, env, state)
    assert (result.next_state, result.auto_close_reason, result.close_reason) == (
        "closed", "consulting_complete", "consulting_complete")


def test_an_agents_file_entry_naming_an_adapter_class_in_the_contracts_shape(tmp_path, capsys, monkeypatch):
    from runtime_helpers import FIXTURES

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "contract_shape_adapters.py").write_text(
        "class StatefulSQLiteAdapter:\n"
        "    async def aopen_session(self, *, task, metadata=None, emit_event=None):\n"
        "        return {'control_loop': 'self', 'supports_stepwise': True, 'telemetry_stream': False}\n"
        "    async def aplan(self, task, metadata=None):\n"
        "        return {'steps': 1}\n"
        "    async def aexecute(self, task, plan, step, metadata=None):\n"
        "        return {'output': 'rows: 3'}\n"
        "    async def asynthesize(self, task, plan, step_results, metadata=None):\n"
        "        return 'Found 3 active projects.'\n")
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n"
                      "  triage: {kind: scripted, steps: [{say: 'to billing', tool: transfer_to_billing}]}\n"
                      "  billing:\n"
                      "    type: python\n"
                      "    behavior: self\n"
                      "    import_path: contract_shape_adapters\n"
                      "    attribute: StatefulSQLiteAdapter\n"
                      "  user: {kind: scripted, steps: [{say: thanks}, {finish: done}]}\n"
                      "  tech: {kind: scripted, steps: [{say: x}]}\n")
    main(["run", str(FIXTURES / "support.json"), "--agents", str(agents), "--task", "projects?",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["body"]) for t in out["turns"]][:2] == [("triage", "to billing"),
                                                                    ("billing", "Found 3 active projects.")]


def test_a_single_shot_adapter_is_asked_once_and_a_second_turn_is_a_clear_error():
    class OneShot:
        async def aopen_session(self, *, task, metadata=None, emit_event=None):
            return {"control_loop": "self", "supports_stepwise": False}

        async def on_message(self, msg, tools):
            await tools.send_message("my one answer")

        async def close_session(self, session_id):
            pass

    async def go():
        hub = await new_hub()
        spec = {"kind": "discussion", "name": "d", "participants": [{"agent_id": "a", "role": "initiator"},
                                                                   {"agent_id": "b", "role": "participant"}]}
        return await run_session(hub, spec, {"a": OneShot(), "b": ScriptedAgent("b", [{"say": "again?"}])})
    res = run(go())
    assert [t["body"] for t in res.turns] == ["my one answer", "again?"]
    assert res.error == ("agent 'a' is single-shot (supports_stepwise: false) and already took its turn; "
                         "the session asked it for another one")


class SilentQuiz(QuizAdapter):
    """`build_round_envelope` with the contract's signature: a reply of "..." is a silent round."""

    def build_round_envelope(self, metadata, sender_id, reply, events, state, hub):
        if reply.body == "...":
            return None
        assert isinstance(state, QuizState) and hub is not None
        return Envelope(metadata.session_id, sender_id, None, EV_TEXT, {"text": reply.body})


def test_build_round_envelope_with_the_contracts_signature_and_a_silent_round_is_skipped_not_retried():
    async def go(host_steps):
        hub = await new_hub()
        hub.adapters[("quiz", 1)] = SilentQuiz()
        agents = {"host": ScriptedAgent("host", host_steps), "guest": ScriptedAgent("guest", [{"say": "4"}])}
        res = await run_session(hub, QUIZ, agents)
        return res, [t for t in hub.store.telemetry(res.session_id) if t["event"] == "error"]
    res, errors = run(go([{"say": "..."}, {"say": "2+2?"}, {"say": "right"}]))
    assert res.error is None and res.close_reason == "quiz_over" and errors == []
    assert [(t["speaker"], t["body"]) for t in res.turns] == [("host", "2+2?"), ("guest", "4"), ("host", "right")]
    res, _ = run(go([{"say": "..."}, {"say": "..."}]))
    assert res.error == "agent 'host' was silent twice in a row and the session expects it again"


class DeafQuiz(QuizAdapter):
    """`extract_turn_input` that acts on nothing but questions (None for anything else)."""

    def extract_turn_input(self, envelope):
        text = envelope.event_data.get("text") or envelope.event_data.get("body") or ""
        return text if text.endswith("?") else None


def test_extract_turn_input_none_means_the_next_speaker_is_not_asked():
    asked = []

    def host(msg, tools):
        asked.append(len(msg))
        return {"say": "2+2?"}

    async def go():
        from turnflow.runtime.agents import FunctionAgent

        hub = await new_hub()
        hub.adapters[("quiz", 1)] = DeafQuiz()
        agents = {"host": FunctionAgent(host, "host"), "guest": ScriptedAgent("guest", [{"say": "4"}])}
        return await run_session(hub, QUIZ, agents)
    res = run(go())
    assert [(t["speaker"], t["body"]) for t in res.turns] == [("host", "2+2?"), ("guest", "4")]
    assert asked == [0]  # "4" is not a question: the host is not asked to answer it
    assert res.error == "the session expects 'host' again, but the adapter's extract_turn_input gives it nothing to answer"
