"""The WebSocket server: frames decoded and answered, notifications queued per connection, limits
enforced (docs/serve.md, "Limits"). The connections are wsproto.py's `Link`s (one `asyncio.Protocol`
each on websockets' Sans-I/O layer: frames handled as they are read, `Server.take`; queued frames
written once per loop tick); websockets' own asyncio server, used before, is gone (one layer, proven
against websockets' protocol by tests/test_serve_wsproto_fuzz.py).

Every buffer is bounded in bytes. A connection's outgoing frames go through its own queue, written
at most WRITE_BATCH bytes at a time while its socket takes them: the hub and the other connections
never wait on a socket. A client whose backlog (queue and socket buffer) passes `send_buffer_bytes`, or that needs
more while all clients' backlogs pass `total_send_bytes`, is disconnected; so is one that binds no
agent within the idle timeout (on a hub with API keys: the auth timeout, and it may only register or
attach meanwhile). Requests of a connection run concurrently (at most `max_inflight` and
`inflight_bytes` of frames at once; the reader waits beyond that, so a flooding client is slowed,
not the hub). New connections are refused (1013) beyond the cap, beyond `max_per_peer` from one
address, and beyond the share of connections without an agent (`Server.refusal`).

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
import functools
import logging
import socket
import sys
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from turnflow.runtime.errors import ProtocolError, RuntimeErrorBase
from turnflow.serve import frames
from turnflow.serve.frames import FrameError
from turnflow.serve.ops import OpError, Ops, as_op_error

log = logging.getLogger("turnflow.serve")
# ops that wait for a group commit or for invitees' acks, or (`list_channels`) let the event loop run
# while they read many ended channels; the others answer from memory (or one read)
WAITING_OPS = frozenset({"create_channel", "post_envelope", "close_channel", "list_channels", "list_agents"})


@dataclass
class Limits:
    """Every bound of the server (docs/serve.md, "Limits"). The send budgets count the memory a
    queued frame holds (`sys.getsizeof` of its text: its length and 49 bytes for ASCII JSON, up to
    four bytes a character otherwise), the reply cap its characters, the in-flight cap the frames'
    bytes as received."""

    max_frame_bytes: int = 1 << 20
    max_connections: int = 1024
    send_queue: int = 4096  # frames waiting for one client before it is disconnected
    send_buffer_bytes: int = 8 << 20  # bytes waiting for one client (queue + socket buffer) before it is disconnected
    total_send_bytes: int = 256 << 20  # bytes waiting for all clients: past it, a client with a backlog is disconnected
    max_reply_bytes: int = 16 << 20  # a larger answer to one request is refused (read_wal: page with since/until)
    idle_timeout: float = 60.0  # seconds a connection may stay without a bound agent
    auth_timeout: float = 10.0  # hub with API keys: seconds a connection may stay without a bound agent
    max_inflight: int = 64  # concurrent requests per connection
    inflight_bytes: int = 4 << 20  # bytes of request frames one connection has in hand at once
    max_per_peer: int = 128  # connections from one IP address (0: no limit)
    max_unbound: int = 0  # connections without a bound agent at once (0: an eighth of the cap, at least 8)
    ping_interval: Optional[float] = 20.0  # WebSocket pings, and TCP keepalive probes after this idle time
    ping_timeout: float = 20.0  # a peer whose host acknowledges nothing this much longer is closed

    def unbound_cap(self, cap: int) -> int:
        return self.max_unbound or max(8, cap // 8)


# what a connection with no bound agent may ask of a hub with API keys: what AG2's `register` and
# `attach` send before their agent is bound (attach looks the name up, then says hello)
UNBOUND_OPS = frozenset({"register", "find_agent_id", "get_agent", "get_resume", "get_rule"})
UNBOUND_REQUESTS = 16  # requests such a connection may send before it binds an agent
WRITE_BATCH = 256 << 10  # bytes handed to the socket in one write (then flow control waits for the peer)


class SendBudget:
    """The bytes queued for every connection together (`Limits.total_send_bytes`)."""

    __slots__ = ("used", "limit")

    def __init__(self, limit: int) -> None:
        self.used = 0
        self.limit = limit


def tcp_keepalive(sock: Any, idle: float, timeout: float) -> None:
    """Let the kernel close a connection to a vanished host: keepalive probes after `idle` seconds
    of quiet, unanswered for `timeout`; data unacknowledged for `idle + timeout` (Linux's
    TCP_USER_TIMEOUT). Where an option does not exist (other systems), it is left out. Each is
    capped at what the kernel takes (Linux: 32,767 s for the probes, a C int of milliseconds; a
    larger value was a TypeError in every handshake, or refused and the kernel's default kept)."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value, cap in (("TCP_KEEPIDLE", idle, 32767), ("TCP_KEEPINTVL", timeout / 4, 32767), ("TCP_KEEPCNT", 4, 127),
                             ("TCP_USER_TIMEOUT", (idle + timeout) * 1000, 2**31 - 1)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), max(1, int(min(value, cap)))))
    for level, option, value in options:
        with contextlib.suppress(OSError):
            sock.setsockopt(level, option, value)


