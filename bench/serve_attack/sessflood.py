"""AGENTS pairs of agents each open PER conversations (the invitee's connection acks): sessions
opened or refused and the hub's RSS.  python3 bench/serve_attack/sessflood.py SRC AGENTS PER [serve flags]

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import json
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_bounds import connect, register, request, rss_mib


async def main(url, pid, agents, per):
    r0 = rss_mib(pid)
    t = time.time()
    opened = refused = 0
    conns = []
    for k in range(agents):
        a, b = await connect(url).__aenter__(), await connect(url).__aenter__()
        conns += [a, b]
        m1 = await register(a, f"c{k}")
        m2 = await register(b, f"d{k}")

        async def acker(ws=b, me=m2):
            n = 0
            while True:
                f = json.loads(await ws.recv())
                if f.get("kind") == "notify" and f["envelope"]["event_type"] == "ag2.channel.invite":
                    n += 1
                    await ws.send(
                        request(
                            "post_envelope",
                            {
                                "envelope": {
                                    "channel_id": f["envelope"]["channel_id"],
                                    "sender_id": me,
                                    "audience": None,
                                    "event_type": "ag2.channel.invite.ack",
                                    "event_data": {},
                                }
                            },
                            f"a{n}",
                        )
                    )

        task = asyncio.ensure_future(acker())
        for i in range(0, per, 50):
            for j in range(i, i + 50):
                await a.send(request("create_channel", {"creator_id": m1, "manifest_type": "conversation", "participants": [m2]}, f"o{j}"))
            got = 0
            while got < 50:
                f = json.loads(await a.recv())
                if f.get("kind") == "response":
                    got += 1
                    if f["ok"]:
                        opened += 1
                    else:
                        refused += 1
                        last = f["error_message"]
        task.cancel()
    print(
        f"{agents} agents x {per} sessions: opened {opened} refused {refused} in {time.time() - t:.1f}s; hub RSS {r0:.0f} -> {rss_mib(pid):.0f} MiB ({(rss_mib(pid) - r0) * 1024 / max(opened, 1):.1f} KiB per session)"  # noqa: E501
    )
    if refused:
        print("  ", last)


src = sys.argv[1]
with served(src, sys.argv[4:]) as (url, pid):
    asyncio.run(main(url, pid, int(sys.argv[2]), int(sys.argv[3])))
