"""`turnflow inspect STORE --summary [--format text|json]`: sessions by state and close reason,
turn percentiles and task states, from SQL aggregates (runtime/summary.py) on a SQLite file or
a `postgresql://` database. Exit 0; 2 when the store cannot be opened or is not a turnflow store, or is damaged (the
counts then cover what is still readable)."""

from __future__ import annotations

import json
import os
from typing import Any

from turnflow.cli.util import EXIT_OK, EXIT_USAGE, err, out


def not_a_store_file(path: str) -> str:
    """Why PATH, which is not a regular file, cannot be inspected: a folder is named as one."""
    if os.path.isdir(path):
        return f"{path}: is a folder, not a store file"
    return f"no such store file: {path}"


def run_summary(args) -> int:
    from turnflow.runtime.errors import RuntimeErrorBase
    from turnflow.runtime.store import is_postgres_url, open_store
    from turnflow.runtime.summary import summarize
    from turnflow.term import visible

    if args.session is not None:
        err("turnflow inspect: --summary covers the whole store; leave out --session")
        return EXIT_USAGE
    pg = is_postgres_url(args.store)
    if not pg and not os.path.isfile(args.store):
        err(f"turnflow inspect: {not_a_store_file(args.store)}")
        return EXIT_USAGE
    try:
        store = open_store(args.store, read_only=True)
    except RuntimeErrorBase as exc:
        err(f"turnflow inspect: {exc}")
        return EXIT_USAGE
    try:
        s = summarize(store)
    finally:
        store.close()
    if args.format == "json":
        out(json.dumps(s, indent=2, sort_keys=True) + "\n")
    else:
        out(visible(render(s, store.path)))  # close reasons and task states are stored text
    if store.damage:  # counted from what is still readable; say what is not
        err(f"turnflow inspect: {store.path}: the store is damaged ({store.damage}); the summary counts "
            "what is still readable")
        return EXIT_USAGE
    return EXIT_OK


def render(s: dict[str, Any], where: str) -> str:
    """`--summary`'s text: the store's counts, close reasons, turn percentiles and task states."""
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
