"""The pinger the other scripts start: ping every 10 ms for SECONDS, print latency percentiles (ms).
python3 bench/serve_attack/honest.py URL SECONDS

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import sys
import time
import json
from websockets.asyncio.client import connect


async def main(url, secs):
    lat = []
    async with connect(url) as ws:
        t_end = time.time() + secs
        while time.time() < t_end:
            t = time.perf_counter()
            await ws.send('{"kind":"ping"}')
            await ws.recv()
            lat.append(time.perf_counter() - t)
            await asyncio.sleep(0.01)
    lat.sort()
    print(json.dumps({"n": len(lat), "p50": lat[len(lat) // 2] * 1e3, "p99": lat[int(len(lat) * 0.99)] * 1e3, "max": lat[-1] * 1e3}))


asyncio.run(main(sys.argv[1], float(sys.argv[2])))
