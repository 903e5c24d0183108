"""An agent with ~15,000 unacked packets in one session (8 MiB): N=1 and READ=1, it attaches and
reads (notifications received); N>1 and READ=1, N hellos each read to its welcome; READ=0, N hellos
20 ms apart on a connection that reads nothing.  python3 bench/serve_attack/hellostorm.py SRC N READ

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import json
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_bounds import connect, register, request, answer, open_conversation


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def main(url, pid, n, read):
    async with connect(url) as a, connect(url) as b:
        m1 = await register(a, "m1")
        m2 = await register(b, "m2")
        await b.send(request("set_rule", {"agent_id": m2, "rule": {"limits": {"inbox": {"max_pending": 0}}}}, "sr"))
        assert (await answer(b, "sr"))["ok"]
        sid = await open_conversation(a, m1, b, m2)

        async def drain():
            while True:
                await b.recv()

        d = asyncio.ensure_future(drain())
        small = "y" * 200
        for i in range(0, 20000, 500):
            posts = [
                request(
                    "post_envelope",
                    {"envelope": {"channel_id": sid, "sender_id": m1, "audience": None, "event_type": "ag2.packet", "event_data": {"body": small}}},
                    f"p{j}",
                )
                for j in range(i, i + 500)
            ]
            for p in posts:
                await a.send(p)
            await answer(a, f"p{i + 499}")
        d.cancel()
    async with connect(url) as c:
        if n == 1:
            await c.send(json.dumps({"kind": "hello", "name": "m2", "since_envelope_id": ""}))
            got = 0
            try:
                while True:
                    f = json.loads(await asyncio.wait_for(c.recv(), 15))
                    got += f.get("kind") == "notify"
            except Exception as e:
                print("honest reattach: notifies received", got, "then", type(e).__name__, str(e)[:120])
            return
        c0 = cpu(pid)
        t = time.time()
        if not read:
            async with connect(url, max_queue=4) as z:
                for _ in range(n):
                    await z.send(json.dumps({"kind": "hello", "name": "m2", "since_envelope_id": ""}))
                    await z.send(json.dumps({"kind": "ping"}))
                    await asyncio.sleep(0.02)
            print(f"{n} hellos, 20 ms apart, replay not read: hub CPU {cpu(pid) - c0:.2f}s in {time.time() - t:.1f}s")
            return
        for _ in range(n):
            await c.send(json.dumps({"kind": "hello", "name": "m2", "since_envelope_id": ""}))
            if read:
                while json.loads(await c.recv()).get("kind") != "welcome":
                    pass
                await asyncio.sleep(0.02)
        await c.send(json.dumps({"kind": "ping"}))
        if read:
            while json.loads(await c.recv()).get("kind") != "pong":
                pass
        await asyncio.sleep(3)
        print(f"{n} hellos (read={read}): hub CPU {cpu(pid) - c0:.2f}s in {time.time() - t:.1f}s")


src = sys.argv[1]
with served(src, sys.argv[4:]) as (url, pid):
    asyncio.run(main(url, pid, int(sys.argv[2]), sys.argv[3] == "1"))
