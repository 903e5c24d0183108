"""One `list_channels` over ended workflow channels whose knobs are large (bounded by the frame size
alone), in this process: a hub with `keep_ended=False` (as `turnflow serve` runs it) and its `Ops`,
no socket. Prints the listing's wall and CPU time, the longest wait of another task between its
turns while it ran, and, with --concurrent K, the RSS growth (from /proc) of K such listings at once:

    PYTHONPATH=src python3 bench/list_large_knobs.py [--sessions 200] [--kb 500] [--concurrent 0]

(docs/benchmarks.md, "Channels with large knobs")."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from runtime_helpers import CHAIN  # noqa: E402
from turnflow.runtime.hub import Hub  # noqa: E402
from turnflow.runtime.store import SQLiteStore  # noqa: E402
from turnflow.serve.ops import Auth, Ops  # noqa: E402
from turnflow.serve.registry import open_registry  # noqa: E402


class Conn:
    endpoint_id = "bench"

    def __init__(self, *agents: str) -> None:
        self.agents = set(agents)

    def send(self, text: str) -> None:
        pass


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def listing(ops: Ops) -> str:
    try:
        return f"{len(await ops.list_channels(Conn('a'), {'agent_id': 'a', 'limit': 1000}))} bytes"
    except Exception as exc:  # (refused: over --max-reply-bytes, or the listings' limit together)
        return f"refused: {exc}"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hub.db")
        registry = open_registry(path)
        hub = await Hub.open(SQLiteStore(path), keep_ended=False)
        ops = Ops(hub, registry, Auth())
        ctx = {f"k{i}": "x" * 1000 for i in range(args.kb)}
        for _ in range(args.sessions):
            md = await hub.open_session("workflow", ["a", "b", "c"], knobs={"graph": CHAIN, "context_vars": ctx},
                                        creator_id="a")
            for p in ("b", "c"):
                await hub.ack(md.session_id, p)
            await hub.close(md.session_id, "done")
        hub.flush_ends()
        await asyncio.sleep(0.2)
        hub._ended.clear()
        gaps, done = [0.0], False

        async def other() -> None:
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        task = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        t0, c0 = time.perf_counter(), time.process_time()
        outcome = await listing(ops)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        done = True
        await task
        print(f"{args.sessions} sessions of {args.kb} KB: {outcome[:90]}; wall {wall * 1000:.1f} ms, "
              f"CPU {cpu * 1000:.1f} ms, longest wait of another task {max(gaps) * 1000:.1f} ms")
        if args.concurrent:
            before = top = rss_mib()
            running = asyncio.ensure_future(asyncio.gather(*[listing(ops) for _ in range(args.concurrent)]))
            while not running.done():
                top = max(top, rss_mib())
                await asyncio.sleep(0.005)
            refused = sum(r.startswith("refused") for r in running.result())
            print(f"{args.concurrent} listings at once: RSS {before:.0f} -> peak {top:.0f} MiB, {refused} refused")
        await hub.aclose()
        registry.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--kb", type=int, default=500)
    parser.add_argument("--concurrent", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
