"""N workflow sessions with 900 KB of context variables in their knobs: opened or refused, and the
hub's RSS.  python3 bench/serve_attack/knobflood.py SRC N [serve flags]

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import json
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_bounds import connect, register, request, answer, rss_mib
from runtime_helpers import graph, rule, fs, ag


async def main(url, pid, n):
    r0 = rss_mib(pid)
    t = time.time()
    opened = refused = 0
    last = ""
    async with connect(url) as a, connect(url) as b:
        m1 = await register(a, "m1")
        m2 = await register(b, "m2")
        g = graph(m1, [rule(fs(m1), ag(m2)), rule(fs(m2), ag(m1))])
        ctx = {f"k{i}": "x" * 1000 for i in range(900)}

        async def acker():
            k = 0
            while True:
                f = json.loads(await b.recv())
                if f.get("kind") == "notify" and f["envelope"]["event_type"] == "ag2.channel.invite":
                    k += 1
                    await b.send(
                        request(
                            "post_envelope",
                            {
                                "envelope": {
                                    "channel_id": f["envelope"]["channel_id"],
                                    "sender_id": m2,
                                    "audience": None,
                                    "event_type": "ag2.channel.invite.ack",
                                    "event_data": {},
                                }
                            },
                            f"a{k}",
                        )
                    )

        task = asyncio.ensure_future(acker())
        for i in range(n):
            await a.send(
                request(
                    "create_channel",
                    {"creator_id": m1, "manifest_type": "workflow", "participants": [m2], "knobs": {"graph": g, "context_vars": ctx}},
                    f"o{i}",
                )
            )
            f = await answer(a, f"o{i}")
            if f["ok"]:
                opened += 1
            else:
                refused += 1
                last = f["error_message"]
        task.cancel()
    print(
        f"{n} workflow sessions with 900 KB knobs: opened {opened} refused {refused} in {time.time() - t:.1f}s; hub RSS {r0:.0f} -> {rss_mib(pid):.0f} MiB"  # noqa: E501
    )
    if refused:
        print("  ", last[:200])


src = sys.argv[1]
with served(src, sys.argv[3:]) as (url, pid):
    asyncio.run(main(url, pid, int(sys.argv[2])))
