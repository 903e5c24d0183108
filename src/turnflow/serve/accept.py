"""The listening sockets and their accept loop, the same on every event loop: bound like
`loop.create_server` binds them, read with `loop.add_reader`, each connection handed to
`loop.connect_accepted_socket`.

Why not `create_server`: when the process has no descriptor left (EMFILE, ENFILE) or no memory for
a socket, asyncio's own accept loop stops accepting for a second and leaves the waiting
connections in the listen backlog, where they are taken (and served or refused with 1013) once
descriptors are free; uvloop's (libuv's) accepts each one on a reserved descriptor and closes it
at once, so the client sees its handshake dropped. Here both loops keep asyncio's behaviour: the
failure goes to the loop's exception handler (serve's `AcceptErrors`: counted, logged once per
interval) and the sockets are not read for `RETRY_DELAY` seconds.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any, Callable

BACKLOG = 100  # the listen backlog, and the most connections accepted per readiness (asyncio's default)
RETRY_DELAY = 1.0  # seconds without accepting after running out of descriptors or memory (asyncio's)
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


async def bind(host: str, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets for every address `host` resolves to, as `create_server`
    makes them (SO_REUSEADDR on POSIX, IPv6 sockets IPv6-only). OSError when none can be bound."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _canon, address in dict.fromkeys(infos):  # (getaddrinfo may repeat one)
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            if hasattr(socket, "SO_REUSEADDR") and not hasattr(socket, "SO_EXCLUSIVEADDRUSE"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise OSError(exc.errno, f"error while attempting to bind on address {address!r}: "
                                         f"{exc.strerror}") from None
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(errno.EADDRNOTAVAIL, f"{host!r} resolves to no address")
    return sockets


class Acceptor:
    """Accept connections on `sockets` and give each to `factory`'s protocol, until `close`."""

    def __init__(self, sockets: list[socket.socket], factory: Callable[[], asyncio.BaseProtocol]) -> None:
        self.loop = asyncio.get_running_loop()
        self.sockets = sockets
        self.factory = factory
        self.accepting = False
        self._connecting: set[asyncio.Task[Any]] = set()
        self._resume: "asyncio.TimerHandle | None" = None
        self._start()

    def _start(self) -> None:
        self._resume = None
        self.accepting = True
        for sock in self.sockets:
            self.loop.add_reader(sock.fileno(), self._ready, sock)

    def _pause(self) -> None:
        self.accepting = False
        for sock in self.sockets:
            self.loop.remove_reader(sock.fileno())

    def _ready(self, sock: socket.socket) -> None:
        for _ in range(BACKLOG):
            try:
                conn, _address = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # nothing more waiting, or a client that gave up meanwhile
            except OSError as exc:
                if exc.errno not in OUT_OF_RESOURCES:
                    raise
                self.loop.call_exception_handler({
                    "message": "socket.accept() out of system resource", "exception": exc, "socket": sock})
                self._pause()
                self._resume = self.loop.call_later(RETRY_DELAY, self._start)
                return
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):  # (as asyncio's transports do)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self.loop.create_task(self._connect(conn))
            self._connecting.add(task)
            task.add_done_callback(self._connecting.discard)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.factory, conn)
        except BaseException as exc:  # the client went away first, or the hub stops: nothing was made of it
            conn.close()
            if not isinstance(exc, Exception):
                raise

    def close(self) -> None:
        """Stop accepting and close the listening sockets (connections already made stay)."""
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if self.accepting:
            self._pause()
        for sock in self.sockets:
            sock.close()
        for task in self._connecting:
            task.cancel()
