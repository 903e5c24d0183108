"""Batch runs (`turnflow run --tasks`): task files, one session per task, resume after Ctrl-C and
after kill -9, on SQLite (one process) and on a real PostgreSQL server (tests/pg_server.py)."""

from __future__ import annotations

import json
import signal
import time

import pytest
from batch_helpers import SPEC, TURNS, StoreReader, check_exactly_once, interrupt, start, write_batch
from pg_server import wait_for

from turnflow.cli import main
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.tasks import Task, TaskFileError, parse_tasks, spec_for

ENGINES = ["sqlite", "postgresql"]


@pytest.fixture(params=ENGINES)
def store(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "hub.db")
    return request.getfixturevalue("pg_url")


# -- the task file ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ('{"id": "a"}\n{"id": "b", \n', "t.jsonl:2: not valid JSON"),
    ('{"id": "a"}\n\n{"id": "a"}\n', "t.jsonl:3: duplicate id 'a' (first on line 1)"),
    ('{"id": "a", "prompt": "x"}\n', "t.jsonl:1: unknown key 'prompt'"),
    ('{"id": 7}\n', "t.jsonl:1: `id` must be a non-empty string"),
    ('["a"]\n', "t.jsonl:1: expected an object"),
    ('{"id": "a", "context": [1]}\n', "t.jsonl:1: `context` must be an object"),
    ('{"id": "a", "task": 3}\n', "t.jsonl:1: `task` must be a string"),
    ("\n\n", "t.jsonl: no tasks"),
])
def test_bad_task_lines_are_named_with_their_line(text, message):
    with pytest.raises(TaskFileError) as exc:
        parse_tasks(text, "t.jsonl")
    assert str(exc.value).startswith(message)


def test_a_task_file_saved_with_a_bom_is_read_like_a_flow_file(tmp_path):
    """Before: a tasks file saved as "UTF-8 with BOM" (Windows editors) was refused, 'not valid JSON:
    Unexpected UTF-8 BOM', exit 1, though a .flow or agents file with a BOM is read. Columns keep."""
    tasks = parse_tasks('\ufeff{"id": "a", "task": "x"}\r\n{"id": "b"}\r\n', "t.jsonl")
    assert [(t.id, t.line) for t in tasks] == [("a", 1), ("b", 2)] and tasks[0].task == "x"
    with pytest.raises(TaskFileError) as exc:
        parse_tasks('\ufeff{"id": "a", \n', "t.jsonl")
    assert str(exc.value).startswith("t.jsonl:1: not valid JSON") and "(column 14)" in str(exc.value)  # the BOM counted, as .flow errors count it


def test_a_task_context_is_added_to_the_workflow_context_vars():
    spec = spec_for(SessionSpec.parse(SPEC), Task("x", "t", {"ticket": 7}, 1))
    assert spec.context_vars == spec.to_dict()["knobs"]["context_vars"] == {"mood": "calm", "ticket": 7}
    assert SPEC["knobs"]["context_vars"] == {"mood": "calm"}  # the flow itself is untouched
    with pytest.raises(TaskFileError, match="only a workflow has context variables"):
        spec_for(SessionSpec.parse({"kind": "discussion", "participants": []}), Task("x", None, {"a": 1}, 4))


def test_cli_reports_a_bad_task_file_with_file_and_line(tmp_path, capsys):
    files = write_batch(tmp_path, 2)
    with open(files["tasks"], "a") as fh:
        fh.write('{"id": "t000"}\n')
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", str(tmp_path / "hub.db")])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{files['tasks']}:3: duplicate id 't000' (first on line 1)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "hub.db").exists()  # nothing was started


def test_task_and_tasks_together_is_refused(tmp_path, capsys):
    files = write_batch(tmp_path, 1)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--task", "x"])
    assert rc == 2 and "cannot be combined" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--max-turns", "1"], ["--timeout", "1s"], ["--hub", "ws://127.0.0.1:1"]])
