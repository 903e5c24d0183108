"""One `Dialect` object per store engine: what differs between SQLite and PostgreSQL for the
callers that write SQL of their own or decide how to share a store (summary.py, task_queue.py,
commands/run.py). A store names its dialect (`store.dialect`); nobody compares engine names
(`task_queue_for` picks a store's task list by its dialect object).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str  # "sqlite" | "postgresql": shown to users (`inspect --summary`), never compared
    shared: bool  # several processes write one store: a single run hydrates only its own session
    per_session_sql: str  # one row per session: sid, turns, term (10-digit seq, type, '|', reason), opened
    reason_sql: str  # the close reason out of `term`
    envelope_count_sql: str
    has_tasks_sql: str  # one row whose first column is true when the store holds a task list
    task_states_sql: str  # (state, count) rows


SQLITE = Dialect(
    name="sqlite",
    shared=False,
    per_session_sql="""
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
""",
    reason_sql="CASE WHEN term IS NULL THEN NULL ELSE substr(term, instr(term, '|') + 1) END",
    envelope_count_sql="SELECT COUNT(*) FROM envelopes",
    has_tasks_sql="SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'turnflow_tasks'",
    task_states_sql="SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state",
)

POSTGRESQL = Dialect(
    name="postgresql",
    shared=True,
    per_session_sql="""
SELECT s.session_id AS sid,
       COUNT(e.n) FILTER (WHERE e.event_type IN ('text', 'packet')) AS turns,
       MIN(lpad(e.seq::text, 10, '0') || e.event_type || '|' || COALESCE((e.record::jsonb) -> 'event_data' ->> 'reason', ''))
           FILTER (WHERE e.event_type IN ('session.closed', 'session.expired')) AS term,
       COALESCE(MAX(CASE WHEN e.event_type = 'session.opened' THEN 1 ELSE 0 END), 0) AS opened
FROM turnflow_sessions s
LEFT JOIN turnflow_envelopes e ON e.session_id = s.session_id
GROUP BY s.session_id
""",
    reason_sql="CASE WHEN term IS NULL THEN NULL ELSE substr(term, strpos(term, '|') + 1) END",
    envelope_count_sql="SELECT COUNT(*) FROM turnflow_envelopes",
    has_tasks_sql="SELECT to_regclass('turnflow_tasks') IS NOT NULL",
    task_states_sql="SELECT state, COUNT(*) FROM turnflow_tasks GROUP BY state",
)