class Outbox(Protocol):
    """What `enqueue` reads and changes of a connection (`wsproto.Link`)."""

    closed: bool
    _queue: list[str]
    _queued: int
    _limits: Limits
    _budget: SendBudget

    def backlog(self) -> int: ...

    def drop(self, code: int, reason: str) -> None: ...


class Client(Outbox, Protocol):
    """What the server reads and calls of a connection (`wsproto.Link`)."""

    endpoint_id: str
    agents: set[str]
    peer: str
    opened_at: float
    requests: int  # requests received while no agent is bound

    def send(self, text: str) -> None: ...

    def ping(self) -> None: ...

    def wake(self) -> None: ...

    def _release_queue(self) -> None: ...


def enqueue(conn: Outbox, text: str) -> bool:
    """Queue `text` for `conn`'s client within the limits: False when the connection is closed or
    is dropped for it (its queue or backlog full, or the hub's send budget spent)."""
    if conn.closed:
        return False
    size = sys.getsizeof(text)  # the memory it holds (in O(1); it is encoded when written)
    if conn._queue or conn._queued:
        lim = conn._limits
        if len(conn._queue) >= lim.send_queue:
            conn.drop(1008, "send queue full: the client is not reading")
            return False
        if conn.backlog() + size > lim.send_buffer_bytes:
            conn.drop(1008, f"send buffer full ({lim.send_buffer_bytes} bytes): the client is not reading")
            return False
        if conn._budget.used + size > conn._budget.limit:
            conn.drop(1013, "the hub's send buffers are full: a client with a backlog is disconnected")
            return False
    conn._queue.append(text)
    conn._queued += size
    conn._budget.used += size
    return True


class Suspended(RuntimeError):
    """An op expected to answer without waiting awaited something (a bug: answered as an error)."""


