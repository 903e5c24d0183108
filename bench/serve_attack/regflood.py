"""One connection registers N agents with résumés of SIZE characters, pipelined: the hub's RSS and
store size after.  python3 bench/serve_attack/regflood.py N SIZE   (PYTHONPATH=src)

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import json
import sys
import time
import tempfile
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from serve_process import ServeProcess
from websockets.asyncio.client import connect


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024


async def main(url, pid, n, size):
    r0 = rss(pid)
    t = time.time()
    async with connect(url, max_size=None) as ws:
        got = 0
        for i in range(n):
            if i - got >= 1000:
                m = json.loads(await ws.recv())
                got += 1
                if not m.get("ok"):
                    print("refused", str(m)[:300])
                    break
            await ws.send(
                json.dumps(
                    {
                        "kind": "request",
                        "request_id": str(i),
                        "op": "register",
                        "params": {"passport": {"name": f"bot{i}"}, "resume": {"summary": "x" * size}},
                    }
                )
            )
            if i % 32 == 31 or i == n - 1:
                # drain
                pass
        while got < n:
            m = json.loads(await ws.recv())
            got += 1
            if not m.get("ok"):
                print("refused", m)
                break
    print(
        f"n={n} size={size} ok in {time.time() - t:.1f}s rss {r0:.0f} -> {rss(pid):.0f} MiB; store {sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) / 2**20:.0f} MiB"  # noqa: E501
    )


d = tempfile.mkdtemp()
srv = ServeProcess(d + "/hub.db")
try:
    asyncio.run(main(srv.url, srv.proc.pid, int(sys.argv[1]), int(sys.argv[2])))
finally:
    srv.stop()
