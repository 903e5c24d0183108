"""The WebSocket server: one `Connection` per client, frames decoded and answered, notifications
queued per connection, limits enforced (docs/serve.md, "Limits").

A connection's outgoing frames go through its own bounded queue, written by its own task: the hub
and the other connections never wait on a socket. A client whose queue fills (it stopped reading)
is disconnected; so is one that binds no agent within the idle timeout. Requests of a connection
run concurrently (at most `max_inflight` at once; the reader waits beyond that, so a flooding
client is slowed, not the hub).

Dead peers are found by the kernel, not by pong latency: WebSocket pings go out every
`ping_interval` (keeping proxies and NATs open) but a late pong closes nothing, because a live
client whose event loop is busy reads its backlog late, and a ping with it (AG2's client with
thousands of turns in flight answered minutes late; closed, it never reconnects and its waits hang).
A vanished host is closed by TCP keepalive probes and `TCP_USER_TIMEOUT` (unacknowledged data):
`ping_interval + ping_timeout` seconds. A client that is alive but stops reading is closed by its
bounded send queue."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any, Optional

from turnflow.runtime.errors import RuntimeErrorBase
from turnflow.serve import frames
from turnflow.serve.frames import FrameError
from turnflow.serve.ops import OpError, Ops

log = logging.getLogger("turnflow.serve")
# ops that wait for a group commit or for invitees' acks; the others answer from memory (or one read)
WAITING_OPS = frozenset({"create_channel", "post_envelope", "close_channel"})


@dataclass
class Limits:
    max_frame_bytes: int = 1 << 20
    max_connections: int = 1024
    send_queue: int = 4096  # frames waiting for one client before it is disconnected
    idle_timeout: float = 60.0  # seconds a connection may stay without a bound agent
    max_inflight: int = 64  # concurrent requests per connection
    ping_interval: Optional[float] = 20.0  # WebSocket pings, and TCP keepalive probes after this idle time
    ping_timeout: float = 20.0  # a peer whose host acknowledges nothing this much longer is closed


def tcp_keepalive(sock: Any, idle: float, timeout: float) -> None:
    """Let the kernel close a connection to a vanished host: keepalive probes after `idle` seconds
    of quiet, unanswered for `timeout`; data unacknowledged for `idle + timeout` (Linux's
    TCP_USER_TIMEOUT). Where an option does not exist (other systems), it is left out."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", idle), ("TCP_KEEPINTVL", timeout / 4), ("TCP_KEEPCNT", 4),
                        ("TCP_USER_TIMEOUT", (idle + timeout) * 1000)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), max(1, int(value))))
    for level, option, value in options:
        with contextlib.suppress(OSError):
            sock.setsockopt(level, option, value)


class Connection:
    __slots__ = ("ws", "endpoint_id", "agents", "opened_at", "closed", "_queue", "_wake", "_limit", "_tasks",
                 "_slots", "writer")

    def __init__(self, ws: Any, limits: Limits, now: float) -> None:
        self.ws = ws
        self.endpoint_id = uuid.uuid4().hex
        self.agents: set = set()
        self.opened_at = now
        self.closed = False
        self._queue: deque = deque()
        self._wake = asyncio.Event()
        self._limit = limits.send_queue
        self._tasks: set = set()
        self._slots = asyncio.Semaphore(limits.max_inflight)
        self.writer: Optional[asyncio.Task] = None

    def send(self, text: str) -> None:
        if self.closed:
            return
        if len(self._queue) >= self._limit:
            self.drop(1008, "send queue full: the client is not reading")
            return
        self._queue.append(text)
        self._wake.set()

    def drop(self, code: int, reason: str) -> None:
        """Close the connection without waiting (nothing more is queued for it)."""
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self._wake.set()
        log.warning("closing connection %s: %s", self.endpoint_id, reason)
        task = asyncio.get_running_loop().create_task(self.ws.close(code, reason))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def write_loop(self) -> None:
        """Write what is queued, every frame queued meanwhile in one socket write (the pattern of
        websockets' `send_context` docs: frames built by its protocol, flushed with flow control)."""
        queue, ws = self._queue, self.ws
        try:
            while not self.closed:
                while queue:
                    async with ws.send_context():
                        protocol = ws.protocol
                        while queue:
                            protocol.send_text(queue.popleft().encode())
                        chunks = protocol.data_to_send()
                        if all(chunks):
                            ws.transport.write(b"".join(chunks))
                        else:  # an end of stream among them (a close): write them as websockets would
                            for chunk in chunks:
                                ws.transport.write(chunk) if chunk else ws.transport.write_eof()
                self._wake.clear()
                await self._wake.wait()
        except Exception:  # the socket went away: the reader sees it too
            self.closed = True

    async def spawn(self, coro: Any) -> None:
        await self._slots.acquire()
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        self._slots.release()