def test_single_run_options_with_tasks_are_refused(tmp_path, capsys, option):
    """Before: `run --tasks T --max-turns 1` (or --timeout, --hub) ran the whole batch ignoring the
    option, exit 0: a cap the user asked for silently not applied, a hub silently not used."""
    files = write_batch(tmp_path, 1)
    store = tmp_path / "hub.db"
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", str(store), *option])
    err = capsys.readouterr().err
    assert rc == 2 and f"{option[0]} and --tasks cannot be combined" in err and "Traceback" not in err
    assert not store.exists()  # refused before anything was started


@pytest.mark.parametrize("option", [["--concurrency", "4"], ["--lease", "5"]])
def test_batch_options_without_tasks_are_refused(tmp_path, capsys, option):
    """Before: `run FLOW --agents A --concurrency 4` ran one session and ignored the option, exit 0."""
    files = write_batch(tmp_path, 1)
    store = tmp_path / "hub.db"
    rc = main(["run", files["flow"], "--agents", files["agents"], "--store", str(store), *option])
    err = capsys.readouterr().err
    assert rc == 2 and f"{option[0]} needs --tasks" in err and "Traceback" not in err
    assert not store.exists()


# -- running and re-running -----------------------------------------------------------------------

def test_every_task_runs_once_and_a_rerun_skips_them(store, tmp_path, capsys):
    files = write_batch(tmp_path, 9, fail=(4,))
    args = ["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store,
            "--concurrency", "3", "--format", "json"]
    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 1  # one task failed
    lines = [json.loads(x) for x in cap.out.splitlines()]
    assert sorted(x["id"] for x in lines) == [f"t{i:03d}" for i in range(9)]
    by_id = {x["id"]: x for x in lines}
    assert by_id["t004"]["status"] == "failed" and by_id["t004"]["close_reason"] == "agent_error"
    assert "b refuses" in by_id["t004"]["error"]
    assert all(x["status"] == "done" and x["close_reason"] == "max_turns" and x["turns"] == TURNS
               for i, x in by_id.items() if i != "t004")
    assert "max_turns" in cap.err and "failures:" in cap.err and "t004" in cap.err  # the summary table
    reader = StoreReader(store)
    before = check_exactly_once(reader, list(by_id))

    rc = main(args)
    cap = capsys.readouterr()
    assert rc == 1
    again = [json.loads(x) for x in cap.out.splitlines()]
    assert all(x["skipped"] for x in again) and len(again) == 9
    assert reader.logs() == before  # nothing ran again


def test_text_summary_table(tmp_path, capsys):
    files = write_batch(tmp_path, 5)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", str(tmp_path / "hub.db")])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.splitlines()[0] == "tasks 5: done 5, failed 0, unfinished 0"
    assert any(line.split() == ["max_turns", "5", str(TURNS), str(TURNS), str(TURNS)] for line in out.splitlines())


def test_quiet_batch_prints_only_the_totals_line(tmp_path, capsys):
    """Before: `run --tasks T --quiet` printed the whole summary table, as without --quiet. Now, as a
    single run's --quiet prints only its final state line: the summary's first line on stdout, and
    each failed task named on stderr (a single run says its error there too); with --format json the
    task lines on stdout are unchanged and the summary on stderr is its first line."""
    files = write_batch(tmp_path, 3, fail=(1,))
    args = ["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--quiet"]
    rc = main([*args, "--store", str(tmp_path / "a.db")])
    cap = capsys.readouterr()
    assert rc == 1
    assert cap.out == "tasks 3: done 2, failed 1, unfinished 0\n"
    [failed] = cap.err.splitlines()
    assert failed.startswith("turnflow run: task t001 failed: agent 'b' failed turn 2 twice: RuntimeError: b refuses")
    rc = main([*args, "--store", str(tmp_path / "b.db"), "--format", "json", "-q"])
    cap = capsys.readouterr()
    assert rc == 1 and sorted(json.loads(x)["id"] for x in cap.out.splitlines()) == ["t000", "t001", "t002"]
    assert cap.err == "tasks 3: done 2, failed 1, unfinished 0\n"


