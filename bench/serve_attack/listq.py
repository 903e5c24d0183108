"""60 agents with 900 KB résumés, then N list_agents with a query from one connection while another
process pings: the hub's CPU per request and the pinger's latencies.
python3 bench/serve_attack/listq.py SRC N

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_bounds import connect, request, answer


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def main(url, pid, n):
    async with connect(url) as a:
        for i in range(60):
            await a.send(request("register", {"passport": {"name": f"big{i}"}, "resume": {"summary": "Ab" * 450_000}}, f"r{i}"))
        for i in range(60):
            await answer(a, f"r{i}")
    h = await asyncio.create_subprocess_exec(
        sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "honest.py"), url, "6", stdout=asyncio.subprocess.PIPE
    )
    await asyncio.sleep(0.5)
    async with connect(url) as a:
        c0 = cpu(pid)
        t = time.time()
        for i in range(n):
            await a.send(request("list_agents", {"query": "zz", "limit": 1}, f"l{i}"))
        for _ in range(n):
            await a.recv()
        print(
            f"{n} list_agents with a query over 60 x 900 KB résumés: hub CPU {cpu(pid) - c0:.2f}s ({(cpu(pid) - c0) / n * 1e3:.1f} ms each), wall {time.time() - t:.1f}s"  # noqa: E501
        )
    print("honest pings:", (await h.communicate())[0].decode().strip())


src = sys.argv[1]
with served(src, ()) as (url, pid):
    asyncio.run(main(url, pid, int(sys.argv[2])))
