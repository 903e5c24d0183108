"""20 request frames of ~350,000 empty arrays (1 MiB each) from one connection while another
process pings every 10 ms: the hub's CPU per frame and the pinger's latencies.
python3 bench/serve_attack/stall.py SRC SECONDS [serve flags, e.g. --loop uvloop]

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_attack import _frame_of_many_values
from websockets.asyncio.client import connect


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def main(url, pid, n):
    frame = _frame_of_many_values("empty arrays")
    worst = 0.0
    stop = False

    async def honest():
        nonlocal worst
        async with connect(url) as ws:
            while not stop:
                t = time.perf_counter()
                await ws.send('{"kind":"ping"}')
                await ws.recv()
                worst = max(worst, time.perf_counter() - t)
                await asyncio.sleep(0.01)

    h = await asyncio.create_subprocess_exec(
        sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "honest.py"), url, sys.argv[2], stdout=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(0.5)
    c0 = cpu(pid)
    t0 = time.time()
    async with connect(url, max_size=None) as ws:
        for _i in range(n):
            await ws.send(frame)
        for _i in range(n):
            await ws.recv()
    c = cpu(pid) - c0
    out = (await h.communicate())[0].decode()
    return c, out, time.time() - t0


src = sys.argv[1]
with served(src, sys.argv[3:]) as (url, pid):
    c, worst, wall = asyncio.run(main(url, pid, 20))
print(f"{src}: 20 frames of 350k empty arrays: hub CPU {c:.2f}s ({c / 20 * 1e3:.0f} ms/frame), honest pings (ms) {worst.strip()}, wall {wall:.1f}s")