def test_verbose_batch_prints_each_task_s_telemetry(tmp_path, capsys):
    """Before: `run --tasks T --verbose` printed no telemetry (the flag was ignored). Now each record
    is printed on stderr as it is stored, as in a single run, after the id of the task it is for."""
    files = write_batch(tmp_path, 2)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", str(tmp_path / "hub.db"), "--verbose", "--concurrency", "1"])
    cap = capsys.readouterr()
    assert rc == 0 and cap.out.startswith("tasks 2: done 2, failed 0, unfinished 0\n")
    shakes = [line.split(" raw=")[0] for line in cap.err.splitlines() if "handshake" in line]
    assert shakes == [f"task {t}: telemetry {a} handshake" for t in ("t000", "t001") for a in "abc"], cap.err


def test_a_changed_task_under_the_same_id_is_refused(tmp_path, capsys):
    files = write_batch(tmp_path, 2)
    store = str(tmp_path / "hub.db")
    assert main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store]) == 0
    (tmp_path / "tasks.jsonl").write_text('{"id": "t001", "task": "something else"}\n')
    capsys.readouterr()
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store])
    assert rc == 1
    assert "task 't001' (line 1) differs from the task this store holds" in capsys.readouterr().err


def _started(reader: StoreReader, n: int):
    def pred():
        try:
            return len(reader.logs()) >= n
        except Exception:  # the store is still being created
            return False
    return pred


def _mid_session(reader: StoreReader):
    """A session has logged turns but is not closed yet (so killing now interrupts it)."""
    def pred():
        try:
            logs = reader.logs().values()
        except Exception:
            return False
        return any(sum(et in ("text", "packet") for _, et in log) >= 2 and log[-1][1] != "session.closed"
                   for log in logs)
    return pred


def _rerun(capsys, files: dict, store: str, *extra: str):
    """The same command again, in this process (the interrupted or killed run was a real one);
    (exit code, stdout, stderr)."""
    capsys.readouterr()
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store, *extra])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_sigterm_mid_batch_exits_143_like_a_single_run(tmp_path, capsys):
    """Before: SIGTERM mid-batch exited 130, the code of SIGINT; a single `run` exits 143 for it, and
    so do supervisors' expectations (128 + 15). The tasks are given back all the same."""
    files = write_batch(tmp_path, 8)
    store = str(tmp_path / "hub.db")
    reader = StoreReader(store)
    proc = start(files, store, "--concurrency", "3", delay=0.05)
    assert wait_for(_started(reader, 4), timeout=60)
    rc, out, err = interrupt(proc, signal.SIGTERM)
    assert rc == 143, err
    assert "interrupted; run the same command again to resume" in err and "Traceback" not in err
    assert all(t[0] != "running" for t in reader.tasks().values())  # leases were released
    rc, out, err = _rerun(capsys, files, store)
    assert rc == 0, err


def test_resume_after_ctrl_c(store, tmp_path, capsys):
    files = write_batch(tmp_path, 8)
    ids = [f"t{i:03d}" for i in range(8)]
    reader = StoreReader(store)
    # 0.05 s a turn: from the fourth start the batch has ~1.2 s left, which the poll and the signal
    # fit in on a loaded machine (at 0.02 s, ~0.5 s: it once finished every task before the SIGINT)
    proc = start(files, store, "--concurrency", "3", "--format", "json", delay=0.05)
    assert wait_for(_started(reader, 4), timeout=60)
    rc, out, err = interrupt(proc, signal.SIGINT)
    assert rc == 130, err
    assert "interrupted; run the same command again to resume" in err
    tasks = reader.tasks()
    assert all(t[0] != "running" for t in tasks.values())  # leases were released
    finished = {i for i, t in tasks.items() if t[0] in ("done", "failed")}
    assert len(finished) < 8
    logs_before = reader.logs()

    rc, out, err = _rerun(capsys, files, store, "--concurrency", "3", "--format", "json")
    assert rc == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert {x["id"] for x in lines if x["skipped"]} == finished
    assert {x["id"] for x in lines if not x["skipped"]} == set(ids) - finished
    assert any(x["resumed"] for x in lines if not x["skipped"])  # an interrupted session was continued
    logs = check_exactly_once(reader, ids)
    for sid, log in logs_before.items():
        assert logs[sid][:len(log)] == log  # continued, never rewritten
    assert all(len([1 for _, et in log if et in ("text", "packet")]) == TURNS for log in logs.values())


