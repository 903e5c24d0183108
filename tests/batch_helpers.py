"""Shared pieces of the batch-run tests: a 3-agent chain workflow closing at `max_turns`, function
agents (slowed down by TF_DELAY seconds a turn, failing on tasks that say "fail"), task files,
and readers that check a store's logs the way a user would (every task one closed session,
every log contiguous)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Optional

TURNS = 12

SPEC = {"kind": "workflow", "name": "chain",
        "participants": [{"agent_id": a, "role": "participant"} for a in "abc"],
        "knobs": {"context_vars": {"mood": "calm"}, "graph": {
            "initial_speaker": "a",
            "transitions": [
                {"when": {"name": "from_speaker", "args": {"agent_id": x}},
                 "then": {"name": "agent", "args": {"agent_id": y}}, "priority": 0}
                for x, y in (("a", "b"), ("b", "c"), ("c", "a"))],
            "default_target": {"name": "terminate", "args": {"reason": "after_work"}},
            "max_turns": TURNS}}}

AGENTS_PY = '''
import os, time
DELAY = float(os.environ.get("TF_DELAY", "0"))

def speak(msg, tools):
    if DELAY:
        time.sleep(DELAY)
    first = msg[0]["text"] if msg else ""
    if "fail" in first and tools.agent_id == "b":
        raise RuntimeError("b refuses")
    return f"{tools.agent_id} says {len(msg)}"
'''


def write_batch(tmp: Path, n: int, fail: tuple = ()) -> dict:
    (tmp / "flow.json").write_text(json.dumps(SPEC))
    (tmp / "tf_batch_agents.py").write_text(AGENTS_PY)
    (tmp / "agents.yaml").write_text("agents:\n" + "".join(
        f'  {a}: {{kind: python, ref: "tf_batch_agents:speak"}}\n' for a in "abc"))
    lines = [json.dumps({"id": f"t{i:03d}", "task": "please fail" if i in fail else f"task {i}"}) for i in range(n)]
    (tmp / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    return {"flow": str(tmp / "flow.json"), "agents": str(tmp / "agents.yaml"), "tasks": str(tmp / "tasks.jsonl")}


def cli(files: dict, store: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "turnflow", "run", files["flow"], "--agents", files["agents"],
            "--tasks", files["tasks"], "--store", store, *extra]


def start(files: dict, store: str, *extra: str, delay: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "TF_DELAY": str(delay)}
    return subprocess.Popen(cli(files, store, *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def run_to_end(files: dict, store: str, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cli(files, store, *extra), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TF_DELAY": "0"})


def interrupt(proc: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = 60) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


class StoreReader:
    """Raw reads of a store's tables (SQLite file or PostgreSQL URL), for the assertions."""

    def __init__(self, store: str) -> None:
        self.pg = store.startswith("postgresql://")
        self.store = store

    def query(self, sql_sqlite: str, sql_pg: Optional[str] = None, params: tuple = ()) -> list[tuple]:
        if self.pg:
            import psycopg

            with psycopg.connect(self.store) as conn:
                return conn.execute(sql_pg or sql_sqlite, params).fetchall()
        import sqlite3

        db = sqlite3.connect(self.store)
        try:
            return db.execute(sql_sqlite, params).fetchall()
        finally:
            db.close()

    def tasks(self) -> dict[str, tuple]:
        return {r[0]: r[1:] for r in self.query("SELECT id, state, session_id, attempts, result FROM turnflow_tasks")}

    def sessions_by_task(self) -> dict[str, list[str]]:
        rows = self.query("SELECT json_extract(record, '$.labels.task_id'), session_id FROM sessions",
                          "SELECT task_id, session_id FROM turnflow_sessions")
        out: dict[str, list[str]] = {}
        for tid, sid in rows:
            out.setdefault(tid, []).append(sid)
        return out

    def logs(self) -> dict[str, list[tuple[int, str]]]:
        """Every session's (seq, event_type) list, in append order."""
        rows = self.query("SELECT session_id, seq, json_extract(record, '$.event_type') FROM envelopes ORDER BY gseq",
                          "SELECT session_id, seq, event_type FROM turnflow_envelopes ORDER BY n")
        out: dict[str, list[tuple[int, str]]] = {}
        for sid, seq, et in rows:
            out.setdefault(sid, []).append((seq, et))
        return out

    def envelope_ids(self) -> list[str]:
        return [r[0] for r in self.query("SELECT json_extract(record, '$.envelope_id') FROM envelopes",
                                         "SELECT (record::jsonb) ->> 'envelope_id' FROM turnflow_envelopes")]


def check_exactly_once(reader: StoreReader, ids: list[str]) -> dict[str, list[tuple[int, str]]]:
    """Every task finished with exactly one session, closed once; every log contiguous from 1."""
    tasks = reader.tasks()
    by_task = reader.sessions_by_task()
    logs = reader.logs()
    assert sorted(tasks) == sorted(ids)
    for tid in ids:
        state, sid, _, result = tasks[tid]
        assert state in ("done", "failed"), (tid, state)
        assert by_task.get(tid) == [json.loads(result)["session_id"]], (tid, by_task.get(tid))
        log = logs[by_task[tid][0]]
        assert [s for s, _ in log] == list(range(1, len(log) + 1)), (tid, log)
        terminal = [et for _, et in log if et in ("session.closed", "session.expired")]
        assert terminal == ["session.closed"] and log[-1][1] == "session.closed", (tid, log[-3:])
    env_ids = reader.envelope_ids()
    assert len(env_ids) == len(set(env_ids))
    return logs


def here(capsys, *args: str) -> subprocess.CompletedProcess:
    """`turnflow ARGS` run in this process through `turnflow.cli.main` (stdout and stderr taken
    with pytest's capsys), as a CompletedProcess: for the tests about what a command does, not
    about its process; each file keeps the same command as a real process too."""
    from turnflow.cli import main

    from cli_here import logged_to

    capsys.readouterr()
    with logged_to(sys.stderr):
        code = main(list(args))
    cap = capsys.readouterr()
    return subprocess.CompletedProcess(["turnflow", *args], code, cap.out, cap.err)


def run_here(capsys, files: dict, store: str, *extra: str) -> subprocess.CompletedProcess:
    """`run_to_end` in this process (TF_DELAY as it is here: unset, no delay)."""
    return here(capsys, *cli(files, store, *extra)[3:])
