"""`turnflow inspect STORE --summary`: sessions by state and close reason, turn percentiles and
the task list's states, computed by SQL aggregates on either store — one pass over the log
inside the database, never one envelope at a time in Python, so memory does not grow with
the store.

States come from the log as the hub folds them: a session whose log holds `session.closed`
is closed (its reason is that envelope's), `session.expired` expired, `session.opened` active,
else invited. **Choice:** a session whose adapter asked to close but whose `session.closed`
is not logged yet (the process died in between; the next hub completes the close) counts as
active here. Turns are the substantive envelopes (`text`, `packet`).
"""

from __future__ import annotations

from typing import Any, Optional

TERMINAL = ("session.closed", "session.expired")

# per session: turns, the terminal envelope's type|reason, whether it opened
_SQLITE_PER_SESSION = """
SELECT s.session_id AS sid,
       COALESCE(SUM(CASE WHEN e.et IN ('text', 'packet') THEN 1 ELSE 0 END), 0) AS turns,
       MIN(CASE WHEN e.et IN ('session.closed', 'session.expired')
                THEN printf('%010d', e.seq) || e.et || '|' || COALESCE(json_extract(e.record, '$.event_data.reason'), '')
           END) AS term,
       COALESCE(MAX(CASE WHEN e.et = 'session.opened' THEN 1 ELSE 0 END), 0) AS opened
FROM sessions s
LEFT JOIN (SELECT session_id, seq, record, json_extract(record, '$.event_type') AS et FROM envelopes) e
       ON e.session_id = s.session_id
GROUP BY s.session_id
"""

_PG_PER_SESSION = """
SELECT s.session_id AS sid,
       COUNT(e.n) FILTER (WHERE e.event_type IN ('text', 'packet')) AS turns,
       MIN(lpad(e.seq::text, 10, '0') || e.event_type || '|' || COALESCE((e.record::jsonb) -> 'event_data' ->> 'reason', ''))
           FILTER (WHERE e.event_type IN ('session.closed', 'session.expired')) AS term,
       COALESCE(MAX(CASE WHEN e.event_type = 'session.opened' THEN 1 ELSE 0 END), 0) AS opened
FROM turnflow_sessions s
LEFT JOIN turnflow_envelopes e ON e.session_id = s.session_id
GROUP BY s.session_id
"""

_STATE = """
CASE WHEN term IS NULL THEN (CASE WHEN opened = 1 THEN 'active' ELSE 'invited' END)
     WHEN substr(term, 11, 14) = 'session.closed' THEN 'closed' ELSE 'expired' END
"""


def _reason_sql(engine: str) -> str:
    # term = 10-digit seq, event type, '|', reason
    return "CASE WHEN term IS NULL THEN NULL ELSE substr(term, strpos(term, '|') + 1) END" if engine == "postgresql" \
        else "CASE WHEN term IS NULL THEN NULL ELSE substr(term, instr(term, '|') + 1) END"


def summarize(store: Any) -> dict:
    engine = getattr(store, "engine", "sqlite")
    tasks: Optional[dict] = None
    per = _PG_PER_SESSION if engine == "postgresql" else _SQLITE_PER_SESSION
    by_state_reason = f"""
        SELECT {_STATE} AS state, {_reason_sql(engine)} AS reason, COUNT(*) FROM ({per}) per GROUP BY 1, 2"""
    histogram = f"SELECT turns, COUNT(*) FROM ({per}) per GROUP BY turns ORDER BY turns"
    if engine == "postgresql":
        with store.pool.connection() as conn:
            groups = conn.execute(by_state_reason).fetchall()
            hist = conn.execute(histogram).fetchall()
            envelopes = conn.execute("SELECT COUNT(*) FROM turnflow_envelopes").fetchone()[0]
            tasks = dict(conn.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state").fetchall())
    else:
        db = store.db
        groups = db.execute(by_state_reason).fetchall()
        hist = db.execute(histogram).fetchall()
        envelopes = db.execute("SELECT COUNT(*) FROM envelopes").fetchone()[0]
        has_tasks = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turnflow_tasks'").fetchone()
        tasks = (dict(db.execute("SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state").fetchall())
                 if has_tasks else None)
    states: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for state, reason, n in groups:
        states[state] = states.get(state, 0) + n
        if reason is not None:
            key = reason or "-"
            reasons[key] = reasons.get(key, 0) + n
    sessions = sum(states.values())
    return {"engine": engine, "sessions": sessions, "envelopes": envelopes,
            "states": dict(sorted(states.items())), "close_reasons": dict(sorted(reasons.items())),
            "turns": _percentiles([(int(t), int(n)) for t, n in hist]),
            "tasks": None if tasks is None else {s: int(tasks.get(s, 0)) for s in ("pending", "running", "done", "failed")}}


def _percentiles(hist: list[tuple[int, int]]) -> Optional[dict]:
    """Nearest-rank percentiles from a (value, count) histogram sorted by value."""
    total = sum(n for _, n in hist)
    if total == 0:
        return None
    out: dict[str, Any] = {}
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


def render(s: dict, where: str) -> str:
    def n(count: int, word: str) -> str:
        return f"{count} {word}{'s' if count != 1 else ''}"

    lines = [f"store {where} ({s['engine']}): {n(s['sessions'], 'session')}, {n(s['envelopes'], 'envelope')}"]
    if s["states"]:
        lines.append("state: " + "  ".join(f"{k} {v}" for k, v in s["states"].items()))
    if s["close_reasons"]:
        width = max(12, *(len(k) for k in s["close_reasons"]))
        lines.append(f"{'close reason':<{width}}  {'sessions':>8}")
        for k, v in s["close_reasons"].items():
            lines.append(f"{k:<{width}}  {v:>8}")
    t = s["turns"]
    if t:
        lines.append(f"turns: p50 {t['p50']}  p90 {t['p90']}  p99 {t['p99']}  min {t['min']}  max {t['max']}"
                     f"  mean {t['mean']}")
    if s["tasks"] is not None:
        lines.append("tasks: " + "  ".join(f"{k} {v}" for k, v in s["tasks"].items()))
    return "\n".join(lines) + "\n"