def test_kill_9_then_a_rerun_finishes_every_task_exactly_once(store, tmp_path, capsys):
    files = write_batch(tmp_path, 8)
    ids = [f"t{i:03d}" for i in range(8)]
    reader = StoreReader(store)
    proc = start(files, store, "--concurrency", "4", "--lease", "30", delay=0.02)
    assert wait_for(_started(reader, 4), timeout=60)
    assert wait_for(_mid_session(reader), timeout=60)  # kill while a session is half way through
    proc.kill()
    proc.communicate(timeout=30)
    assert any(t[0] == "running" for t in reader.tasks().values())  # held under a lease when it died
    # the lease is 30 s, but its holder's process is gone from this host: taken over at once
    t0 = time.monotonic()
    rc, out, err = _rerun(capsys, files, store, "--concurrency", "4", "--format", "json")
    assert rc == 0, err
    assert time.monotonic() - t0 < 25
    lines = [json.loads(x) for x in out.splitlines()]
    assert any(x["resumed"] for x in lines)
    check_exactly_once(reader, ids)


def test_inspect_summary_counts(store, tmp_path, capsys):
    files = write_batch(tmp_path, 6, fail=(2,))
    assert main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
                 "--store", store]) == 1
    capsys.readouterr()
    assert main(["inspect", store, "--summary", "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["sessions"] == 6 and s["states"] == {"closed": 6}
    assert s["close_reasons"] == {"agent_error": 1, "max_turns": 5}
    assert s["turns"]["p50"] == TURNS and s["turns"]["max"] == TURNS and s["turns"]["min"] == 1
    assert s["tasks"] == {"pending": 0, "running": 0, "done": 5, "failed": 1}
    assert s["envelopes"] == sum(len(v) for v in StoreReader(store).logs().values())
    assert main(["inspect", store, "--summary"]) == 0
    text = capsys.readouterr().out
    assert "6 sessions" in text and "tasks: pending 0  running 0  done 5  failed 1" in text


def test_inspect_summary_of_a_missing_store(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope.db"), "--summary"]) == 2
    assert "no such store file" in capsys.readouterr().err


def test_summary_counts_unfinished_sessions_by_state(tmp_path):
    import asyncio

    from runtime_helpers import CHAIN

    from turnflow.runtime.envelope import EV_TEXT, Envelope
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.summary import summarize

    async def go():
        hub = await Hub.open(SQLiteStore(str(tmp_path / "h.db")))
        await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})  # invited
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
        await hub.ack(md.session_id, "b")
        await hub.ack(md.session_id, "c")
        for _ in range(3):
            await hub.post(Envelope(md.session_id, hub.expected_next(md.session_id), None, EV_TEXT, {"text": "x"}))
        s = summarize(hub.store)
        await hub.aclose()
        return s

    s = asyncio.run(go())
    assert s["states"] == {"active": 1, "invited": 1} and s["close_reasons"] == {}
    assert s["turns"]["min"] == 0 and s["turns"]["max"] == 3 and s["tasks"] is None


def test_unreachable_postgres_is_one_clear_line(tmp_path, capsys):
    pytest.importorskip("psycopg")
    files = write_batch(tmp_path, 1)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"],
               "--store", "postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=1"])
    err = capsys.readouterr().err
    assert rc == 2  # the store cannot be used: exit 2, as for a single run (docs/cli.md)
    assert "cannot open as a turnflow store" in err and "secret" not in err and "Traceback" not in err



