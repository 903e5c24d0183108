"""`turnflow serve`'s keepalive finds dead peers, not slow ones (docs/serve.md, "Limits").

The stall this guards against: AG2's client with 2,000 turns in flight on one event loop read its
socket minutes behind; a ping queued behind that backlog was answered later than the pong timeout,
the hub closed the connection, and AG2's client (which does not reconnect) waited forever."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

pytest.importorskip("websockets")

from turnflow.serve.app import Options, serve  # noqa: E402
from turnflow.serve.server import Limits  # noqa: E402

PING = 0.1  # pings every 0.1 s; before the fix a pong later than 0.1 s closed the connection
# the test that counts pings: an interval a stall of the test's own loop (a full collection late in a
# worker, the process descheduled on a loaded machine) cannot make it miss half of
COUNTED = 0.2


def request(op, params, rid):
    return json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params})


def register(name):
    return request("register", {"passport": {"name": name}, "resume": {}, "skill_md": None, "rule": {}}, "reg")


class Closed(logging.Handler):
    """The server's 'closing connection' warnings, as they are logged."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reasons: list[str] = []
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.reasons.append(record.getMessage())
        self.event.set()


async def with_server(tmp_path, body, ping=PING):
    urls: asyncio.Queue = asyncio.Queue()
    stop = asyncio.Event()
    opts = Options(port=0, store=str(tmp_path / "hub.db"), limits=Limits(ping_interval=ping, ping_timeout=ping))
    closed = Closed()
    logger = logging.getLogger("turnflow.serve")
    logger.addHandler(closed)
    task = asyncio.get_running_loop().create_task(serve(opts, urls.put_nowait, stop))
    try:
        url = await asyncio.wait_for(urls.get(), 60)
        return await body(url, closed)
    finally:
        logger.removeHandler(closed)
        stop.set()
        await asyncio.wait_for(task, 60)


def test_a_client_that_reads_late_but_keeps_talking_is_not_dropped(tmp_path):
    """The client keeps 50 requests in flight and reads each answer 10 ms after the one before:
    its reading lags half a second behind (five times the ping timeout), as AG2's client does
    with thousands of turns in flight; at the end it reads its backlog in silence. Every one of its
    100 requests is answered and the hub closes nothing."""
    from websockets.asyncio.client import connect

    async def body(url, closed):
        async with connect(url, ping_interval=None, max_queue=4) as ws:
            await ws.send(register("slow"))
            assert json.loads(await ws.recv())["ok"] is True
            total, window, answered, sent = 100, 50, 0, 0
            for _ in range(window):
                await ws.send(request("list_agents", {}, f"q{sent}"))
                sent += 1
            while answered < total:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert reply.get("ok") is True, reply
                answered += 1
                await asyncio.sleep(0.01)  # a busy client: each answer takes it a while to handle
                if sent < total:
                    await ws.send(request("list_agents", {}, f"q{sent}"))
                    sent += 1
            lag = window * 0.01
            assert lag > 4 * PING
            return answered, closed.reasons

    answered, reasons = asyncio.run(asyncio.wait_for(with_server(tmp_path, body), 120))
    assert answered == 100
    assert reasons == []


def test_pings_go_out_every_interval_from_the_one_keepalive_task(tmp_path):
    """The hub's pings (one task sends them for every connection, each written by the
    connection's writer) reach a client that sends nothing, every `ping_interval`; the client's
    pongs close nothing."""
    from websockets.asyncio.client import connect
    from websockets.frames import Opcode

    async def body(url, closed):
        async with connect(url, ping_interval=None) as ws:
            pings = []
            process = ws.process_event

            def seen(event):
                if event.opcode is Opcode.PING:
                    pings.append(event.data)
                return process(event)

            ws.process_event = seen
            await ws.send(register("quiet"))
            assert json.loads(await ws.recv())["ok"] is True
            await asyncio.sleep(COUNTED * 5.5)
            await ws.send(json.dumps({"kind": "ping"}))
            assert json.loads(await ws.recv()) == {"kind": "pong"}  # still served
            return len(pings), closed.reasons

    count, reasons = asyncio.run(asyncio.wait_for(with_server(tmp_path, body, COUNTED), 60))
    assert 3 <= count <= 7
    assert reasons == []


@pytest.mark.parametrize("idle, timeout", [(1e300, 20.0), (20.0, 1e300), (1e9, 1e9)])
def test_keepalive_seconds_past_what_the_kernel_takes_are_capped_not_a_traceback(idle, timeout):
    """`--ping-interval 1e300` (or `--ping-timeout`): every connection failed in its handshake with a
    TypeError from setsockopt (the client saw no close frame, the log a traceback); now each option
    is capped at what the kernel takes (docs/serve.md): keepalive idle and interval 32,767 s, the
    user timeout 2^31 - 1 ms."""
    import socket

    from turnflow.serve.server import tcp_keepalive

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        tcp_keepalive(sock, idle, timeout)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == min(32767, int(idle))
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == min(32767, int(timeout / 4))
        if hasattr(socket, "TCP_USER_TIMEOUT"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 2**31 - 1
    finally:
        sock.close()
