"""The tests that parse and walk all of `src/` (its syntax trees, radon's blocks) do it with the
cyclic garbage collector paused.

A syntax tree has no reference cycles: it is freed by reference counting when the test drops it,
so a collection during the scan finds nothing to free. It is not free, though: each one that runs
while hundreds of thousands of nodes are built walks them, and a full one the worker's whole heap
(ag2, LangGraph, AutoGen imported by earlier tests), several times per scan. Whatever cycles a scan
does leave are collected after it, by the first collection once the collector is back on."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
