"""Two agents, SESSIONS conversations, PER packets of 900 KiB into each: how many are taken and
the hub's RSS.  python3 bench/serve_attack/livebytes.py SRC SESSIONS PER [serve flags]

session 14 (branch serve-attack14): the figures in its commit messages and docs/serve.md, "Limits"."""

import asyncio
import sys
import time
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hub import served
from test_serve_bounds import connect, register, request, answer, open_conversation, rss_mib


async def main(url, pid, sessions, per):
    r0 = rss_mib(pid)
    async with connect(url) as a, connect(url) as b:
        m1 = await register(a, "m1")
        m2 = await register(b, "m2")
        for who, ws in ((m1, a), (m2, b)):
            await ws.send(request("set_rule", {"agent_id": who, "rule": {"limits": {"inbox": {"max_pending": 0}}}}, "sr"))
            assert (await answer(ws, "sr"))["ok"]

        async def drain():
            while True:
                await b.recv()

        sids = []
        for _s in range(sessions):
            sids.append(await open_conversation(a, m1, b, m2))
        d = asyncio.ensure_future(drain())
        body = "x" * (900 << 10)
        t = time.time()
        ok = refused = 0
        for sid in sids:
            for _i in range(per):
                await a.send(
                    request(
                        "post_envelope",
                        {
                            "envelope": {
                                "channel_id": sid,
                                "sender_id": m1,
                                "audience": None,
                                "event_type": "ag2.packet",
                                "event_data": {"body": body},
                            }
                        },
                        "p",
                    )
                )
                r = await answer(a, "p")
                if r["ok"]:
                    ok += 1
                else:
                    refused += 1
        d.cancel()
        print(
            f"{sessions} sessions x {per} posts of 900 KiB: ok {ok} refused {refused} in {time.time() - t:.1f}s; hub RSS {r0:.0f} -> {rss_mib(pid):.0f} MiB"  # noqa: E501
        )


src = sys.argv[1]
with served(src, sys.argv[4:]) as (url, pid):
    asyncio.run(main(url, pid, int(sys.argv[2]), int(sys.argv[3])))
