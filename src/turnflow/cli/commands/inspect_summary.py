"""`turnflow inspect STORE --summary [--format text|json]`: sessions by state and close reason,
turn percentiles and task states, from SQL aggregates (runtime/summary.py) on a SQLite file or
a `postgresql://` database. Exit 0; 2 when the store cannot be opened or is not a turnflow store, or is damaged (the
counts then cover what is still readable)."""

from __future__ import annotations

import json
import os

from turnflow.cli.util import EXIT_OK, EXIT_USAGE, err, out


def run_summary(args) -> int:
    from turnflow.runtime.errors import RuntimeErrorBase
    from turnflow.runtime.store import is_postgres_url, open_store
    from turnflow.runtime.summary import render, summarize
    from turnflow.term import visible

    if args.session is not None:
        err("turnflow inspect: --summary covers the whole store; leave out --session")
        return EXIT_USAGE
    pg = is_postgres_url(args.store)
    if not pg and not os.path.isfile(args.store):
        err(f"turnflow inspect: no such store file: {args.store}")
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
