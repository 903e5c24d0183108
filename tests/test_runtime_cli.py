"""`turnflow run` and `turnflow inspect` (docs/runtime.md), called in-process."""

from __future__ import annotations

import json
from pathlib import Path
import sqlite3

import pytest

from runtime_helpers import FIXTURES
from turnflow.cli import main

SPEC = str(FIXTURES / "support.json")
AGENTS = str(FIXTURES / "support_agents.yaml")
BLOCKS = str(FIXTURES / "blocks.json")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_run_json_contract(tmp_path, capsys):
    db = str(tmp_path / "hub.db")
    assert main(["run", SPEC, "--agents", AGENTS, "--task", "My invoice is wrong", "--store", db,
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"session_id", "state", "close_reason", "turns"}
    assert (out["state"], out["close_reason"]) == ("closed", "resolved")
    assert out["turns"] == [
        {"speaker": "triage", "kind": "handoff", "tool": "transfer_to_billing", "target": None,
         "body": "Billing it is", "set": {}, "delete": []},
        {"speaker": "billing", "kind": "text", "tool": None, "target": None, "body": "Refunded",
         "set": {"resolved": True}, "delete": []},
        {"speaker": "user", "kind": "text", "tool": None, "target": None, "body": "Thanks", "set": {}, "delete": []},
    ]
    from turnflow.runtime.store import SQLiteStore

    store = SQLiteStore(db)
    shakes = [t for t in store.telemetry(out["session_id"]) if t["event"] == "handshake"]
    store.close()
    assert sorted(t["agent_id"] for t in shakes) == ["billing", "tech", "triage", "user"]
    assert shakes[0]["effective"] == {"control_loop": "hub", "supports_stepwise": True, "telemetry_stream": False}
    assert main(["inspect", db, "--format", "json"]) == 0
    got = [{k: v for k, v in g.items() if k not in ("telemetry", "adapter_capabilities", "created_at")}
           for g in json.loads(capsys.readouterr().out)]
    assert got == [{"session_id": out["session_id"], "kind": "workflow", "state": "closed",
                    "close_reason": "resolved", "turn_count": 3, "expected_next": None, "envelope_count": 11,
                    "block": "support", "task_id": None, "last_speaker": "user", "last_speaker_name": "user",
                    "damage": []}]


def test_run_text_and_inspect_text(tmp_path, capsys):
    db = str(tmp_path / "hub.db")
    assert main(["run", SPEC, "--agents", AGENTS, "--store", db]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1:] == ["  1 triage: Billing it is  [handoff via transfer_to_billing]",
                                    "  2 billing: Refunded  [set {\"resolved\": true}]",
                                    "  3 user: Thanks", "closed: resolved"]
    sid = out.split()[1]
    assert main(["inspect", db, "--session", sid]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].split() == [sid, "-", "support", "closed", "resolved", "3", "user"]
    assert "session.closed" in text  # --session: with its envelopes


def test_dynamic_handoff_finish_and_delete(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", """
agents:
  triage:  {kind: scripted, steps: [{say: "to tech", handoff: tech, set: {x: 1}}]}
  tech:    {kind: scripted, steps: [{say: "fixed", delete: [x], finish: "solved"}]}
  billing: {kind: scripted, steps: [{say: "-"}]}
  user:    {kind: scripted, steps: [{say: "-"}]}
""")
    assert main(["run", SPEC, "--agents", agents, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(t["speaker"], t["kind"], t["target"]) for t in out["turns"]] == [("triage", "handoff", "tech"),
                                                                              ("tech", "finish", None)]
    assert out["turns"][1]["delete"] == ["x"] and out["close_reason"] == "solved"


def test_script_running_out_is_an_error(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", """
agents:
  triage:  {kind: scripted, steps: [{say: "hm"}]}
  billing: {kind: scripted, steps: [{say: "-"}]}
  tech:    {kind: scripted, steps: [{say: "-"}]}
  user:    {kind: scripted, steps: [{say: "-"}]}
""")
    # triage says plain text: no rule matches triage -> otherwise terminate "after_work": normal close
    assert main(["run", SPEC, "--agents", agents, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["close_reason"] == "after_work"
    agents = write(tmp_path, "b.yaml", """
agents:
  triage:  {kind: scripted, steps: [{tool: transfer_to_billing}, {tool: transfer_to_billing}]}
  billing: {kind: scripted, steps: [{say: "a"}]}
  tech:    {kind: scripted, steps: [{say: "-"}]}
  user:    {kind: scripted, steps: [{say: "again"}]}
""")
    assert main(["run", SPEC, "--agents", agents, "--format", "json"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)["close_reason"] == "agent_error"
    assert "agent 'billing' failed turn 5 twice: its script ran out after 1 step" in cap.err  # the name once (issue 35)


@pytest.mark.parametrize("text, message", [
    ("agents: [1, 2", "invalid YAML"),
    ("agents:\n  triage: {kind: scripted, steps: []}\n", "`steps` must be a non-empty list"),
    ("agents:\n  triage: {kind: robot}\n", "unknown kind 'robot'"),
    ("agents:\n  triage: {kind: openai}\n", "an openai agent needs `model`"),
    ("agents:\n  triage: {kind: scripted, steps: [{shout: x}]}\n", "unknown step key 'shout'"),
    ("nothing: here\n", "expected a mapping `agents:`"),
])
def test_bad_agents_file_is_a_clear_message(tmp_path, capsys, text, message):
    agents = write(tmp_path, "bad.yaml", text)
    assert main(["run", SPEC, "--agents", agents]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_participant_the_run_never_reaches_needs_no_agent(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", "agents:\n  triage: {kind: scripted, steps: [{say: x}]}\n")
    assert main(["run", SPEC, "--agents", agents]) == 0  # triage routes nowhere: otherwise ends it
    cap = capsys.readouterr()
    assert cap.out.splitlines()[-1] == "closed: after_work"
    assert f"note: {agents} has no agent for user, billing, tech; the session closes agent_error if one of them" \
        in cap.err


def test_a_participant_without_agent_that_gets_the_turn_ends_the_run_saying_so(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", "agents:\n  triage: {kind: scripted, steps: [{say: x, tool: transfer_to_tech}]}\n"
                                       "  billing: {kind: scripted, steps: [{say: y}]}\n"
                                       "  user: {kind: scripted, steps: [{say: z}]}\n")
    assert main(["run", SPEC, "--agents", agents]) == 1
    cap = capsys.readouterr()
    assert cap.out.splitlines()[-1] == "closed: agent_error"
    assert f"agent 'tech' failed turn 2 twice: got the turn but {agents} has no agent for it" in cap.err
    assert "Traceback" not in cap.err


def test_a_batch_needs_no_agent_for_a_participant_it_never_reaches(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", "agents:\n  triage: {kind: scripted, steps: [{say: x}]}\n")
    tasks = write(tmp_path, "t.jsonl", '{"id": "a", "task": "hi"}\n{"id": "b", "task": "ho"}\n')
    assert main(["run", SPEC, "--agents", agents, "--tasks", tasks]) == 0
    assert "has no agent for user, billing, tech" in capsys.readouterr().err


def test_block_selection(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", """
agents:
  asker:  {kind: scripted, steps: [{say: "Is it safe?"}]}
  expert: {kind: scripted, steps: [{say: "Yes."}]}
""")
    assert main(["run", BLOCKS, "--agents", agents]) == 2
    assert "holds 2 blocks (ask, chat); choose one with --block NAME" in capsys.readouterr().err
    assert main(["run", BLOCKS, "--block", "nope", "--agents", agents]) == 2
    assert "has no block `nope` (blocks: ask, chat)" in capsys.readouterr().err
    assert main(["run", BLOCKS, "--block", "ask", "--agents", agents, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["close_reason"] == "consulting_complete" and len(out["turns"]) == 2


def test_conversation_alternates_and_finish_closes(tmp_path, capsys):
    agents = write(tmp_path, "a.yaml", """
agents:
  ann: {kind: scripted, steps: [{say: "hi"}, {say: "bye", finish: "ann_left"}]}
  bob: {kind: scripted, steps: [{say: "hello"}]}
""")
    assert main(["run", BLOCKS, "--block", "chat", "--agents", agents, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [t["speaker"] for t in out["turns"]] == ["ann", "bob", "ann"] and out["close_reason"] == "ann_left"


def test_bad_spec_files(tmp_path, capsys):
    assert main(["run", write(tmp_path, "x.json", "{nope"), "--agents", AGENTS]) == 1
    assert "TF401 error: invalid JSON" in capsys.readouterr().err  # as decompile and migrate say it (issue 35)
    assert main(["run", write(tmp_path, "x.txt", "{}"), "--agents", AGENTS]) == 1
    assert "must be a compiled session spec (.json) or a .flow file" in capsys.readouterr().err
    bad = json.loads(open(SPEC).read())
    bad["knobs"]["graph"]["initial_speaker"] = "nobody"
    assert main(["run", write(tmp_path, "y.json", json.dumps(bad)), "--agents", AGENTS]) == 1
    err = capsys.readouterr().err
    assert "initial_speaker: 'nobody' is not a participant" in err and "Traceback" not in err


def test_participant_without_agent_id_is_a_clear_message(tmp_path, capsys):
    bad = json.loads(open(SPEC).read())
    del bad["participants"][1]["agent_id"]
    assert main(["run", write(tmp_path, "y.json", json.dumps(bad)), "--agents", AGENTS]) == 1
    err = capsys.readouterr().err
    assert "invalid agent id None" in err and "internal error" not in err and "Traceback" not in err

def test_inspect_reports_corruption_and_bad_input(tmp_path, capsys):
    db = str(tmp_path / "hub.db")
    assert main(["run", SPEC, "--agents", AGENTS, "--store", db, "--format", "json"]) == 0
    sid = json.loads(capsys.readouterr().out)["session_id"]
    con = sqlite3.connect(db)
    con.execute("UPDATE envelopes SET record = replace(record, 'Refunded', 'Refunder') WHERE seq = 9")
    con.commit()
    con.close()
    assert main(["inspect", db, "--format", "json"]) == 1
    cap = capsys.readouterr()
    assert json.loads(cap.out)[0]["envelope_count"] == 8
    assert f"corrupt record: session {sid} seq 9: checksum mismatch" in cap.err
    assert main(["inspect", str(tmp_path / "missing.db")]) == 2
    assert "no such store file" in capsys.readouterr().err
    assert main(["inspect", db, "--session", "x'; --"]) == 2
    assert "invalid session id" in capsys.readouterr().err
    assert main(["inspect", db, "--session", "f" * 32]) == 2
    assert "no session" in capsys.readouterr().err


def test_run_a_flow_file_compiles_it_first(tmp_path, capsys):
    """The README's promise: `turnflow run examples/support.flow --agents ...` runs the flow itself."""
    example = Path(__file__).parent.parent / "examples" / "support.flow"
    assert main(["run", str(example), "--agents", AGENTS, "--task", "I was charged twice",
                 "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["close_reason"] == "resolved"
    assert [(t["speaker"], t["kind"], t["tool"]) for t in result["turns"]] == [
        ("triage", "handoff", "transfer_to_billing"), ("billing", "text", None), ("user", "text", None)]


def test_run_a_flow_file_with_errors_is_not_run(tmp_path, capsys):
    flow = write(tmp_path, "x.flow", "workflow w {\n  participant a\n  participant b\n}\n")
    assert main(["run", flow, "--agents", AGENTS]) == 1
    err = capsys.readouterr().err
    assert "TF103" in err and "Traceback" not in err


def test_inspect_names_the_agents_a_served_hub_registered(tmp_path, capsys):
    """On a served hub's store the speakers are agent ids (AG2's are 32 hex digits); inspect shows
    the name each registered under (the registry beside the store, STORE.agents)."""
    from turnflow.serve.registry import SQLiteBackend

    agents = write(tmp_path, "a.yaml", "agents:\n  triage: {kind: scripted, steps: [{say: x}]}\n")
    db = str(tmp_path / "hub.db")
    assert main(["run", SPEC, "--agents", agents, "--store", db]) == 0
    capsys.readouterr()
    assert main(["inspect", db]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("  triage")  # no registry: the id
    backend = SQLiteBackend(db + ".agents")
    backend.insert(("triage", "Triage Desk", "{}", "{}", "{}", None))
    backend.close()
    assert main(["inspect", db]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("  Triage Desk")
    assert main(["inspect", db, "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["last_speaker"], row["last_speaker_name"]) == ("triage", "Triage Desk")


@pytest.mark.parametrize("extra", [[], ["--events"], ["--summary"]])
def test_inspect_of_a_folder_says_it_is_a_folder(tmp_path, capsys, extra):
    """A folder given as STORE exists: saying "no such store file" sent users looking for a typo."""
    folder = tmp_path / "runs"
    folder.mkdir()
    assert main(["inspect", str(folder), *extra]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: is a folder, not a store file" in err and "no such store file" not in err


@pytest.mark.parametrize("batch", [False, True])
def test_run_with_a_store_in_a_missing_folder_names_the_folder(tmp_path, capsys, batch):
    """Before: "cannot create the lock file .../x.db.lock: No such file or directory", about a file
    the user never named. Now the missing folder is named, and nothing is created."""
    store = tmp_path / "nodir" / "x.db"
    args = ["run", SPEC, "--agents", AGENTS, "--store", str(store)]
    if batch:
        tasks = tmp_path / "t.jsonl"
        tasks.write_text('{"id": "t1", "task": "a"}\n')
        args += ["--tasks", str(tasks)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{store}: no such folder {tmp_path / 'nodir'}" in err and "lock file" not in err
    assert not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("batch", [False, True])
def test_an_empty_store_path_is_refused_not_a_temporary_store(tmp_path, capsys, batch):
    """Before: `--store ''` (an unset shell variable: `--store "$STORE"`) ran on a temporary store and
    removed it at the end, exit 0: the session the user asked to keep was gone."""
    args = ["run", SPEC, "--agents", AGENTS, "--store", ""]
    if batch:
        tasks = tmp_path / "t.jsonl"
        tasks.write_text('{"id": "t1", "task": "a"}\n')
        args += ["--tasks", str(tasks)]
    with pytest.raises(SystemExit) as exc:  # a usage error, as argparse reports one
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --store: expected a SQLite file path or a postgresql:// URL, got ''" in err
