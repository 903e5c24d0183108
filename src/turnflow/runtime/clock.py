"""The runtime's clock: wall-clock seconds that never jump.

Expectations (`turn_within`, `reply_within`, `max_silence`, `acks_within`), TTLs and a SQLite
store's task leases measure time between two readings of one clock. Read from the wall clock
(`time.time`), an NTP step, a laptop waking from sleep or a VM restored from a snapshot moves every
reading at once: +1 h and every in-flight session has "waited" an hour. `SteadyClock` reads the
wall clock once, when it is made, and then adds monotonic time (`time.monotonic`, which steps never
move): its readings are epoch seconds — stored in envelopes, shown by `inspect` as dates — and the
time between two of them is the time that passed. A wall-clock step during a run shows in the stored
dates of the next run, never as a deadline missed or a lease lost in this one.

`STEADY` is the process's clock (every hub uses it unless given another); tests make their own
from a fake wall clock and a fake monotonic one."""

from __future__ import annotations

import time
from typing import Callable


class SteadyClock:
    """`clock()` → epoch seconds: the wall clock when made, plus monotonic time since."""

    __slots__ = ("_mono", "_base")

    def __init__(self, wall: Callable[[], float] = time.time, mono: Callable[[], float] = time.monotonic) -> None:
        self._mono = mono
        self._base = wall() - mono()

    def __call__(self) -> float:
        return self._base + self._mono()


STEADY = SteadyClock()


def reconnect_seconds() -> float:
    """How long a worker waits for a database server that went away (a restart, terminated
    connections) before it stops with exit 2 naming the store: 60 s, or `TURNFLOW_RECONNECT_SECONDS`
    (a positive number; tests shorten it)."""
    import os

    try:
        value = float(os.environ.get("TURNFLOW_RECONNECT_SECONDS", "60"))
    except ValueError:
        return 60.0
    return value if 0 < value < float("inf") else 60.0
