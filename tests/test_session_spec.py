"""`SessionSpec`: the run-time session spec, parsed once at the boundary (issue 29)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turnflow.cli import main
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session_spec import SessionSpec, SpecProblem

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.flow"))


@functools.lru_cache(maxsize=None)
def _compile_output(path: Path) -> str:
    """What `turnflow compile PATH` prints, run in this process (the tests here are about
    SessionSpec, not about the command's process; a child each cost ~0.2 s of start-up)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["compile", str(path)])
    assert code == 0, out.getvalue()[-2000:]
    return out.getvalue()


def compiled(path: Path) -> list[dict]:
    out = json.loads(_compile_output(path))  # a fresh copy for every caller
    return out if isinstance(out, list) else [out]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_to_dict_gives_back_every_compiled_example_byte_for_byte(path):
    specs = compiled(path)
    assert specs
    for obj in specs:
        text = json.dumps(obj, sort_keys=True)
        spec = SessionSpec.parse(json.loads(text))
        assert json.dumps(spec.to_dict(), sort_keys=True) == text
        assert json.dumps(spec.to_dict()) == json.dumps(obj)  # key order too
        assert spec.kind == obj["kind"] and spec.name == obj["name"]
        assert spec.participant_ids == [p["agent_id"] for p in obj["participants"]]
        if spec.kind == "workflow":
            assert spec.graph is not None and spec.graph is spec.graph  # read once, cached
            assert spec.opener in spec.participant_ids


def test_parse_is_idempotent_and_to_dict_is_a_copy():
    obj = compiled(ROOT / "examples" / "support.flow")[0]
    spec = SessionSpec.parse(obj)
    assert SessionSpec.parse(spec) is spec
    out = spec.to_dict()
    out["participants"].clear()
    assert spec.to_dict()["participants"] and len(spec.participants) == len(obj["participants"])


def test_replace_applies_the_run_overrides_and_leaves_the_original():
    obj = compiled(ROOT / "examples" / "support.flow")[0]
    spec = SessionSpec.parse(obj)
    assert spec.replace() is spec
    other = spec.replace(max_turns=3, ttl_seconds=7, context_vars={"tier": "gold"})
    assert other.ttl_seconds == 7 and other.graph is not None and other.graph.max_turns == 3
    assert other.context_vars == {**spec.context_vars, "tier": "gold"}
    assert spec.to_dict() == obj and spec.graph is not None and spec.graph.max_turns == obj["knobs"]["graph"]["max_turns"]
    d = other.to_dict()
    assert d["knobs"]["graph"]["max_turns"] == 3 and d["ttl_seconds"] == 7
    conv = SessionSpec.parse({"kind": "conversation", "participants": [{"agent_id": "a"}, {"agent_id": "b"}]})
    assert conv.replace(max_turns=3).to_dict() == conv.to_dict()  # only a workflow graph has max_turns


def test_opener_is_the_initiator_then_the_start_speaker_then_the_first():
    parts = [{"agent_id": "a", "role": "participant"}, {"agent_id": "b", "role": "participant"}]
    graph = {"initial_speaker": "b", "transitions": []}
    assert SessionSpec.parse({"kind": "workflow", "participants": parts, "knobs": {"graph": graph}}).opener == "b"
    assert SessionSpec.parse({"kind": "discussion", "participants": parts}).opener == "a"
    parts[1]["role"] = "initiator"
    assert SessionSpec.parse({"kind": "discussion", "participants": parts}).opener == "b"
    assert SessionSpec.parse({"kind": "discussion", "participants": []}).opener is None


@pytest.mark.parametrize("obj, message, path", [
    ([], "a session spec must be an object, got list", "$"),
    ({"participants": []}, "session spec is missing 'kind'", "$"),
    ({"kind": "workflow"}, "session spec is missing 'participants'", "$"),
    ({"kind": "workflow", "participants": ["a"]}, "`participants` must be a list of objects", "$.participants"),
    ({"kind": 3, "participants": []}, "session kind must be a string, got int", "$.kind"),
    ({"kind": "discussion", "participants": [{"agent_id": "a"}, {}]}, "invalid agent id None",
     "$.participants[1].agent_id"),
    ({"kind": "discussion", "participants": [{"agent_id": "a", "order": "1"}]},
     "participant order must be an integer, got str", "$.participants[0].order"),
    ({"kind": "discussion", "participants": [{"agent_id": "a", "role": 1}]},
     "participant role must be a string, got int", "$.participants[0].role"),
    ({"kind": "discussion", "participants": [{"agent_id": "a", "tools": "t"}]},
     "participant tools must be a list of tool names", "$.participants[0].tools"),
    ({"kind": "discussion", "participants": [], "name": "../x"}, "invalid session name", "$.name"),
    ({"kind": "discussion", "participants": [], "tools": {"x": 1}}, "tools must be a list, got dict", "$.tools"),
    ({"kind": "discussion", "participants": [], "ttl_seconds": 0}, "ttl_seconds must be a positive number",
     "$.ttl_seconds"),
    ({"kind": "discussion", "participants": [], "ttl_seconds": True}, "ttl_seconds must be a positive number",
     "$.ttl_seconds"),
    ({"kind": "discussion", "participants": [], "expectations": {"x": 1}}, "expectations must be a list, got dict",
     "$.expectations"),
    ({"kind": "discussion", "participants": [], "expectations": [{"name": "soon"}]}, "unknown expectation 'soon'",
     "$.expectations[0]"),
])
def test_a_bad_spec_is_a_protocol_error_with_a_json_path(obj, message, path):
    with pytest.raises(ProtocolError, match=message.replace("(", r"\(").replace("[", r"\[")) as info:
        SessionSpec.parse(obj)
    assert isinstance(info.value, SpecProblem) and info.value.path == path


def test_of_takes_the_wire_form():
    spec = SessionSpec.of("conversation", ["a", {"agent_id": "b", "role": "respondent"}], ttl_seconds=5)
    assert [(p.agent_id, p.role, p.order) for p in spec.participants] == [("a", "participant", 0),
                                                                          ("b", "respondent", 1)]
    again = SessionSpec.parse(spec.to_dict())
    assert again.participants == spec.participants and again.ttl_seconds == 5 and again.knobs == {}


def test_parsing_a_non_workflow_spec_loads_no_pydantic():
    code = ("import sys\nfrom turnflow.runtime.session_spec import SessionSpec\n"
            "s = SessionSpec.parse({'kind': 'discussion', 'participants': [{'agent_id': 'a'}, {'agent_id': 'b'}]})\n"
            "assert s.graph is None and s.opener == 'a'\n"
            "print('pydantic' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_a_run_reads_its_workflow_graph_once(monkeypatch):
    """The opener, the workflow adapter's compiled graph and every agent's context share one reading."""
    import asyncio

    sys.path.insert(0, str(Path(__file__).parent))
    from runtime_helpers import FakeClock

    from turnflow.runtime.agents import ScriptedAgent
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.runner import run_session
    from turnflow.runtime.store import SQLiteStore
    from turnflow.spec import TransitionGraph

    loads = TransitionGraph.loads.__func__
    calls = []

    def counting(cls, *a, **kw):
        calls.append(a)
        return loads(cls, *a, **kw)

    monkeypatch.setattr(TransitionGraph, "loads", classmethod(counting))
    graph = {"initial_speaker": "a", "transitions": [], "max_turns": 7919,  # a graph no other test compiled
             "default_target": {"name": "round_robin", "args": {}}}
    spec = {"kind": "workflow", "name": "once", "participants": [{"agent_id": "a"}, {"agent_id": "b"}],
            "knobs": {"graph": graph}, "expectations": [], "ttl_seconds": None, "tools": []}
    agents = {n: ScriptedAgent(n, [{"say": "hi"}, {"say": "done", "finish": "done"}]) for n in "ab"}

    async def go():
        hub = await Hub.open(SQLiteStore(":memory:"), clock=FakeClock())
        try:
            return await run_session(hub, spec, agents)
        finally:
            await hub.aclose()

    result = asyncio.run(go())
    assert result.state == "closed" and len(result.turns) >= 2
    assert len(calls) == 1
