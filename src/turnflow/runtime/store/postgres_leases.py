"""`TaskLeases`: a batch worker's task leases as its `PostgresStore` checks them in every group
commit (docs/scale.md). The store composes one when it belongs to a worker; without one (a single
run) its commits check nothing.

The check has to be in the commit's own statement: a lease looked at before the commit could run
out between the look and the write, and then two workers would interleave one session's log. So
this component does not run SQL of its own; it contributes the lease parts to the store's statement
(postgres.commit_sql) and their parameters:

- `bound`: a new session is bound to its task (`labels.task_id`) only while this worker holds it;
  `s_ok` then creates only the sessions `bound` bound (or that belong to no task);
- `held`: share-locks the task rows of the sessions written to, only where this worker holds them
  (a claim that takes a task over waits for this commit, and later commits see the new holder);
  envelopes are written only for held sessions and sessions created in the statement;
- telemetry is not written into a session whose task another worker holds;
- `fin`: a finished task is recorded only while this worker holds it, and wakes the workers that
  LISTEN on `NOTIFY_CHANNEL`.

Task rows are reached through arrays of their keys (`= ANY`), so every lookup is an index probe:
the cost of a commit does not grow with the task list.
"""

from __future__ import annotations

from typing import Any

NOTIFY_CHANNEL = "turnflow_tasks"  # a task was finished or given back (workers waiting LISTEN on it)


class TaskLeases:
    """The leases of batch worker `worker` (its id, `host:pid:random`)."""

    def __init__(self, worker: str) -> None:
        self.worker = worker

    # -- the statement's parts (static: the statement is cached per shape) ---------------------
    @staticmethod
    def session_ctes() -> list[str]:
        return ["bound AS (UPDATE turnflow_tasks t SET session_id = x.sid FROM s_in x "
                "WHERE t.id = ANY(%(s_tasks)s::text[]) AND t.id = x.task AND t.worker = %(w)s "
                "AND t.state = 'running' AND t.session_id IS NULL RETURNING x.sid)"]

    @staticmethod
    def session_filter() -> str:
        return " WHERE x.task IS NULL OR x.sid IN (SELECT sid FROM bound)"

    @staticmethod
    def envelope_ctes() -> list[str]:
        return ["held AS (SELECT t.session_id FROM turnflow_tasks t WHERE t.session_id = ANY(%(e_sids)s::text[]) "
                "AND t.worker = %(w)s FOR SHARE)"]

    @staticmethod
    def envelope_filter(sessions: bool) -> str:
        return " WHERE v.sid IN (SELECT session_id FROM held)" + (" OR v.sid IN (SELECT sid FROM bound)"
                                                                  if sessions else "")

    @staticmethod
    def telemetry_filter() -> str:
        return (" WHERE x.sid NOT IN (SELECT t.session_id FROM turnflow_tasks t WHERE t.session_id = "
                "ANY(%(t_sids)s::text[]) AND t.worker IS DISTINCT FROM %(w)s)")

    @staticmethod
    def finish_ctes() -> list[str]:
        # a result is recorded only over a complete log: the last envelope this worker wrote for the
        # task's session is stored (a server crash may have lost it after it was acknowledged; #25)
        return ["fin AS (UPDATE turnflow_tasks t SET state = x.state, result = x.result, worker = NULL, "
                "lease_until = NULL FROM json_to_recordset(%(f)s::json) AS x (id text, state text, result text, "
                "sid text, last integer) WHERE t.id = ANY(%(f_ids)s::text[]) AND t.id = x.id AND t.worker = %(w)s "
                "AND t.state = 'running' AND (x.last IS NULL OR EXISTS (SELECT 1 FROM turnflow_envelopes e "
                "WHERE e.session_id = x.sid AND e.seq = x.last)) "
                f"RETURNING t.id, pg_notify('{NOTIFY_CHANNEL}', ''))"]

    # -- the parameters ---------------------------------------------------------------------------
    def params(self, sessions: list[dict[str, Any]], rows: list[dict[str, Any]], tels: list[dict[str, Any]],
               fins: list[dict[str, Any]]) -> dict[str, Any]:
        """The lease parameters of one statement: this worker and the keys of the task rows it reaches."""
        import json

        return {"w": self.worker, "f": json.dumps(fins),
                "s_tasks": [r["task"] for r in sessions if r["task"] is not None],
                "e_sids": list({r["sid"]: None for r in rows}), "t_sids": list({r["sid"]: None for r in tels}),
                "f_ids": [r["id"] for r in fins]}
