"""One `turnflow serve` hub under bench/serve_vs_ag2.py's AG2 workload, watched by perf or strace:

    python3 bench/serve_hub_profile.py [--src SRC] [--sessions 1000] [--watch perf|strace|syscalls|none] [--out DIR]

Starts the hub from SRC (default: this tree's src), runs 10 warm-up sessions, attaches
`perf record -e cpu-clock -g` (DIR/perf.data) or `strace -c -f` (DIR/strace.txt) to the hub
process, runs the workload (50 agents on 10 AG2 client connections, SESSIONS consulting sessions
at once), detaches, and prints the hub's CPU per session. Read the results with
`perf report -i DIR/perf.data --no-children --sort dso,sym -g none` or `cat DIR/strace.txt`.
`--watch syscalls` counts the hub's system calls and context switches with `perf stat` on the
kernel's tracepoints (no slowdown, unlike strace) and prints them per session.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import serve_vs_ag2 as bench  # noqa: E402

SYSCALLS = ",".join([*(f"syscalls:sys_enter_{name}" for name in ("epoll_pwait", "epoll_wait", "read", "write", "pwrite64",
                                                                  "fcntl", "getpid", "getrandom")),
                     "context-switches"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=bench.SRC)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--watch", choices=("perf", "strace", "syscalls", "none"), default="perf")
    ap.add_argument("--out", default=tempfile.gettempdir())
    args = ap.parse_args()
    proc, url = bench.start("turnflow", tempfile.mkdtemp(), args.src)
    try:
        bench.run_loop(bench.workload(url, 2, 2, 10, 600, prefix="warm"))
        watcher = None
        if args.watch == "perf":
            watcher = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "5000", "-g", "-p", str(proc.pid),
                                        "-o", os.path.join(args.out, "perf.data")], stderr=subprocess.DEVNULL)
        elif args.watch == "syscalls":
            watcher = subprocess.Popen(["perf", "stat", "-x", ",", "-e", SYSCALLS, "-p", str(proc.pid),
                                        "-o", os.path.join(args.out, "syscalls.csv")], stderr=subprocess.DEVNULL)
        elif args.watch == "strace":
            watcher = subprocess.Popen(["strace", "-c", "-f", "-p", str(proc.pid),
                                        "-o", os.path.join(args.out, "strace.txt")])
        time.sleep(0.5)  # (attached before the workload starts)
        cpu0 = bench.cpu_seconds(proc.pid)
        wall = bench.run_loop(bench.workload(url, 50, 10, args.sessions, 600))
        cpu = bench.cpu_seconds(proc.pid) - cpu0
        if watcher is not None:
            watcher.send_signal(signal.SIGINT)
            watcher.wait()
    finally:
        proc.terminate()
        proc.wait()
    if args.watch == "syscalls":
        for line in open(os.path.join(args.out, "syscalls.csv")):
            fields = line.split(",")
            if len(fields) > 2 and fields[0].strip().isdigit():
                print(f"{fields[2].removeprefix('syscalls:sys_enter_'):>20}: {int(fields[0]) / args.sessions:6.1f} per session")
    print(f"{args.sessions} sessions: wall {wall:.2f} s, hub CPU {cpu:.2f} s, {cpu / args.sessions * 1e3:.3f} ms per session"
          + (f" (watched by {args.watch}: results in {args.out})" if args.watch != "none" else ""))


if __name__ == "__main__":
    main()
