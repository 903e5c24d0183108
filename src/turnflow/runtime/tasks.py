"""Task lists for batch runs: `TASKS.jsonl`, one task a line.

    {"id": "t-001", "task": "Summarise the ticket", "context": {"ticket": 4711}}

`id` (a non-empty string, unique in the file) is required; `task` (a string, shown to the
agents first, as with `turnflow run --task`) and `context` (an object: the workflow's initial
context variables, added to the spec's `context_vars`) are optional. Blank lines are skipped.
Every problem is a `TaskFileError` naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional

from turnflow import json_input
from turnflow.runtime.errors import StoreError
from turnflow.runtime.session_spec import SessionSpec

KEYS = ("id", "task", "context")
MAX_ID = 200


class TaskFileError(Exception):
    """A bad task file: the message names the file and the line. `unreadable`: the file could
    not be read at all (exit 2), rather than holding a bad line (exit 1)."""

    def __init__(self, message: str, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


@dataclass(frozen=True)
class Task:
    id: str
    task: Optional[str] = None
    context: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def context_text(self) -> str:
        return json.dumps(self.context, sort_keys=True, separators=(",", ":"))


MAX_REPORTED = 50  # bad lines listed at most (then how many more)


def parse_tasks(text: str, path: str = "<tasks>") -> list[Task]:
    """The tasks of a JSON-lines text. Every bad line is reported (at most MAX_REPORTED, then a
    count), in one TaskFileError, one line each: `PATH:LINE: what is wrong`."""
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    problems: list[str] = []
    if text.startswith("\ufeff"):  # saved as "UTF-8 with BOM": read like a .flow file (dsl/parser.py)
        text = " " + text[1:]  # keep columns: the BOM becomes a blank
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            task = _parse_line(raw, n, seen)
        except TaskFileError as exc:
            problems.append(f"{path}:{n}: {exc}")
            continue
        seen[task.id] = n
        tasks.append(task)
    if problems:
        more = len(problems) - MAX_REPORTED
        raise TaskFileError("\n".join(problems[:MAX_REPORTED])
                            + (f"\n{path}: ... and {more} more bad line{'s' if more != 1 else ''}" if more > 0 else ""))
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (expected one JSON object a line)")
    return tasks


def _parse_line(raw: str, n: int, seen: dict[str, int]) -> Task:
    try:
        obj = json_input.loads(raw)  # refuses deep nesting, NaN, 1e309, lone surrogates, with a column
    except json_input.JSONInputError as exc:
        raise TaskFileError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise TaskFileError(f"expected an object {{\"id\", \"task\", \"context\"}}, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(KEYS))
    if unknown:
        raise TaskFileError(f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    tid = obj.get("id")
    if not isinstance(tid, str) or not tid.strip():
        raise TaskFileError(f"`id` must be a non-empty string, got {tid!r}")
    if len(tid) > MAX_ID or any(ord(c) < 32 for c in tid):
        raise TaskFileError(f"`id` must be at most {MAX_ID} printable characters")
    if tid in seen:
        raise TaskFileError(f"duplicate id {tid!r} (first on line {seen[tid]})")
    task = obj.get("task")
    if task is not None and not isinstance(task, str):
        raise TaskFileError(f"`task` must be a string, got {type(task).__name__}")
    ctx = obj.get("context")
    if ctx is None:
        ctx = {}
    if not isinstance(ctx, dict):
        raise TaskFileError(f"`context` must be an object, got {type(ctx).__name__}")
    return Task(tid, task or None, ctx, n)


def read_tasks(path: str) -> list[Task]:
    from turnflow.workspace.files import read_text

    try:
        text = read_text(path)  # not a FIFO, under the size limit of every input
    except FileNotFoundError:
        raise TaskFileError(f"no such file or directory: `{path}`", unreadable=True) from None
    except OSError as exc:
        raise TaskFileError(f"cannot read task file {path}: {exc.strerror or exc}", unreadable=True) from None
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text: {exc}", unreadable=True) from None
    return parse_tasks(text, path)


def spec_for(spec: SessionSpec, task: Task) -> SessionSpec:
    """The session spec of one task: its `context` is added to the workflow's `context_vars`."""
    if not task.context:
        return spec
    if spec.kind != "workflow":
        raise TaskFileError(f"line {task.line}: task {task.id!r} has a `context`, but only a workflow has "
                            f"context variables (this flow is a {spec.kind})")
    return spec.replace(context_vars=task.context)


def spec_hash(spec: SessionSpec) -> str:
    """Identifies the flow a task list was started with (a re-run with another flow is refused)."""
    return hashlib.sha256(json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def check_tasks(spec: SessionSpec, tasks: list[Task]) -> None:
    for t in tasks:
        spec_for(spec, t)


@dataclass
class Claim:
    """A task this worker now holds: run it, or continue `session_id` when it was started before."""

    id: str
    task: Optional[str]
    context: dict[str, Any]
    session_id: Optional[str]
    attempts: int

    def as_task(self) -> Task:
        return Task(self.id, self.task, self.context)


def decode_context(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


class LeaseLost(StoreError):
    """This worker no longer holds the task (its lease ran out and another worker claimed it)."""


TASK_STATES = ("pending", "running", "done", "failed")
TASK_ROW_COLUMNS = "id, task, context, spec_hash, state, attempts, session_id, result"


def task_row_damage(row: tuple[Any, ...]) -> str:
    """Why a task-list row (id, task, context, spec_hash, state, attempts, session_id, result)
    cannot be what a worker wrote, or "": `load` checks every row before writing, `inspect` too."""
    tid, task, context, spec_hash, state, attempts, session_id, result = row
    if not isinstance(tid, str) or not (task is None or isinstance(task, str)) or not isinstance(spec_hash, str):
        return "its id, task or flow is not text"
    if state not in TASK_STATES or not isinstance(attempts, int) or not (session_id is None or isinstance(session_id, str)):
        return "its state, attempts or session is not one a worker writes"
    try:
        ctx = json.loads(context) if isinstance(context, str) else None
        res = json.loads(result) if isinstance(result, str) else None
    except ValueError:
        return "its context or result is not JSON"
    if not isinstance(ctx, dict):
        return "its context is not a JSON object"
    if (state in ("done", "failed")) != isinstance(res, dict) or (result is not None and not isinstance(res, dict)):
        return "its result does not match its state"
    return ""
