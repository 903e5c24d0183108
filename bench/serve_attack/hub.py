"""One `turnflow serve` from a source tree, for the attack scripts beside this file:

    with served(SRC, [serve flags]) as (url, pid):
        ...

starts it on a new store in a temporary folder, on a free port, and stops it at the end."""

import contextlib
import os
import re
import subprocess
import sys
import tempfile


@contextlib.contextmanager
def served(src, flags=()):
    folder = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnflow", "serve", "--listen", "127.0.0.1:0", "--store", folder + "/h.db", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, PYTHONPATH=src),
    )
    try:
        url = None
        for line in proc.stdout:
            m = re.search(r"listening on (ws://\S+)", line)
            if m:
                url = m.group(1)
                break
        if url is None:
            raise SystemExit(f"turnflow serve from {src} did not start")
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait()
