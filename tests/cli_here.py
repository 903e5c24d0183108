"""`turnflow ARGS` run in the test's own process (`turnflow.cli.main`), for the tests about what a
command does rather than about its process (each such command is kept as a real process too).

What a real process would show is kept: its stdout and stderr, and the warnings and errors it logs
(a process that configures no logging prints them on stderr; in a test process pytest's handlers
would take them). A command that does not end fails its test after a timeout instead of hanging
the suite: it runs in a daemon thread, left to the process's exit."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Callable, Optional


@contextlib.contextmanager
def logged_to(stream: Any) -> Iterator[None]:
    """Records of WARNING and above logged by this thread written to `stream`, as Python's last-resort
    handler writes them in a process that configures no logging."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.WARNING)
    me = threading.get_ident()
    handler.addFilter(lambda record: record.thread == me)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _call(argv: Sequence[str], out: io.StringIO, err: io.StringIO) -> Any:
    from turnflow.cli import main

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), logged_to(err):
        return main(list(argv))


def _start(argv: Sequence[str], finished: Callable[[Optional[int], Optional[BaseException]], None]) -> tuple[io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()

    def run() -> None:
        try:
            code = _call(argv, out, err)
        except BaseException as exc:  # noqa: BLE001 (argparse's SystemExit too: reported, not lost)
            finished(None, exc)
        else:
            finished(code, None)

    threading.Thread(target=run, daemon=True).start()
    return out, err


def _result(argv: Sequence[str], outcome: tuple[Optional[int], Optional[BaseException]],
            out: io.StringIO, err: io.StringIO) -> tuple[int, str, str]:
    code, exc = outcome
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)  # (as the interpreter exits)
    elif exc is not None:
        raise AssertionError(f"turnflow {' '.join(argv)} raised {exc!r}: {err.getvalue()[-2000:]}") from exc
    assert code is not None
    return code, out.getvalue(), err.getvalue()


def main_here(argv: Sequence[str], timeout: float = 60.0) -> tuple[int, str, str]:
    """`turnflow ARGV` in this process: (exit status, stdout, stderr); fails after `timeout` s."""
    box: list[tuple[Optional[int], Optional[BaseException]]] = []
    done = threading.Event()

    def finished(code: Optional[int], exc: Optional[BaseException]) -> None:
        box.append((code, exc))
        done.set()

    out, err = _start(argv, finished)
    assert done.wait(timeout), f"turnflow {' '.join(argv)} did not exit within {timeout:g} s: {err.getvalue()[-2000:]}"
    return _result(argv, box[0], out, err)


async def amain_here(argv: Sequence[str], timeout: float = 120.0) -> tuple[int, str, str]:
    """`main_here` awaited from a running event loop (the command runs its own loop in its thread)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[Optional[int], Optional[BaseException]]] = loop.create_future()

    def settle(outcome: tuple[Optional[int], Optional[BaseException]]) -> None:
        if not done.done():
            done.set_result(outcome)

    out, err = _start(argv, lambda code, exc: loop.call_soon_threadsafe(settle, (code, exc)))
    try:
        outcome = await asyncio.wait_for(done, timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"turnflow {' '.join(argv)} did not exit within {timeout:g} s: "
                             f"{err.getvalue()[-2000:]}") from None
    return _result(argv, outcome, out, err)
