"""`turnflow inspect STORE [--session ID] [--summary] [--format text|json]`: hydrate a hub store (read only)
and print each session's state, close reason, turn count, next expected speaker, envelopes and
telemetry records (agents' handshakes and the events they emitted, docs/agents.md). STORE is a
SQLite file or a `postgresql://` URL; `--session ID` reads that session alone.
Exit 0; 1 when the store holds corrupt records (each reported with its session and sequence
number); 2 when the store cannot be read or is not a turnflow store, or the session id is invalid
or unknown."""

from __future__ import annotations

import json
import os
from typing import Any, Iterator, Optional

from turnflow.cli_util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, err, out


def register(sub) -> None:
    p = sub.add_parser("inspect", help="show the sessions kept in a hub store")
    p.add_argument("store", metavar="STORE",
                   help="the SQLite file or postgresql:// URL given to `turnflow run --store`")
    p.add_argument("--session", metavar="ID", help="only this session (read alone, not the whole store)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.add_argument("--summary", action="store_true",
                   help="counts by state and close reason, turn percentiles and task states (SQL aggregates; "
                        "SQLite file or postgresql:// URL)")
    p.set_defaults(func=run)


class OneSession:
    """The store as a hub's hydrate sees it when it should rebuild one session only: that
    session's record and its envelopes, never the whole store."""

    def __init__(self, store: Any, session_id: str) -> None:
        self._store = store
        self._sid = session_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def sessions(self) -> Iterator[Any]:
        rec = self._store.session_record(self._sid)
        if rec is not None:
            yield rec

    def stream(self) -> Iterator[Any]:
        return self._store.read_range(self._sid)


def _summary(args, run_summary) -> int:
    import sqlite3

    try:
        return run_summary(args)
    except sqlite3.DatabaseError as exc:  # a damaged file (flipped bytes, a cut tail)
        err(f"turnflow inspect: {args.store}: the store is damaged ({exc}); `turnflow inspect {args.store}` "
            "lists the sessions that are still readable")
        return EXIT_USAGE


def _print_session(store: Any, s: Any) -> Optional[str]:
    """Print one session as text; what could not be read of it (a damaged page or record), or None."""
    import sqlite3

    from turnflow.runtime.envelope import Envelope

    i = s.info()
    out(f"session {i['session_id']} {i['kind']} {s.metadata.name}".rstrip() + "\n")
    out(f"  state: {i['state']}  close_reason: {i['close_reason'] or '-'}  turns: {i['turn_count']}"
        f"  expected_next: {i['expected_next'] or '-'}  envelopes: {i['envelope_count']}\n")
    try:
        for e in store.read_range(s.session_id):
            if isinstance(e, Envelope):
                out(f"  {e.seq:>5} {e.envelope_id} {e.sender_id} {e.event_type} "
                    f"{json.dumps(e.event_data, sort_keys=True)}\n")
        for t in store.telemetry(s.session_id):
            out(render_telemetry(t))
    except (ValueError, sqlite3.DatabaseError) as exc:
        return f"session {s.session_id}: damaged, cannot be read past here: {exc}"
    return None


def run(args) -> int:
    from turnflow.runtime.errors import RuntimeErrorBase
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.session import check_session_id
    from turnflow.runtime.stores import is_postgres_url, open_store

    if args.summary:
        from turnflow.commands.inspect_summary import run_summary

        return _summary(args, run_summary)
    if not is_postgres_url(args.store) and not os.path.isfile(args.store):
        err(f"turnflow inspect: no such store file: {args.store}")
        return EXIT_USAGE
    try:
        if args.session is not None:
            check_session_id(args.session)
        # read only: SQLite's mode=ro, PostgreSQL's read-only transactions; no table is created
        store = open_store(args.store, read_only=True)
    except RuntimeErrorBase as exc:
        err(f"turnflow inspect: {exc}")
        return EXIT_USAGE
    where = getattr(store, "path", args.store)  # a URL without its password
    damage = getattr(store, "damage", None)  # PRAGMA quick_check's finding on a SQLite file
    unreadable: list[str] = []
    if damage:
        err(f"turnflow inspect: {where}: the store is damaged ({damage}); showing the sessions still readable")
    try:
        hub = Hub(store if args.session is None else OneSession(store, args.session))
        report = hub.hydrate()  # read only: no pending close is completed here
        count, ever = getattr(store, "session_count", None), getattr(store, "sessions_ever_created", None)
        held, created = (count(), ever()) if count is not None and ever is not None else (0, None)
        if created is not None and created > held:
            err(f"turnflow inspect: warning: {where} holds {held} session{'s' if held != 1 else ''} but "
                f"{created} were created in it: its newest records are missing (a lost or deleted -wal file?)")
        lives = list(hub.sessions.values())
        bad = [p for p in report.problems if args.session is None or p.session_id == args.session]
        if args.session is not None and not lives and not bad:
            err(f"turnflow inspect: {where}: no session {args.session}")
            return EXIT_USAGE
        if args.format == "json":
            out(json.dumps([{**s.info(), "telemetry": store.telemetry(s.session_id)} for s in lives],
                           indent=2) + "\n")
        else:
            for s in lives:
                lost = _print_session(store, s)
                if lost is not None:
                    unreadable.append(lost)
        for problem in [*bad, *unreadable]:
            err(f"turnflow inspect: {where}: {problem}")
        if damage:
            return EXIT_USAGE
        return EXIT_FINDINGS if bad or unreadable else EXIT_OK
    finally:
        store.close()


def render_telemetry(t: dict) -> str:
    """One telemetry record as a text line (handshakes show raw -> effective capabilities)."""
    who, ev = t.get("agent_id", "?"), t.get("event", "?")
    if ev == "handshake":
        eff = t.get("effective")
        detail = (f"raw={json.dumps(t.get('raw'), sort_keys=True)} effective={json.dumps(eff, sort_keys=True)}"
                  + (f" error={t['error']}" if t.get("error") else ""))
    else:
        step = t.get("step")
        detail = (f"step={step if step is not None else '-'}" + (f" reason={t['reason']}" if t.get("reason") else "")
                  + (f" payload={json.dumps(t.get('payload'), sort_keys=True)}" if t.get("payload") is not None else ""))
    return f"  telemetry {who} {ev} {detail}\n"
