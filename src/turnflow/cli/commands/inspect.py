"""`turnflow inspect STORE [--session ID] [--events] [--summary] [--format text|json]`: hydrate a hub
store (read only) and print one line per session: id, task id (sessions of `run --tasks`),
block, state, close reason, turns and last speaker. `--events` (and `--session ID`, which reads
that session alone) adds each session's envelopes and telemetry records (agents' handshakes and
the events they emitted, docs/agents.md). STORE is a SQLite file or a `postgresql://` URL.
Exit 0; 1 when the store holds corrupt records (each reported with its session and sequence
number); 2 when the store cannot be read or is not a turnflow store, or the session id is invalid
or unknown."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from turnflow.cli.util import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, a_store, err, out, text_type
from turnflow.term import visible



def register(sub) -> None:
    p = sub.add_parser("inspect", help="show the sessions kept in a hub store")
    p.add_argument("store", metavar="STORE", type=a_store,
                   help="the SQLite file or postgresql:// URL given to `turnflow run --store`")
    p.add_argument("--session", metavar="ID", type=text_type("a session id"), help="only this session (read alone, not the whole store), "
                   "with its envelopes and telemetry")
    p.add_argument("--events", action="store_true",
                   help="print each session's envelopes and telemetry records under its line")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.add_argument("--summary", action="store_true",
                   help="counts by state and close reason, turn percentiles and task states (SQL aggregates; "
                        "SQLite file or postgresql:// URL)")
    p.set_defaults(func=run)


def run(args) -> int:
    from turnflow.runtime.errors import RuntimeErrorBase
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.session import check_session_id
    from turnflow.runtime.store import is_postgres_url, open_store

    if args.summary:
        from turnflow.cli.commands.inspect_summary import run_summary

        return _summary(args, run_summary)
    if not is_postgres_url(args.store) and not os.path.isfile(args.store):
        from turnflow.cli.commands.inspect_summary import not_a_store_file

        err(f"turnflow inspect: {not_a_store_file(args.store)}")
        return EXIT_USAGE
    try:
        if args.session is not None:
            check_session_id(args.session)
        # read only: SQLite's mode=ro, PostgreSQL's read-only transactions; no table is created
        store = open_store(args.store, read_only=True)
    except RuntimeErrorBase as exc:
        err(f"turnflow inspect: {exc}")
        return EXIT_USAGE
    where = store.path  # a URL without its password
    damage = store.damage  # PRAGMA quick_check's finding on a SQLite file
    if damage:
        err(f"turnflow inspect: {where}: the store is damaged ({damage}); showing the sessions still readable")
    try:
        hub = Hub(store)
        # with --session: that session's record and log only, never the whole store; read only:
        # no pending close is completed here
        report = hub.hydrate(only=args.session)
        lives = list(hub.sessions.values())
        bad = [p for p in report.problems if args.session is None or p.session_id == args.session]
        if args.session is not None and not lives and not bad:
            err(f"turnflow inspect: {where}: no session {args.session}")
            return EXIT_USAGE
        unreadable = _print_readable(args, lives, store, bad, _agent_names(args.store))
        for problem in bad:
            err(f"turnflow inspect: {where}: {problem}")
        if unreadable:
            err(f"turnflow inspect: {where}: damaged, cannot be read past here: {unreadable}")
        if damage or unreadable:
            return EXIT_USAGE
        return EXIT_FINDINGS if bad else EXIT_OK
    finally:
        store.close()


def _summary(args, run_summary) -> int:
    import sqlite3

    try:
        return run_summary(args)
    except sqlite3.DatabaseError as exc:  # a damaged file (flipped bytes, a cut tail)
        err(f"turnflow inspect: {args.store}: the store is damaged ({exc}); `turnflow inspect {args.store}` "
            "lists the sessions that are still readable")
        return EXIT_USAGE


def _agent_names(store: str) -> dict[str, str]:
    """Agent id -> name where a served hub registered its agents beside the store (AG2's agents
    speak under hex ids there); {} otherwise."""
    from turnflow.serve.registry import agent_names

    return agent_names(store)


def _print_readable(args, lives: list, store: Any, problems: list, names: Optional[dict[str, str]] = None) -> str:
    """`_print`; what stopped it on a damaged file (a page or record that cannot be read), or ""."""
    import sqlite3

    try:
        _print(args, lives, store, damage_by_session(problems), names or {})
    except (ValueError, sqlite3.DatabaseError) as exc:
        out("\n")
        return str(exc)
    return ""


# what a damaged record is, by the detail the store or the hydrate gave it
_KINDS = (("checksum mismatch", "checksum"), ("does not decode", "undecodable"), ("wrong shape", "shape"),
          ("is invalid", "shape"), ("does not match its position", "misplaced"), ("gap", "gap"),
          ("does not fold", "unfoldable"), ("no adapter", "unknown-kind"), ("cannot be read", "unreadable"))


def damage_kind(detail: str) -> str:
    """`checksum`, `undecodable`, `shape`, `misplaced`, `gap`, `unfoldable`, `unknown-kind`,
    `unreadable` (a page SQLite cannot read) or `corrupt`."""
    return next((kind for text, kind in _KINDS if text in detail), "corrupt")


def damage_by_session(problems: list) -> dict[str, list[dict]]:
    """{session id: [{seq, kind, detail}]} for the sessions with damaged records (seq 0: the
    session's creation record); damage to the store as a whole is under "(store)"."""
    found: dict[str, list[dict]] = {}
    for p in problems:  # a row whose session id itself is unreadable (NULL, not text): "(unknown)"
        sid = p.session_id if isinstance(p.session_id, str) else "(unknown)"
        found.setdefault(sid, []).append({"seq": p.seq, "kind": damage_kind(p.detail), "detail": p.detail})
    return found


_UNREADABLE = ("kind", "state", "close_reason", "turn_count", "expected_next", "envelope_count", "block", "task_id",
               "last_speaker", "created_at", "adapter_capabilities")


def _print(args, lives: list, store: Any, damage: dict[str, list[dict]], names: dict[str, str]) -> None:
    if args.format == "json":
        from turnflow.runtime.session import adapter_capabilities, iso_z

        rows = []
        for s in lives:
            tel = store.telemetry(s.session_id)
            rows.append({**session_row(s, names), "created_at": iso_z(s.metadata.created_at),
                         "adapter_capabilities": adapter_capabilities(tel), "telemetry": tel,
                         "damage": damage.get(s.session_id, [])})
        listed = {s.session_id for s in lives}
        for sid in sorted(set(damage) - listed - {"(store)"}):  # its creation record cannot be read
            rows.append({"session_id": sid, **dict.fromkeys(_UNREADABLE), "state": "unreadable", "telemetry": [],
                         "damage": damage[sid]})
        out(json.dumps(rows, indent=2) + "\n")
    else:
        render_sessions(lives, store, events=args.events or args.session is not None, damage=damage, names=names)


def session_row(live: Any, names: Optional[dict[str, str]] = None) -> dict:
    """What `inspect` says of a session: `LiveSession.info()` plus its block's name, the task it
    ran (`run --tasks`; None otherwise), who spoke last and, on a served hub's store, that
    agent's registered name (`names`: agent id -> name)."""
    md = live.metadata
    labels = md.labels if isinstance(md.labels, dict) else {}
    task = labels.get("task_id")
    last = getattr(live.state, "last_speaker_id", None)
    return {**live.info(), "block": md.name or None, "task_id": None if task is None else str(task),
            "last_speaker": last, "last_speaker_name": (names or {}).get(last, last) if last else None}


HEADER = ("SESSION", "TASK", "BLOCK", "STATE", "CLOSE REASON", "TURNS", "LAST SPEAKER")


def _table_rows(lives: list, damage: dict[str, list[dict]], names: dict[str, str]) -> list[tuple[str, ...]]:
    """The text table's rows: the readable sessions (STATE `damaged` when their log has damaged
    records), then the sessions whose creation record cannot be read."""
    rows: list[tuple[str, ...]] = []
    for s in lives:
        r = session_row(s, names)
        state = "damaged" if s.session_id in damage else r["state"]
        rows.append(tuple(visible(v) for v in (r["session_id"], r["task_id"] or "-", r["block"] or "-", state,
                                               r["close_reason"] or "-", str(r["turn_count"]), r["last_speaker_name"] or "-")))
    unreadable = sorted(set(damage) - {s.session_id for s in lives} - {"(store)"})
    return rows + [(_printable(sid), "-", "-", "unreadable", "-", "-", "-") for sid in unreadable]


def _printable(text: str) -> str:
    """Text read from a damaged record as it can be printed: bytes that were not UTF-8 as `\\udcXX`,
    control and bidi characters as escapes (`term.visible`)."""
    return visible(text)


def _print_events(live: Any, store: Any, damage: list[dict]) -> None:
    """A session's damaged records, next expected speaker, envelopes and telemetry (under its line)."""
    from turnflow.runtime.envelope import Envelope

    for d in damage:
        out(f"  damaged: seq {d['seq']} {d['kind']}: {_printable(d['detail'])}\n")
    i = live.info()
    out(f"  expected_next: {i['expected_next'] or '-'}  envelopes: {i['envelope_count']}\n")
    for e in store.read_range(live.session_id):
        if isinstance(e, Envelope):
            out(visible(f"  {e.seq:>5} {e.envelope_id} {e.sender_id} {e.event_type} "
                        f"{json.dumps(e.event_data, sort_keys=True)}") + "\n")
    for t in store.telemetry(live.session_id):
        out(render_telemetry(t))


def render_sessions(lives: list, store: Any, events: bool, damage: Optional[dict[str, list[dict]]] = None,
                    names: Optional[dict[str, str]] = None) -> None:
    """One aligned line per session under a header, then `N sessions`; with `events`, each
    session's envelopes and telemetry under its line. `damage` (`damage_by_session`): a session
    with damaged records shows STATE `damaged` (its log is folded up to the first of them), one
    whose creation record cannot be read a line of its own, and the last line counts them."""
    damage = damage or {}
    rows = _table_rows(lives, damage, names or {})
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]

    def line(row) -> str:
        return "  ".join(f"{v:>{w}}" if i == 5 else f"{v:<{w}}" for i, (v, w) in enumerate(zip(row, widths))).rstrip()

    if rows:
        out(line(HEADER) + "\n")
    for s, row in zip(lives, rows):
        out(line(row) + "\n")
        if events:
            _print_events(s, store, damage.get(s.session_id, []))
    for row in rows[len(lives):]:
        out(line(row) + "\n")
    damaged = len(set(damage) - {"(store)"})
    out(f"{len(rows)} session{'s' if len(rows) != 1 else ''}" + (f", {damaged} damaged" if damaged else "") + "\n")


def render_telemetry(t: dict) -> str:
    """One telemetry record as a text line (handshakes show raw -> effective capabilities)."""
    who, ev = t.get("agent_id", "?"), t.get("event", "?")
    if ev == "handshake":
        eff = t.get("effective")
        detail = (f"raw={json.dumps(t.get('raw'), sort_keys=True)} effective={json.dumps(eff, sort_keys=True)}"
                  + (f" behavior={t['behavior']}" if t.get("behavior") else "")
                  + (f" error={t['error']}" if t.get("error") else ""))
    else:
        step = t.get("step")
        detail = (f"step={step if step is not None else '-'}" + (f" reason={t['reason']}" if t.get("reason") else "")
                  + (f" payload={json.dumps(t.get('payload'), sort_keys=True)}" if t.get("payload") is not None else ""))
    return visible(f"  telemetry {who} {ev} {detail}") + "\n"
