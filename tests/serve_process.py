"""`turnflow serve` in a subprocess for the tests: started on a free port of 127.0.0.1, ready when
it prints its address (no sleeps), stopped with SIGTERM or killed with SIGKILL."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

SRC = str(Path(__file__).resolve().parents[1] / "src")


class ServeProcess:
    def __init__(self, store: str, *args: str, port: int = 0, host: str = "127.0.0.1",
                 cwd: Optional[str] = None, clock_offset: float = 0.0) -> None:
        """`clock_offset`: the server's wall clock is that many seconds off this machine's (another
        machine's clock), its monotonic clock the same."""
        env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
        start = ["-m", "turnflow"] if not clock_offset else [
            "-c", "import runpy, sys, time\n_wall = time.time\n"
            f"time.time = lambda: _wall() + {float(clock_offset)!r}\n"
            "sys.argv = ['turnflow', *sys.argv[1:]]\nrunpy.run_module('turnflow', run_name='__main__')\n"]
        self.proc = subprocess.Popen(
            [sys.executable, *start, "serve", "--listen", f"{host}:{port}", "--store", store, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        self._stderr = ""
        self.url = self._wait_ready()
        self.port = int(self.url.rsplit(":", 1)[1])

    def _wait_ready(self, timeout: float = 60.0) -> str:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on (ws://\S+)", line)
            if m:
                return m.group(1)
        self.proc.kill()
        _, err = self.proc.communicate(timeout=10)
        raise RuntimeError(f"turnflow serve did not start: {err[-2000:]}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> Optional[int]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            self._stderr = self.proc.stderr.read()
            self.proc.stderr.close()
        return self.proc.returncode

    def stderr(self) -> str:
        """What the server wrote to stderr (after `stop`)."""
        return self._stderr


def serve_here(*args: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """`turnflow serve ARGS` in this process (tests/cli_here.py): (exit status, stdout, stderr), for
    the options refused before anything is served. A command that serves instead of exiting fails
    the caller after `timeout`."""
    from cli_here import main_here

    return main_here(["serve", *args], timeout)
