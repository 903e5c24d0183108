"""`turnflow inspect STORE --summary`: sessions by state and close reason, turn percentiles and
the task list's states, from the store's `summary()` — aggregated inside the database in one
pass over the log, never one envelope at a time in Python, so memory does not grow with the
store.

States come from the log as the hub folds them: a session whose log holds `session.closed`
is closed (its reason is that envelope's), `session.expired` expired, `session.opened` active,
else invited (the first ending envelope counts). **Choice:** a session whose adapter asked to
close but whose `session.closed` is not logged yet (the process died in between; the next hub
completes the close) counts as active here. Turns are the substantive envelopes (`text`, `packet`).
"""

from __future__ import annotations

from typing import Any, Optional

from turnflow.runtime.envelope import EV_SESSION_CLOSED
from turnflow.runtime.store.contract import Store
from turnflow.runtime.store.records import SessionEnds
from turnflow.runtime.tasks import TASK_STATES


def _state(end: SessionEnds) -> str:
    if end.ended_by is None:
        return "active" if end.opened else "invited"
    return "closed" if end.ended_by == EV_SESSION_CLOSED else "expired"


def summarize(store: Store) -> dict[str, Any]:
    log = store.summary()
    states: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for end in log.ends:
        state = _state(end)
        states[state] = states.get(state, 0) + end.sessions
        if end.reason is not None:
            key = end.reason or "-"
            reasons[key] = reasons.get(key, 0) + end.sessions
    tasks = log.tasks
    return {"engine": log.engine, "sessions": sum(states.values()), "envelopes": log.envelopes,
            "states": dict(sorted(states.items())), "close_reasons": dict(sorted(reasons.items())),
            "turns": _percentiles(log.turns),
            "tasks": None if tasks is None else {s: tasks.get(s, 0) for s in TASK_STATES}}


def _percentiles(hist: list[tuple[int, int]]) -> Optional[dict[str, float]]:
    """Nearest-rank percentiles from a (value, count) histogram sorted by value."""
    total = sum(n for _, n in hist)
    if total == 0:
        return None
    out: dict[str, float] = {}
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        rank = max(1, -(-int(q * total * 1000) // 1000))  # ceil(q * total) without float drift
        seen = 0
        for value, n in hist:
            seen += n
            if seen >= rank:
                out[name] = value
                break
    out["min"] = hist[0][0]
    out["max"] = hist[-1][0]
    out["mean"] = round(sum(v * n for v, n in hist) / total, 2)
    return out