def run_now(coro: Any) -> Any:
    """Run a coroutine that awaits nothing (the ops outside WAITING_OPS, `hello` with a replay
    in the background) to its end, without a task: one `send` of the coroutine protocol; one
    that would wait is closed and `Suspended` raised."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise Suspended("the op waited for something (it must answer at once)")


class Server:
    def __init__(self, ops: Ops, limits: Limits, cap: Optional[int] = None) -> None:
        self.ops = ops
        self.limits = limits
        self.cap = cap or limits.max_connections  # the effective cap (app.py: also what RLIMIT_NOFILE allows)
        self.connections: set[Client] = set()
        self.peers: dict[str, int] = {}  # connections per remote address
        self.budget = SendBudget(limits.total_send_bytes)
        self.keyed = getattr(ops.auth, "keys", None) is not None
        ops.max_reply = limits.max_reply_bytes

    def refusal(self, peer: str) -> Optional[str]:
        """Why a new connection from `peer` is refused (closed with 1013), or None. When the share of
        connections without an agent is full, the newest is refused if its address holds the most
        of them; else the oldest of the address that does is closed to make room (a crowd from one
        address cannot keep other clients from registering)."""
        lim = self.limits
        if len(self.connections) >= self.cap:
            return "too many connections"
        if lim.max_per_peer and self.peers.get(peer, 0) >= lim.max_per_peer:
            return "too many connections from this address"
        unbound = lim.unbound_cap(self.cap)
        if len(self.connections) < unbound:
            return None
        waiting: dict[str, list[Client]] = {}
        for c in self.connections:
            if not c.agents and not c.closed:
                waiting.setdefault(c.peer, []).append(c)
        if sum(map(len, waiting.values())) < unbound:
            return None
        crowd = max(waiting.values(), key=len)
        if len(waiting.get(peer, ())) >= len(crowd):
            return "too many connections without an agent"
        min(crowd, key=lambda c: c.opened_at).drop(1013, "too many connections without an agent")
        return None

    def enter(self, conn: Any, sock: Any) -> None:
        """Count a new connection in (it was not refused) and set its socket's TCP keepalive."""
        self.connections.add(conn)
        self.peers[conn.peer] = self.peers.get(conn.peer, 0) + 1
        if sock is not None and self.limits.ping_interval is not None:
            tcp_keepalive(sock, self.limits.ping_interval, self.limits.ping_timeout)

    def forget(self, conn: Client) -> None:
        self.connections.discard(conn)
        left = self.peers.pop(conn.peer, 1) - 1
        if left:
            self.peers[conn.peer] = left
        self.ops.unbind_all(conn)
        conn.closed = True
        conn._release_queue()
        conn.wake()

    @staticmethod
    def refused(conn: Any, exc: FrameError) -> None:
        """Tell the client why its message holds no frame."""
        if exc.request_id is not None:
            conn.send(frames.failure(exc.request_id, exc.code, exc.message))
        else:
            conn.send(frames.error(exc.code, exc.message))

    def take(self, conn: Any, message: Any) -> None:
        """`on_message` without a reader task (wsproto.py): the frame handled at once; a request
        that waits for a commit or for acks is handed to `conn.start`, which runs it in its own task
        when the connection has a slot, else holds it (and the messages after it)."""
        try:
            frame = frames.decode(message)
        except FrameError as exc:
            self.refused(conn, exc)
            return
        kind = frame["kind"]
        if kind == "request":
            if not conn.agents and self.keyed and not self.unbound_may(conn, frame):
                return
            op = frame["op"]
            if op in WAITING_OPS:
                conn.start(functools.partial(self.request, conn, frame["request_id"], op, frame["params"]),
                           len(message))
            else:
                conn.send(self.answer(conn, frame["request_id"], op, frame["params"]))
        elif kind == "receipt":
            self.ops.receipt(conn, frame)
        elif kind == "hello":
            if not conn.agents and self.keyed and not self.unbound_count(conn):
                return
            run_now(self.ops.hello(conn, frame))  # (the replay goes to `conn.background`: hello waits for nothing)
        elif kind == "ping":
            conn.send(frames.PONG)

    def answer(self, conn: Any, request_id: str, op: str, params: dict[str, Any]) -> str:
        """The answer to a request outside WAITING_OPS, which the ops give without waiting."""
        try:
            coro: Any = self.ops.handler(op)(conn, params)
            try:  # (`run_now`, inline)
                coro.send(None)
            except StopIteration as done:
                result = done.value
            except ProtocolError as exc:
                raise as_op_error(exc) from None
            else:
                coro.close()
                raise Suspended("the op waited for something (it must answer at once)")
            return self._reply(request_id, op, result)
        except Exception as exc:
            return self._failed(request_id, op, exc)

    def _reply(self, request_id: str, op: str, result: Any) -> str:
        text = frames.response(request_id, result)
        if len(text) > self.limits.max_reply_bytes:
            text = frames.failure(request_id, frames.PROTOCOL_ERROR,
                                  f"the answer to {op} is {len(text)} bytes, over this hub's limit of "
                                  f"{self.limits.max_reply_bytes} (--max-reply-bytes): ask for less")
        return text

    def _failed(self, request_id: str, op: str, exc: Exception) -> str:
        if isinstance(exc, OpError):
            return frames.failure(request_id, exc.code, exc.message)
        if isinstance(exc, (RuntimeErrorBase, KeyError, TypeError, ValueError, AttributeError)):
            # wrong shapes deeper in the params (a participant that is not an object, ...)
            return frames.failure(request_id, frames.PROTOCOL_ERROR, f"{type(exc).__name__}: {str(exc)[:300]}")
        log.error("op %s failed", op, exc_info=exc)
        return frames.failure(request_id, "error", f"{type(exc).__name__}: {str(exc)[:300]}")

    def unbound_count(self, conn: Client) -> bool:
        """On a hub with API keys, a connection with no bound agent may send a few requests and
        hellos in all (a key is not guessed on one connection): beyond, it is closed (1008)."""
        conn.requests += 1
        if conn.requests > UNBOUND_REQUESTS:
            conn.drop(1008, f"{UNBOUND_REQUESTS} requests without an authenticated agent")
            return False
        return True

    def unbound_may(self, conn: Client, frame: dict[str, Any]) -> bool:
        """On a hub with API keys, a connection with no bound agent may only register or attach
        (AG2's client looks the name up first)."""
        if not self.unbound_count(conn):
            return False
        if frame["op"] not in UNBOUND_OPS:
            conn.send(frames.failure(frame["request_id"], frames.ACCESS_DENIED,
                                     "authenticate first: this hub has API keys; register or attach (hello) "
                                     "an agent with its key before any other request"))
            return False
        return True

    async def request(self, conn: Client, request_id: str, op: str, params: dict[str, Any]) -> None:
        try:
            coro = self.ops.handler(op)(conn, params)  # (`ops.call`, one coroutine fewer)
            try:
                result = await coro
            except ProtocolError as exc:
                raise as_op_error(exc) from None
            text = self._reply(request_id, op, result)
        except Exception as exc:
            text = self._failed(request_id, op, exc)
        conn.send(text)

    async def keepalive(self, interval: float) -> None:
        """Every `interval`, a WebSocket ping to every connection, written by its writer: one task
        for all of them (websockets' own keepalive is a task per connection, ~1 KiB each)."""
        while True:
            await asyncio.sleep(interval)
            for conn in list(self.connections):
                conn.ping()

    async def housekeeping(self, interval: float = 1.0) -> None:
        """Every `interval`: write the delivery cursors, close connections idle without an agent."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                self.ops.registry.flush()
            now = loop.time()
            timeout = min(self.limits.idle_timeout, self.limits.auth_timeout) if self.keyed else self.limits.idle_timeout
            for conn in list(self.connections):
                if not conn.agents and now - conn.opened_at > timeout:
                    conn.drop(1008, "idle: no agent bound")