def test_progress_line(capsys):
    from turnflow.cli.commands.run_batch import _ProgressLine
    from turnflow.runtime.batch import Progress

    p = Progress(done=3, failed=1, running=4, posts=80)
    line = _ProgressLine(10, 2)
    line(p)
    err = capsys.readouterr().err
    assert err.startswith("\r\x1b[2Kdone 4/10  running 4  failed 1  turns/s ")
    assert err.endswith("  (skipped 2)")
    line(p)  # redrawn at most 10 times a second
    assert capsys.readouterr().err == ""


def test_a_renewal_racing_a_claim_does_not_drop_the_new_tasks(tmp_path):
    """Regression: a renewal that ran while new tasks were being claimed returned a set without
    them, and the worker cancelled them as 'taken over' — they stayed claimed forever."""
    import asyncio
    import threading

    from turnflow.runtime.agents.function import FunctionAgent
    from turnflow.runtime.batch import BatchWorker
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.task_queue import SQLiteTaskQueue
    from turnflow.runtime.tasks import spec_hash

    class SlowRenewals(SQLiteTaskQueue):
        blocking = True  # off the event loop, so claims go on while a renewal is in flight
        lock = threading.Lock()

        loop = None  # the event loop the hub commits on (set below)

        def _locked(self, fn, *a):
            # the SQLite connection is the hub's too: run the statement on the hub's event-loop thread
            # (as the real SQLite queue does), so it never overlaps a commit; only the answer is late
            loop = self.loop
            if loop is None or not loop.is_running() or loop._thread_id == threading.get_ident():  # type: ignore[attr-defined]
                with self.lock:
                    return fn(*a)

            async def on_loop():
                with self.lock:
                    return fn(*a)
            return asyncio.run_coroutine_threadsafe(on_loop(), loop).result()

        raced = 0  # renewals whose answer came back after a claim that ran meanwhile
        claimed = threading.Event()

        def renew(self, worker, lease):
            racing = SlowRenewals.raced == 0
            if racing:
                self.claimed.clear()
            held = self._locked(super().renew, worker, lease)
            # the answer arrives late: held back until a claim ran after the renewal (the race,
            # made certain for one renewal instead of left to timing; the others answer at once)
            if racing and self.claimed.wait(5):
                SlowRenewals.raced += 1
            return held

        def claim(self, *a):
            got = self._locked(super().claim, *a)
            if got:
                self.claimed.set()
            return got

        def finish(self, *a):
            return self._locked(super().finish, *a)

        def counts(self):
            return self._locked(super().counts)

    async def speak(msg, tools):
        await asyncio.sleep(0.005)  # the agent's work (not a wait for anything): renewals fall during turns
        return "ok"

    store = SQLiteStore(str(tmp_path / "hub.db"))
    q = SlowRenewals(store)
    q.load([Task(f"t{i:02d}", None, {}, i + 1) for i in range(12)], spec_hash(SessionSpec.parse(SPEC)))
    bw = BatchWorker(store, q, SPEC, lambda: {n: FunctionAgent(speak, n) for n in "abc"}, worker="me",
                     concurrency=3, lease=0.3)
    async def go():
        q.loop = asyncio.get_running_loop()
        await asyncio.wait_for(bw.run(), 60)
    asyncio.run(go())
    assert SlowRenewals.raced >= 1
    assert bw.progress.lost == 0
    assert q.counts() == {"pending": 0, "running": 0, "done": 12, "failed": 0}
    store.close()


def test_a_missing_task_file_is_exit_2(tmp_path, capsys):
    files = write_batch(tmp_path, 1)
    rc = main(["run", files["flow"], "--agents", files["agents"], "--tasks", str(tmp_path / "nope.jsonl")])
    assert rc == 2
    assert f"no such file or directory: `{tmp_path / 'nope.jsonl'}`" in capsys.readouterr().err


