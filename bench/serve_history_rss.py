"""A served hub's memory against its history: the hub `turnflow serve` builds (its `Hub.open` and
its `Ops`, subscribed), driven in process through the hub's own calls, over SQLite.

1. RSS (resident now, after a `gc.collect()`) of the hub after N sessions were opened, talked in
   and closed, over the RSS after a warm-up of 200 such sessions: what each ended session costs;
   and the Python objects' memory blocks allocated (`sys.getallocatedblocks`), which leave out
   SQLite's page cache (up to 16 MiB, `PRAGMA cache_size`: it fills as the store grows).
2. Start-up over a store of many ended sessions (and a few live ones): the time of opening the
   store + `Hub.open` + `Ops`, and the RSS then, over the RSS of a process that imported the same.

Each figure is measured in a fresh process running the code of `--src` (repeatable: `--src
/tmp/base-main/src --src src` compares two trees on the same store).

    python3 bench/serve_history_rss.py --src /tmp/base-main/src --src src [--sessions 2000 6000] [--store-sessions 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _served(path: str):  # type: ignore[no-untyped-def]
    """The hub and ops as `turnflow serve` makes them (with whatever option the tree's serve passes)."""
    import inspect

    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import SQLiteStore
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import Registry, SQLiteBackend

    kw = {"keep_ended": False} if "keep_ended" in inspect.signature(Hub.__init__).parameters else {}
    hub = await Hub.open(SQLiteStore(path), **kw)
    ops = Ops(hub, Registry(SQLiteBackend(path + ".agents")), Auth())
    return hub, ops


async def _sessions(hub, n: int, close: bool = True) -> None:  # type: ignore[no-untyped-def]
    from turnflow.runtime.envelope import EV_TEXT, Envelope

    for i in range(n):
        md = await hub.open_session("conversation", ["alice", "bob"], labels={"n": i})
        await hub.ack(md.session_id, "bob")
        await hub.post(Envelope(md.session_id, "alice", None, EV_TEXT, {"text": f"question {i} " + "x" * 60}))
        await hub.post(Envelope(md.session_id, "bob", None, EV_TEXT, {"text": f"answer {i} " + "y" * 60}))
        if close:
            await hub.close(md.session_id, "done")


def history_child(path: str, counts: list[int]) -> None:
    import gc

    async def main() -> dict:
        hub, _ops = await _served(path)
        await _sessions(hub, 200)
        gc.collect()
        base, blocks = _rss_mb(), sys.getallocatedblocks()
        out: dict = {"held": {}, "growth_mb": {}, "blocks": {}}
        done = 0
        for n in counts:
            t0 = time.process_time()
            await _sessions(hub, n - done)
            done = n
            gc.collect()
            out["growth_mb"][n] = _rss_mb() - base
            out["blocks"][n] = sys.getallocatedblocks() - blocks
            out["held"][n] = len(hub.sessions)
            out.setdefault("cpu_s", {})[n] = time.process_time() - t0
        await hub.aclose()
        return out

    print(json.dumps(asyncio.run(main())))


def startup_child(path: str) -> None:
    import gc

    import turnflow.runtime.hub  # noqa: F401  (imported before the baseline, as a served hub imports it)
    import turnflow.serve.ops  # noqa: F401

    gc.collect()
    base = _rss_mb()

    async def main() -> dict:
        t0 = time.perf_counter()
        c0 = time.process_time()
        hub, _ops = await _served(path)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        gc.collect()
        return {"seconds": dt, "cpu_s": cpu, "held": len(hub.sessions), "growth_mb": _rss_mb() - base}

    print(json.dumps(asyncio.run(main())))


def build_child(path: str, ended: int, live: int) -> None:
    async def main() -> None:
        from turnflow.runtime.hub import Hub
        from turnflow.runtime.store import SQLiteStore

        hub = await Hub.open(SQLiteStore(path))
        await _sessions(hub, ended)
        await _sessions(hub, live, close=False)
        await hub.aclose()

    asyncio.run(main())


def child(src: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    out = subprocess.run([sys.executable, HERE, *args], capture_output=True, text=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout) if out.stdout.strip() else {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", help="a tree's src folder (repeat to compare); default src")
    ap.add_argument("--sessions", type=int, nargs="+", default=[2000, 6000])
    ap.add_argument("--store-sessions", type=int, default=20000, help="ended sessions of the start-up store")
    ap.add_argument("--live", type=int, default=10, help="live sessions of the start-up store")
    ap.add_argument("--history-child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--startup-child", help=argparse.SUPPRESS)
    ap.add_argument("--build-child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.history_child:
        history_child(args.history_child[0], [int(n) for n in args.history_child[1].split(",")])
        return
    if args.startup_child:
        startup_child(args.startup_child)
        return
    if args.build_child:
        build_child(args.build_child[0], int(args.build_child[1]), int(args.build_child[2]))
        return
    srcs = args.src or ["src"]
    with tempfile.TemporaryDirectory(prefix="turnflow-history-") as tmp:
        for src in srcs:
            r = child(src, "--history-child", os.path.join(tmp, f"h{srcs.index(src)}.db"),
                      ",".join(str(n) for n in args.sessions))
            for n in args.sessions:
                key = str(n)
                print(f"{src}: after {n:,} sessions opened and closed: RSS +{r['growth_mb'][key]:.1f} MB "
                      f"({r['growth_mb'][key] * 2**20 / n / 1024:.2f} KiB/session), Python blocks "
                      f"+{r['blocks'][key]:,} ({r['blocks'][key] / n:.1f}/session), {r['held'][key]} held in "
                      f"hub.sessions")
        store = os.path.join(tmp, "startup.db")
        t0 = time.perf_counter()
        child(srcs[-1], "--build-child", store, str(args.store_sessions), str(args.live))
        print(f"start-up store: {args.store_sessions:,} ended + {args.live} live sessions "
              f"({os.path.getsize(store) / 1e6:.0f} MB, built in {time.perf_counter() - t0:.0f} s)")
        for _ in range(2):  # alternated: the second round shows the spread
            for src in srcs:
                import shutil

                copy = os.path.join(tmp, "copy.db")  # (each start on its own copy: the first start adds an index)
                shutil.copy(store, copy)
                for ext in (".agents",):
                    if os.path.exists(store + ext):
                        shutil.copy(store + ext, copy + ext)
                r = child(src, "--startup-child", copy)
                print(f"{src}: start-up {r['seconds']:.2f} s ({r['cpu_s']:.2f} s CPU), {r['held']} sessions held, "
                      f"RSS +{r['growth_mb']:.1f} MB over the imports")
                for f in os.listdir(tmp):
                    if f.startswith("copy.db"):
                        os.remove(os.path.join(tmp, f))


if __name__ == "__main__":
    main()
