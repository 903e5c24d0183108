"""Process-wide switches. A library call never sets them; the command-line
edge (`turnflow.cli.main`) turns them on for its own process:

- `PAUSE_GC`: parsing pauses the cyclic garbage collector while it builds the
  (acyclic) token stream and tree, then moves what it built to the oldest
  generation (see `turnflow.dsl.parser.gc_paused`);
- `TABLE_CACHE`: the LALR parser tables are read from / written to the
  user's cache directory (`$XDG_CACHE_HOME/turnflow`, or `~/.cache/turnflow`);
  `TURNFLOW_NO_CACHE=1` keeps it off.

This module imports nothing, so the CLI can set the switches before any
heavy import.
"""

from __future__ import annotations

PAUSE_GC = False
TABLE_CACHE = False


def switches() -> tuple[bool, bool]:
    """The switches as they are (PAUSE_GC, TABLE_CACHE): what a spawned child is handed, and what a
    test puts back."""
    return PAUSE_GC, TABLE_CACHE


def set_switches(values: tuple[bool, bool]) -> None:
    """The switches as `switches()` gave them."""
    global PAUSE_GC, TABLE_CACHE
    PAUSE_GC, TABLE_CACHE = values


def enable_cli_switches() -> None:
    """What `turnflow` (the command) turns on for its process."""
    global PAUSE_GC, TABLE_CACHE
    PAUSE_GC = True
    TABLE_CACHE = True