def test_a_session_acked_by_all_but_not_yet_opened_is_opened_on_hydrate(tmp_path):
    """Found by the Ctrl-C test: interrupted between the last ack and `session.opened`, a session
    stayed invited forever (nobody is left to ack). The next hub completes the open."""
    import asyncio
    import sqlite3

    from runtime_helpers import CHAIN

    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore

    path = str(tmp_path / "h.db")

    async def make():
        hub = await Hub.open(SQLiteStore(path))
        md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN})
        await hub.ack(md.session_id, "b")
        await hub.ack(md.session_id, "c")
        await hub.aclose()
        return md.session_id

    sid = asyncio.run(make())
    db = sqlite3.connect(path)
    db.execute("DELETE FROM envelopes WHERE gseq = (SELECT MAX(gseq) FROM envelopes)")  # the session.opened
    db.commit()
    db.close()
    (tmp_path / "h.db.lock").unlink()  # an interrupted hub never wrote the open, nor counted it in the high-water mark

    async def reopen():
        hub = await Hub.open(SQLiteStore(path))
        info, report = hub.info(sid), hub.report
        await hub.aclose()
        return info, report

    info, report = asyncio.run(reopen())
    assert report.completed_opens == [sid]
    assert info["state"] == "active" and info["expected_next"] == "a"


def test_inspect_summary_writes_nothing_to_a_sqlite_store(tmp_path, capsys):
    files = write_batch(tmp_path, 2)
    store = str(tmp_path / "hub.db")
    assert main(["run", files["flow"], "--agents", files["agents"], "--tasks", files["tasks"], "--store", store]) == 0
    before = open(store, "rb").read()
    capsys.readouterr()
    assert main(["inspect", store, "--summary", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == 2
    assert open(store, "rb").read() == before


def test_a_sqlite_claim_reads_index_ranges_not_the_whole_task_list(tmp_path):
    """As on PostgreSQL: no scan-and-sort of every pending task per claim (quadratic over a long batch)."""
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.task_queue import SQLiteTaskQueue
    from turnflow.runtime.tasks import Task

    store = SQLiteStore(str(tmp_path / "hub.db"))
    q = SQLiteTaskQueue(store)
    q.load([Task(f"t{i:04d}", None, {}, i + 1) for i in range(300)], "h")
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    claims = q.claim("w", 4, 30)
    store.db.set_trace_callback(None)
    [update] = [s for s in statements if s.lstrip().upper().startswith("UPDATE")]
    plan = " | ".join(r[3] for r in store.db.execute("EXPLAIN QUERY PLAN " + update))
    store.close()
    assert [c.id for c in claims] == ["t0000", "t0001", "t0002", "t0003"]
    assert "MULTI-INDEX OR" not in plan and "SCAN turnflow_tasks" not in plan, plan


def test_claims_look_for_dead_workers_at_most_once_a_second(tmp_path, monkeypatch):
    """A worker with few sessions claims after every task; the look for dead workers on this host
    is one query a second, not one per claim."""
    from turnflow.runtime import task_queue
    from turnflow.runtime.store import SQLiteStore
    from turnflow.runtime.task_queue import SQLiteTaskQueue
    from turnflow.runtime.tasks import Task

    store = SQLiteStore(str(tmp_path / "hub.db"))
    q = SQLiteTaskQueue(store)
    q.load([Task(f"t{i}", None, {}, i + 1) for i in range(5)], "h")
    looks: list[str] = []
    store.db.set_trace_callback(lambda sql: looks.append(sql) if "DISTINCT worker" in sql else None)
    clock = [100.0]
    monkeypatch.setattr(task_queue.time, "monotonic", lambda: clock[0])
    for _ in range(3):
        q.claim("w", 1, 30)
    clock[0] += task_queue.DEAD_CHECK_EVERY
    q.claim("w", 1, 30)
    store.db.set_trace_callback(None)
    store.close()
    assert len(looks) == 2
