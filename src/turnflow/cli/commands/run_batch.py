"""`turnflow run FLOW --agents AGENTS.yaml --tasks TASKS.jsonl [--concurrency N] [--lease S]
[--store STORE] [--durability process|full] [--format text|json] [--quiet] [--verbose]`: one session per task, up to N
at a time (docs/scale.md). `--quiet` shortens the summary to its first line (the totals; in text format each
failed task is named on stderr), `--verbose` prints every telemetry record on stderr as it is stored, after its
task's id: what the two flags do for a single run, per task.

Re-running the same command on the same store resumes: finished tasks are skipped, interrupted
ones are continued from their logged sessions. Several such processes pointed at one
PostgreSQL store share the task list. Exit 0 when every task finished normally; 1 when a task
failed or is unfinished, or on bad input (one clear line naming file and line); 2 when a file
cannot be read or the store cannot be used (not a turnflow store, in use, unreachable); 130 (Ctrl-C)
or 143 (SIGTERM) when interrupted (leases are released, re-run to resume).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from turnflow.cli.run_inputs import (AgentsFile, RunInputError, check_agents, load_agents_file, load_specs, parse_spec,
                                     pick, read_input, refuse_names_the_hub_cannot_run)
from turnflow.cli.util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_file, err, out, positive_int, positive_seconds
from turnflow.term import visible

if TYPE_CHECKING:
    from turnflow.runtime.batch import BatchWorker
    from turnflow.runtime.task_queue import TaskQueue
    from turnflow.runtime.session_spec import SessionSpec

EXIT_ERROR = EXIT_FINDINGS
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C)
EXIT_TERMINATED = 143  # SIGTERM
MAX_FAILURES_SHOWN = 20


def add_arguments(p) -> None:
    p.add_argument("--tasks", metavar="TASKS.jsonl", type=a_file,
                   help="run one session per line ({\"id\", \"task\", \"context\"}); resumable with --store")
    p.add_argument("--concurrency", type=positive_int, metavar="N",  # None: not given (default 8)
                   help="with --tasks: sessions at a time in this process (default 8)")
    p.add_argument("--lease", type=positive_seconds, metavar="SECONDS",  # None: not given (default 30)
                   help="with --tasks: how long a claimed task stays this worker's without renewal (default 30)")


DEFAULT_CONCURRENCY = 8
DEFAULT_LEASE = 30.0


def refuse_batch_options(args) -> bool:
    """A single run (no --tasks) given --concurrency or --lease: said on stderr, True (exit 2)."""
    for dest, flag in (("concurrency", "--concurrency"), ("lease", "--lease")):
        if getattr(args, dest, None) is not None:
            err(f"turnflow run: {flag} needs --tasks (it applies to a batch of tasks, not to one session)")
            return True
    return False


def agent_factory(spec: "SessionSpec", file: AgentsFile) -> Callable[[], dict]:
    """The agents file checked once against the spec; a fresh set of agents for every task (a
    scripted agent's script starts over in each session), with stand-ins for the participants
    the file gives no agent."""
    from turnflow.runtime.agents.absent import absent_note, with_absent
    from turnflow.runtime.agents.config import build_agent

    path, participants, agents = file.path, list(spec.participant_ids), file.agents
    extra = sorted(set(agents) - set(participants))
    if extra:
        raise RunInputError(f"{path}: names {', '.join(extra)}, not a participant ({', '.join(participants)})")
    check_agents(spec, file)
    base_dir = os.path.dirname(os.path.abspath(path))
    first = [agents]
    missing = with_absent(participants, agents, path)[1]
    if missing:
        err(f"turnflow run: {absent_note(missing, path)}")

    def make() -> dict:
        if first:
            return with_absent(participants, first.pop(), path)[0]
        built = {str(n): build_agent(str(n), c, base_dir) for n, c in file.confs.items()}
        return with_absent(participants, built, path)[0]

    return make


def run_batch(args) -> int:
    from turnflow.runtime.tasks import TaskFileError, check_tasks, read_tasks

    if args.task is not None:
        err("turnflow run: --task and --tasks cannot be combined (put each task in the task file)")
        return EXIT_USAGE
    # options of a single run the batch worker does not apply: refused, never silently ignored
    for dest, flag, hint in (("max_turns", "--max-turns", "set max_turns in the flow"),
                             ("timeout", "--timeout", "set the flow's ttl"),
                             ("hub", "--hub", "a batch runs on its own hub, in --store"),
                             ("hub_keys", "--hub-keys", "a batch runs on its own hub, in --store")):
        if getattr(args, dest, None) is not None:
            err(f"turnflow run: {flag} and --tasks cannot be combined ({hint})")
            return EXIT_USAGE
    try:
        text = read_input(args.file)
        picked = pick(load_specs(args.file, text), args.block, args.file)
        refuse_names_the_hub_cannot_run(args.file, text, [picked.get("name")])
        spec = parse_spec(picked, args.file)
        make_agents = agent_factory(spec, load_agents_file(args.agents))
        tasks = read_tasks(args.tasks)
        check_tasks(spec, tasks)
    except RunInputError as exc:
        err(f"turnflow run: {exc}")
        return int(getattr(exc, "status", EXIT_ERROR))
    except TaskFileError as exc:
        err(f"turnflow run: {exc}")
        return EXIT_USAGE if exc.unreadable else EXIT_ERROR
    if args.store:
        return _run(args, spec, make_agents, tasks, args.store)
    import tempfile  # only a run without --store needs it

    with tempfile.TemporaryDirectory(prefix="turnflow-batch-") as tmp:
        return _run(args, spec, make_agents, tasks, os.path.join(tmp, "hub.db"))


def _finished_before(queue: "TaskQueue", ids: list[str], as_json: bool, where: str) -> list[str]:
    """The tasks this store finished in an earlier run (printed as skipped with --format json)."""
    from turnflow.runtime.batch import retrying

    before = retrying(queue.results, ids, where=where)  # a server restarting right now is waited for
    finished = [i for i in ids if before.get(i, ("pending",))[0] in ("done", "failed")]
    if as_json:
        for i in finished:
            rec = before[i][1] or {"id": i, "status": before[i][0]}
            out(json.dumps({**rec, "skipped": True}, sort_keys=True) + "\n")
    return finished


def _work(bw: "BatchWorker") -> int:
    """Run the batch worker until the task list is done; 0, or the exit status of the signal that
    interrupted it: 130 (Ctrl-C, SIGINT) or 143 (SIGTERM), as a single `run` exits."""
    import asyncio
    import signal

    terminated: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()

        def on_sigterm() -> None:
            terminated.append(signal.SIGTERM)
            me.cancel()  # type: ignore[union-attr]

        try:
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
            pass
        await bw.run()

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    return 0


def _load(queue: "TaskQueue", tasks: list, spec: "SessionSpec", task_file: str, store_path: str) -> Optional[int]:
    """Adds the task list to the store: None, or the exit status of a refusal (a task changed
    under its id: 1; the database away: 2; a full disk raises `StoreFailed`, exit 2 too)."""
    from turnflow.runtime.batch import is_transient, retrying
    from turnflow.runtime.errors import RuntimeErrorBase, StoreFailed
    from turnflow.runtime.tasks import spec_hash

    try:
        retrying(queue.load, tasks, spec_hash(spec), where=store_path)  # a server restarting right now is waited for
    except StoreFailed:
        raise
    except RuntimeErrorBase as exc:
        err(f"turnflow run: {task_file}: {exc}")
        return EXIT_ERROR
    except Exception as exc:
        if not is_transient(exc):
            raise
        err(f"turnflow run: {store_path}: cannot load the task list: {str(exc).splitlines()[0]}")
        return EXIT_USAGE
    return None


def _report(args, report: str, ids: list, final: dict) -> None:
    """The batch's summary: on stdout in text, on stderr beside the JSON lines; with --quiet, as a
    single run's --quiet, its outcome line alone (each failed task's error on stderr in text: the
    JSON lines hold them)."""
    as_json = args.format == "json"
    if args.quiet:
        report = report.split("\n", 1)[0] + "\n"
        if not as_json:
            for i, e in _failures(ids, final)[:MAX_FAILURES_SHOWN]:
                err(f"turnflow run: task {i} failed: {e}")
    if as_json:
        err(report)
    else:
        out(visible(report))  # task ids and agents' failures are foreign text


def _run(args, spec: "SessionSpec", make_agents: Callable[[], dict], tasks: list, store_value: str) -> int:
    from turnflow.runtime.batch import BatchWorker, TaskOutcome, retrying
    from turnflow.runtime.errors import RuntimeErrorBase, StoreDamaged, StoreError, StoreFailed
    from turnflow.runtime.store import open_store
    from turnflow.runtime.task_queue import new_worker_id, task_queue_for

    worker_id = new_worker_id()
    try:
        store = open_store(store_value, worker=worker_id, durability=args.durability)
    except StoreError as exc:  # not a turnflow store, in use, unreachable: exit 2, as for a single run
        err(f"turnflow run: {exc}")
        return EXIT_USAGE
    except RuntimeErrorBase as exc:
        err(f"turnflow run: {exc}")
        return EXIT_ERROR
    as_json = args.format == "json"
    ids = [t.id for t in tasks]
    queue: "Optional[TaskQueue]" = None
    try:
        queue = task_queue_for(store)
        refused = _load(queue, tasks, spec, args.tasks, store.path)
        if refused is not None:
            return refused
        finished_before = _finished_before(queue, ids, as_json, store.path)
        progress = _ProgressLine(len(ids), len(finished_before)) if sys.stderr.isatty() else None

        def on_result(o: TaskOutcome) -> None:
            if as_json:
                out(json.dumps({**o.to_json(), "skipped": False}, sort_keys=True) + "\n")
                sys.stdout.flush()

        bw = BatchWorker(store, queue, spec, make_agents, worker=worker_id, concurrency=args.concurrency or DEFAULT_CONCURRENCY,
                         lease=args.lease or DEFAULT_LEASE, on_result=on_result, on_progress=progress)
        if args.verbose:
            bw.hub.subscribe_telemetry(_telemetry_printer(bw))
        started = time.monotonic()
        problem: Optional[RuntimeErrorBase] = None
        interrupted = 0  # or the exit status of the signal that stopped the batch (130, 143)
        try:
            interrupted = _work(bw)
        except RuntimeErrorBase as exc:
            problem = exc
        if progress is not None:
            progress.end()
        if problem is not None:
            return _stopped_by(problem)
        elapsed = time.monotonic() - started
        final = retrying(queue.results, ids, where=store.path)  # a server restarting now is waited for
        failures = store.batch_failures
        if failures:
            err(f"turnflow run: note: {len(failures)} group commit(s) failed as a whole and were retried item "
                f"by item (first: {failures[0]})")
    except StoreFailed as exc:  # a full disk, a database away too long: the store's failure, not the tasks'
        err(f"turnflow run: {exc}")
        if not isinstance(exc, StoreDamaged):
            err("turnflow run: no task was recorded failed for it; run the same command again to continue")
        return EXIT_USAGE
    finally:
        if queue is not None:  # PostgreSQL: the connection that listens for finished tasks
            queue.close()
        store.close()
    _report(args, summary(ids, final, len(finished_before), bw.outcomes, bw.progress.posts, elapsed, bool(interrupted)),
            ids, final)
    if interrupted:
        err("turnflow run: interrupted; run the same command again to resume")
        return interrupted
    ok = all(final.get(i, ("pending",))[0] == "done" for i in ids)
    return EXIT_OK if ok else EXIT_ERROR


def _stopped_by(problem: Exception) -> int:
    """The exit status of a batch the worker stopped for `problem` (a `StoreFailed` is raised on,
    to be reported with the store's other failures)."""
    from turnflow.runtime.errors import EndpointUnavailable, StoreFailed

    if isinstance(problem, StoreFailed):
        raise problem
    err(f"turnflow run: {problem}")
    if isinstance(problem, EndpointUnavailable):  # an outage, not the tasks' failure: exit 2, as for the store
        err("turnflow run: no task was recorded failed for it; run the same command again to continue")
        return EXIT_USAGE
    return EXIT_ERROR


def _telemetry_printer(bw: "BatchWorker") -> Callable[[str, dict], None]:
    """`--verbose`: each telemetry record on stderr as it is stored, as a single run prints it,
    after the id of the task whose session it belongs to."""
    from turnflow.cli.commands.inspect import render_telemetry

    def print_record(session_id: str, record: dict) -> None:
        live = bw.hub.sessions.get(session_id)
        task = (live.metadata.labels or {}).get("task_id") if live is not None else None
        who = f"task {task}" if task is not None else f"session {session_id}"
        err(f"{who}: {render_telemetry(record).strip()}")

    return print_record


def _failures(ids: list[str], final: dict) -> list[tuple[str, str]]:
    """(task id, what went wrong) of every failed task, in the task file's order."""
    failures = []
    for i in ids:
        state, rec = final.get(i, ("pending", None))
        if state == "failed":
            rec = rec or {}
            failures.append((i, rec.get("error") or f"{rec.get('state')}: {rec.get('close_reason')}"))
    return failures


class _ProgressLine:
    """`done 12/1000  running 8  failed 1  turns/s 345.2` on stderr, redrawn at most 10 times a second."""

    def __init__(self, total: int, skipped: int) -> None:
        self.total = total
        self.skipped = skipped
        self.last = 0.0

    def __call__(self, p: Any) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        line = p.line(self.total)
        if self.skipped:
            line += f"  (skipped {self.skipped})"
        sys.stderr.write("\r\x1b[2K" + line)
        sys.stderr.flush()

    def end(self) -> None:
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


def _pct(values: list[int], q: float) -> int:
    if not values:
        return 0
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def summary(ids: list[str], final: dict, skipped: int, mine: list, posts: int, elapsed: float,
            interrupted: bool) -> str:
    """The table printed at the end: every task of the file, from the results the store holds."""
    states = {s: 0 for s in ("done", "failed", "running", "pending")}
    by_reason: dict[str, list[int]] = {}
    failures = _failures(ids, final)
    for i in ids:
        state, rec = final.get(i, ("pending", None))
        states[state] = states.get(state, 0) + 1
        if state in ("done", "failed"):
            rec = rec or {}
            reason = rec.get("close_reason") or rec.get("state") or "-"
            by_reason.setdefault(reason, []).append(int(rec.get("turns") or 0))
    unfinished = states["running"] + states["pending"]
    lines = [f"tasks {len(ids)}: done {states['done']}, failed {states['failed']}, unfinished {unfinished}"
             + (f" (skipped {skipped} finished before this run)" if skipped else "")
             + (" [interrupted]" if interrupted else "")]
    lines.append(f"this run: {len(mine)} tasks, {posts} turns in {elapsed:.1f} s "
                 f"({posts / max(elapsed, 1e-9):.1f} turns/s)")
    if by_reason:
        width = max(12, *(len(r) for r in by_reason))
        lines.append(f"{'close reason':<{width}}  {'tasks':>6}  {'turns p50':>9}  {'p90':>5}  {'max':>5}")
        for reason in sorted(by_reason):
            t = by_reason[reason]
            lines.append(f"{reason:<{width}}  {len(t):>6}  {_pct(t, 0.5):>9}  {_pct(t, 0.9):>5}  {max(t):>5}")
    if failures:
        lines.append("failures:")
        for i, e in failures[:MAX_FAILURES_SHOWN]:
            lines.append(f"  {i}: {e}")
        if len(failures) > MAX_FAILURES_SHOWN:
            lines.append(f"  ... and {len(failures) - MAX_FAILURES_SHOWN} more")
    return "\n".join(lines) + "\n"