class Server:
    def __init__(self, ops: Ops, limits: Limits) -> None:
        self.ops = ops
        self.limits = limits
        self.connections: set[Connection] = set()

    async def handle(self, ws: Any) -> None:
        loop = asyncio.get_running_loop()
        if len(self.connections) >= self.limits.max_connections:
            await ws.close(1013, "too many connections")
            return
        conn = Connection(ws, self.limits, loop.time())
        self.connections.add(conn)
        sock = ws.transport.get_extra_info("socket")
        if sock is not None and self.limits.ping_interval is not None:
            tcp_keepalive(sock, self.limits.ping_interval, self.limits.ping_timeout)
        conn.writer = loop.create_task(conn.write_loop())
        try:
            async for message in ws:
                await self.on_message(conn, message)
        except Exception as exc:  # a dropped socket (ConnectionClosed) or a bug: the connection ends, the hub does not
            if not type(exc).__name__.startswith("ConnectionClosed"):
                log.exception("connection %s failed", conn.endpoint_id)
        finally:
            self.connections.discard(conn)
            self.ops.unbind_all(conn)
            conn.closed = True
            conn._wake.set()

    async def on_message(self, conn: Connection, message: Any) -> None:
        try:
            frame = frames.decode(message)
        except FrameError as exc:
            if exc.request_id is not None:
                conn.send(frames.failure(exc.request_id, exc.code, exc.message))
            else:
                conn.send(frames.error(exc.code, exc.message))
            return
        kind = frame["kind"]
        if kind == "request":
            if frame["op"] in WAITING_OPS:  # may wait for a commit or for acks: its own task
                await conn.spawn(self.request(conn, frame["request_id"], frame["op"], frame["params"]))
            else:  # answered without waiting: inline (no task to create)
                await self.request(conn, frame["request_id"], frame["op"], frame["params"])
        elif kind == "hello":
            await self.ops.hello(conn, frame)
        elif kind == "receipt":
            self.ops.receipt(conn, frame)
        elif kind == "ping":
            conn.send(frames.PONG)

    async def request(self, conn: Connection, request_id: str, op: str, params: dict) -> None:
        try:
            result = await self.ops.call(conn, op, params)
            text = frames.response(request_id, result)
        except OpError as exc:
            text = frames.failure(request_id, exc.code, exc.message)
        except (RuntimeErrorBase, KeyError, TypeError, ValueError, AttributeError) as exc:
            # wrong shapes deeper in the params (a participant that is not an object, ...)
            text = frames.failure(request_id, frames.PROTOCOL_ERROR, f"{type(exc).__name__}: {str(exc)[:300]}")
        except Exception as exc:
            log.exception("op %s failed", op)
            text = frames.failure(request_id, "error", f"{type(exc).__name__}: {str(exc)[:300]}")
        conn.send(text)

    async def housekeeping(self, interval: float = 1.0) -> None:
        """Every `interval`: write the delivery cursors, close connections idle without an agent."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                self.ops.registry.flush()
            now = loop.time()
            for conn in list(self.connections):
                if not conn.agents and now - conn.opened_at > self.limits.idle_timeout:
                    conn.drop(1008, "idle: no agent bound")
