"""The WebSocket layer of `turnflow serve`: one `asyncio.BufferedProtocol` per TCP connection
(every socket read into the listener's one buffer), driving websockets' Sans-I/O `ServerProtocol`
(its documented public layer: bytes in with `receive_data`, frames out with `events_received`,
bytes to write with `data_to_send`).

What websockets' asyncio server did per connection with a task, an assembler and futures is done
here in the transport's callbacks: a message is decoded and handled in `data_received` (requests
answered from memory at once; those that wait for a commit or for acks get their own task), and
what is queued for the client is written once per tick for all connections (`Listener.flush`), at
most WRITE_BATCH bytes a write while the transport's buffer is under its high-water mark.

Behaviour kept from websockets' `serve` as turnflow used it (`app.py` before): the opening
handshake (the same response, the `Server` header, a 503 while shutting down) within OPEN_TIMEOUT
seconds; no extensions (no compression), messages of at most `max_frame_bytes` (1009 beyond,
fragments counted together); invalid UTF-8 in a text message closes with 1007; a ping is answered
with a pong; a close handshake waits at most CLOSE_TIMEOUT seconds for the peer before the socket
is aborted; on shutdown open connections are closed with 1001 (going away). Inbound buffering is
bounded: while a request cannot start (its connection's `max_inflight` / `inflight_bytes` are
taken) the messages after it wait, at most one socket read of them, and the socket is not read
(`pause_reading`) until it starts."""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import sys
import time
import uuid
from typing import Any, Callable, Optional

from websockets.frames import Frame, Opcode
from websockets.http11 import SERVER, Request
from websockets.protocol import OPEN
from websockets.server import ServerProtocol

from turnflow.serve.accept import Acceptor, bind
from turnflow.serve.server import WRITE_BATCH, Limits, SendBudget, enqueue

log = logging.getLogger("turnflow.serve")
OPEN_TIMEOUT = 10.0  # seconds for the opening handshake (websockets' default `open_timeout`)
CLOSE_TIMEOUT = 10.0  # seconds a close handshake waits for the peer (websockets' default `close_timeout`)
WRITE_LIMIT = (32 << 10, 8 << 10)  # the transport's buffer: writes stop above 32 KiB, go on below 8 KiB (websockets' default)
READ_SIZE = 256 << 10  # bytes one socket read takes at most (asyncio's own `max_size` for a plain Protocol)
SLICE = 0.004  # seconds one connection's messages are taken in a row before the others get a turn
_DATA = (Opcode.TEXT, Opcode.BINARY, Opcode.CONT)
_OPCODES = frozenset(int(op) for op in Opcode)  # (the others are reserved: RFC 6455, 5.2)


_HEADS = [bytes((0x81, n)) for n in range(126)]  # a final text frame's header, by payload length below 126


def _xor_mask(payload: bytes, mask: bytes) -> bytes:
    """RFC 6455, 5.3: the payload XOR the repeated 4-byte key (one big-integer XOR, in C)."""
    n = len(payload)
    if not n:
        return b""
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")


_unmask: Callable[[bytes, bytes], bytes] = _xor_mask
try:  # websockets' own C helper for the same XOR (its `speedups` extension, built with its wheels)
    from websockets.speedups import apply_mask as _unmask
except ImportError:  # pragma: no cover - (websockets without its extension: the XOR above)
    pass


class Link(asyncio.BufferedProtocol):
    """One client connection: the WebSocket protocol and what `Server` and `Ops` need of a
    connection (`send`, `ping`, `drop`, `agents`, `endpoint_id`, ...). Read as a `BufferedProtocol`
    into the listener's one read buffer (`get_buffer`, `buffer_updated`): asyncio's `recv` of a
    plain `Protocol` allocates READ_SIZE bytes per read, which the C library maps and unmaps
    (mmap, mremap, munmap and a page fault each read); here the bytes read are copied out once."""

    __slots__ = ("listener", "protocol", "transport", "endpoint_id", "agents", "opened_at", "closed", "peer",
                 "requests", "_queue", "_queued", "_budget", "_limits", "_inflight", "_running", "_room", "_tasks",
                 "_replay", "_ping", "_paused", "_dirty", "_held", "_pending", "_reading", "_timer", "_parts",
                 "_parts_text", "_fast", "_buf", "_need", "_slice_end")

    def __init__(self, listener: "Listener") -> None:
        self.listener = listener
        self.protocol = ServerProtocol(max_size=listener.max_size, logger=listener.logger)
        self.transport: Any = None
        self.endpoint_id = ""
        self.agents: set[str] = set()
        self.opened_at = 0.0
        self.closed = True  # until the handshake is done (nothing can be sent before)
        self.peer = ""
        self.requests = 0
        self._queue: list[str] = []
        self._queued = 0
        self._budget: SendBudget = listener.server.budget
        self._limits: Limits = listener.server.limits
        self._inflight = 0  # bytes of the request frames being handled
        self._running = 0  # requests being handled in their own task
        self._room: Optional[asyncio.Event] = None
        self._tasks: Optional[set[asyncio.Task[Any]]] = None
        self._replay: Optional[asyncio.Task[Any]] = None
        self._ping = False
        self._paused = False  # the transport's buffer is over its high-water mark
        self._dirty = False  # in the listener's list of connections to flush this tick
        self._held: Optional[tuple[Callable[[], Any], int]] = None  # a request waiting for a slot
        self._pending: Optional[list[Any]] = None  # messages received after it
        self._reading = True
        self._timer: Optional[asyncio.TimerHandle] = None  # the handshake's or the close's deadline
        self._parts: Optional[bytearray] = None  # a fragmented message being received
        self._parts_text = False
        self._fast = False  # frames read by `_frames` (after a clean handshake), not the protocol
        self._buf: Optional[bytearray] = None  # a partial frame (`_fast`)
        self._need = 0  # the bytes it needs before it is looked at again
        self._slice_end = 0.0  # (time.monotonic) when the messages taken in a row give the others a turn

    # -- asyncio.Protocol ------------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(*WRITE_LIMIT)
        self.listener.links.add(self)
        self._timer = self.listener.loop.call_later(OPEN_TIMEOUT, self._abort)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.listener.read_view

    def buffer_updated(self, nbytes: int) -> None:
        # (the loop reads the next socket only after this returns: the one buffer is free again)
        self.data_received(self.listener.read_view[:nbytes].tobytes())
        if nbytes == READ_SIZE and self._reading and not self.closed:
            self._take_turns()

    def _take_turns(self) -> None:
        """After a read that filled the buffer (more is likely waiting), the socket is read again
        at the loop's next tick, after the other connections: uvloop (libuv) reads a socket again
        at once while its reads fill the buffer, up to 32 times, so one client sending without
        pause had the loop for 8 MiB of its frames before anyone else (asyncio's loop reads each
        socket once a tick anyway)."""
        self._reading = False
        with contextlib.suppress(Exception):
            self.transport.pause_reading()
        self.listener.loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        if self._pending is None and not self._reading and not self.closed:  # (not held by `start` meanwhile)
            self._reading = True
            with contextlib.suppress(Exception):
                self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        self._slice_end = time.monotonic() + SLICE
        if self._fast:
            buf = self._buf
            if buf is not None:
                buf += data
                if len(buf) < self._need:
                    return
                self._buf = None
                data = bytes(buf)
            self._frames(data)
        else:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        """Bytes through websockets' protocol: the handshake, control frames, fragments, errors."""
        protocol = self.protocol
        if self._queue:  # answers to the frames before these go out before anything the protocol writes (a close)
            self.flush()
        protocol.receive_data(data)
        events = protocol.events_received()
        self._write_out()
        for event in events:
            if isinstance(event, Request):
                self._handshake(event, data.endswith(b"\r\n\r\n") and len(events) == 1)
            elif isinstance(event, Frame) and event.opcode in _DATA:
                message = self._message(event)
                if message is not None:
                    self._dispatch(message)
        if protocol.state is not OPEN:
            self._fast = False
            if protocol.close_expected() and self._timer is None:
                self._timer = self.listener.loop.call_later(CLOSE_TIMEOUT, self._abort)

    def _dispatch(self, message: Any) -> None:
        if not self.closed:
            if self._pending is not None:
                self._pending.append(message)
            else:
                self._take(message)

    def _frames(self, data: bytes) -> None:
        """Whole unfragmented text and binary frames read here (RFC 6455, 5.2: masked, FIN, no RSV
        bit, at most `max_size`, valid UTF-8 in a text frame); any other frame is handed whole to
        the protocol, which answers it (a ping, a close, a fragment) or fails the connection. What
        the protocol refuses at a frame's header (unmasked, a reserved opcode, too big) it is given
        as soon as the header is in, and from a frame it fails the connection for (that, invalid
        UTF-8) on, every byte is the protocol's: what the client sees is what it would see if the
        protocol read every byte (tests/test_serve_wsproto_fuzz.py). A partial frame waits for its
        rest (and goes to the protocol if the server closes the connection meanwhile: `_slow`)."""
        pos, end = 0, len(data)
        while pos < end and self._fast:
            if self._parts is None and end - pos >= 6 and data[pos] == 0x81 and data[pos + 1] & 0x80:
                stop = self._text_frame(data, pos, end)  # the common frame, read at once
                if stop:
                    pos = stop
                    continue
                if not self._fast:  # (not UTF-8: as below)
                    break
            head = self._head(data, pos, end)
            if head is None:  # (not all in: kept; or refused: the protocol's, from this frame on)
                return
            start, length = head
            stop = start + 4 + length
            if stop > end:
                self._wait(data, pos, stop)
                return
            head1 = data[pos]
            opcode = head1 & 0x0F
            if head1 & 0xF0 != 0x80 or opcode not in (1, 2) or self._parts is not None:
                if head1 & 0x8F == 0x80 and self._bad_text(data[start:stop]):
                    self._fast = False  # (the last fragment of a text message not UTF-8: as for a text frame)
                    break
                self._feed(data[pos:stop])  # (the protocol's buffer is left empty: a whole frame)
                pos = stop
                continue
            payload = _unmask(data[start + 4:stop], data[start:start + 4])
            if opcode == 2:
                self._dispatch(payload)
                pos = stop
                continue
            try:
                text = payload.decode()
            except UnicodeDecodeError:  # the protocol reads it and what follows (a ping behind it is
                self._fast = False  # answered before the 1007, as when every byte is the protocol's)
                break
            pos = stop
            self._dispatch(text)
        if pos < end and not self._fast:  # (a close or an error on the way: the rest is the protocol's)
            self._feed(data[pos:])

    def _text_frame(self, data: bytes, pos: int, end: int) -> int:
        """The frame at `pos`, which starts as a final masked text frame, read and taken at once when
        it is all in, at most `max_size` and valid UTF-8 (as `_frames` reads a text frame): where it
        ends. 0 when `_frames` reads it the long way (not all in, too big, a 64-bit length) and when
        it is not UTF-8 (`_fast` cleared: the protocol's from this frame on)."""
        length, start = data[pos + 1] & 0x7F, pos + 2
        if length == 126:
            length, start = (data[pos + 2] << 8) | data[pos + 3], pos + 4
        elif length == 127:
            return 0
        stop = start + 4 + length
        if length > self.listener.max_size or stop > end:
            return 0
        try:
            text = _unmask(data[start + 4:stop], data[start:start + 4]).decode()
        except UnicodeDecodeError:
            self._fast = False
            return 0
        if not self.closed:  # `_dispatch` and `_take`, inline
            if self._pending is not None:
                self._pending.append(text)
            else:
                try:
                    self.listener.server.take(self, text)
                except Exception:  # a bug: this connection ends, the hub does not
                    log.exception("connection %s failed", self.endpoint_id)
                    self.drop(1011, "internal error")
                if self._pending is None and time.monotonic() > self._slice_end:
                    self._give_turn()
        return stop

    def _head(self, data: bytes, pos: int, end: int) -> Optional[tuple[int, int]]:
        """The header of the frame at `pos`: where its mask starts and its payload's length. None
        when the header is not all in (kept: `_wait`) or the protocol refuses the frame at its
        header (unmasked, a reserved opcode: at its first two bytes; too big, a fragment counted
        with those before it): it is handed everything from there on and fails the connection."""
        if end - pos < 2:
            self._wait(data, pos, pos + 2)
            return None
        head1, head2 = data[pos], data[pos + 1]
        length, start = head2 & 0x7F, pos + 2
        if head2 & 0x80 and head1 & 0x0F in _OPCODES:
            if length >= 126:
                start += 2 if length == 126 else 8
                if end < start:
                    self._wait(data, pos, start)
                    return None
                length = int.from_bytes(data[pos + 2:start], "big")
            parts, size = self._parts, self.listener.max_size
            if length <= (size if parts is None else size - len(parts)):
                return start, length
        self._fast = False
        self._feed(data[pos:])
        return None

    def _bad_text(self, frame: bytes) -> bool:
        """A final continuation frame (`frame`: its mask and payload) ends a text message that is
        not UTF-8 (the connection fails with 1007 when the protocol has read it: `_message`)."""
        parts = self._parts
        if parts is None or not self._parts_text:
            return False
        try:
            (bytes(parts) + _unmask(frame[4:], frame[:4])).decode()
        except UnicodeDecodeError:
            return True
        return False

    def _slow(self) -> None:
        """Every byte from here on read by the protocol, from the partial frame `_frames` holds on
        (which the protocol only keeps: `_frames` hands it at once what it would refuse)."""
        self._fast = False
        buf, self._buf = self._buf, None
        if buf:
            self.protocol.receive_data(bytes(buf))

    def _wait(self, data: bytes, pos: int, need: int) -> None:
        """Keep a partial frame until `need - pos` bytes of it are in."""
        self._buf = bytearray(data[pos:])
        self._need = need - pos

    def eof_received(self) -> Optional[bool]:
        self._slow()  # (the protocol tells an end of stream inside a frame from one between frames)
        self.protocol.receive_eof()
        self.protocol.events_received()
        self._write_out()
        return None

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._slow()
        self.protocol.receive_eof()  # (idempotent: the protocol is CLOSED)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = self._held = None
        self._paused = False
        if self.endpoint_id:
            self.listener.server.forget(self)  # (closed, its queue released, its agents unbound)
        self.closed = True
        self.listener.lost(self)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._queue or self._ping:
            self._mark()
        self._signal()

    # -- the opening handshake ---------------------------------------------------------------------
    def _handshake(self, request: Request, alone: bool) -> None:
        """(`alone`: the request ended the bytes received, so the protocol holds none beyond it and
        frames can be read here from the next byte on.)"""
        protocol, listener = self.protocol, self.listener
        response = protocol.accept(request)
        response.headers["Server"] = SERVER
        if response.status_code == http.HTTPStatus.SWITCHING_PROTOCOLS and not listener.serving:
            response = protocol.reject(http.HTTPStatus.SERVICE_UNAVAILABLE, "Server is shutting down.\n")
            response.headers["Server"] = SERVER
        protocol.send_response(response)
        self._write_out()
        if protocol.state is not OPEN:  # rejected: the response is written, then the socket closed
            self.transport.close()
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        server = listener.server
        address = self.transport.get_extra_info("peername")
        self.peer = str(address[0]) if isinstance(address, tuple) and address else ""
        refused = server.refusal(self.peer)
        if refused is not None:
            protocol.send_close(1013, refused)
            self._write_out()
            self._timer = listener.loop.call_later(CLOSE_TIMEOUT, self._abort)
            return
        self.endpoint_id = uuid.uuid4().hex
        self.opened_at = listener.loop.time()
        self.closed = False
        server.enter(self, self.transport.get_extra_info("socket"))
        self._fast = alone

    # -- reading -----------------------------------------------------------------------------------
    def _message(self, frame: Any) -> Any:
        """A whole message (str for text, bytes for binary) once its last fragment is in, else None;
        invalid UTF-8 in a text message closes the connection with 1007 (as websockets' reader did)."""
        if frame.opcode is Opcode.CONT:
            parts = self._parts
            if parts is None:  # (the protocol refuses a stray continuation before this)
                return None
            parts += frame.data
            if not frame.fin:
                return None
            self._parts = None
            data: Any = bytes(parts)
            text = self._parts_text
        else:
            if not frame.fin:
                self._parts = bytearray(frame.data)
                self._parts_text = frame.opcode is Opcode.TEXT
                return None
            data, text = frame.data, frame.opcode is Opcode.TEXT
        if not text:
            return bytes(data)
        try:
            return bytes(data).decode()
        except UnicodeDecodeError as exc:
            if self.protocol.state is OPEN:
                self.flush()
                self.protocol.fail(1007, f"{exc.reason} at position {exc.start}")
                self._write_out()
            self.closed = True
            return None

    def _take(self, message: Any) -> None:
        try:
            self.listener.server.take(self, message)
        except Exception:  # a bug: this connection ends, the hub does not
            log.exception("connection %s failed", self.endpoint_id)
            self.drop(1011, "internal error")
        if self._pending is None and time.monotonic() > self._slice_end:
            self._give_turn()

    def _give_turn(self) -> None:
        """This connection's messages have been taken for SLICE seconds in a row (requests answered
        at once: a read of 256 KiB holds thousands, and some ops scan the registry): the rest of
        them wait (`_pending`, as behind a held request) and the socket is not read while the
        other connections get a turn; they are taken at the loop's next tick (`_drain`). Before,
        every message of a read was taken before anyone else: 100 `list_agents` with a query
        over 54 MB of résumés kept another client waiting 10 s for a pong."""
        if self.closed:
            return
        self._pending = []
        if self._reading:
            self._reading = False
            with contextlib.suppress(Exception):
                self.transport.pause_reading()
        self.listener.loop.call_soon(self._turn_again)

    def _turn_again(self) -> None:
        if self._held is None:  # (else `_done` takes them when the held request runs)
            self._drain()

    def _drain(self) -> None:
        """Take the messages kept (behind a held request, or after a used-up turn), SLICE seconds
        of them at a time; read the socket again when none is left."""
        pending, self._pending = self._pending, None
        self._slice_end = time.monotonic() + SLICE
        for i, message in enumerate(pending or ()):
            if self.closed:
                return
            if self._pending is not None:  # held again, or the turn is used up: the rest waits behind
                self._pending.extend(pending[i:])
                return
            self._take(message)
        if self._pending is None and not self._reading and not self.closed:
            self._reading = True
            with contextlib.suppress(Exception):
                self.transport.resume_reading()

    def start(self, request: Callable[[], Any], size: int) -> None:
        """Run a request in its own task when the connection has a slot for it (at most
        `max_inflight` of them, holding at most `inflight_bytes` of request frames, one larger frame
        alone); else hold it, keep the messages after it and stop reading the socket until it runs."""
        if self._held is None and self._has_room(size):
            self._run(request, size)
            return
        self._held = (request, size)
        if self._pending is None:
            self._pending = []
        if self._reading:
            self._reading = False
            with contextlib.suppress(Exception):
                self.transport.pause_reading()

    def _has_room(self, size: int) -> bool:
        lim = self._limits
        return self._running < lim.max_inflight and (not self._inflight or self._inflight + size <= lim.inflight_bytes)

    def _run(self, request: Callable[[], Any], size: int) -> None:
        self._running += 1
        self._inflight += size
        task = self.listener.loop.create_task(self._job(request(), size))
        if self._tasks is None:
            self._tasks = set()
        self._tasks.add(task)

    async def _job(self, request: Any, size: int) -> None:
        """A request's task: the request, then its slot given back in the task's last step (no
        done callback: one loop callback fewer per request)."""
        try:
            await request
        finally:
            self._done(asyncio.current_task(), size)

    def _done(self, task: "Optional[asyncio.Task[Any]]", size: int) -> None:
        if self._tasks is not None:
            self._tasks.discard(task)
        self._running -= 1
        self._inflight -= size
        self._signal()
        held = self._held
        if held is None or self.closed or not self._has_room(held[1]):
            return
        self._held = None
        self._run(*held)
        self._drain()

    # -- writing -----------------------------------------------------------------------------------
    def backlog(self) -> int:
        """Bytes waiting for this client: queued here and in the socket's buffer."""
        transport = self.transport
        return self._queued + (transport.get_write_buffer_size() if transport is not None else 0)

    def send(self, text: str) -> None:
        if self._queue or self._queued or self.closed:  # (the limits: `enqueue`)
            if not enqueue(self, text):
                return
        else:  # nothing waits for this client: `enqueue` checks no limit
            size = sys.getsizeof(text)
            self._queue.append(text)
            self._queued += size
            self._budget.used += size
        if not self._dirty:  # (`_mark`, inline)
            self._dirty = True
            listener = self.listener
            if not listener._dirty:
                listener.loop.call_soon(listener.flush)
            listener._dirty.append(self)

    def ping(self) -> None:
        """A WebSocket ping at the next flush (its pong is not waited for: see server.py)."""
        if not self.closed:
            self._ping = True
            if not self._dirty:
                self._mark()

    def wake(self) -> None:
        """(The old writer's wake-up: here the flush is scheduled by `send` itself.)"""

    def _mark(self) -> None:
        self._dirty = True
        self.listener.dirty(self)

    def flush(self) -> None:
        """Write the due ping and the queued frames, WRITE_BATCH bytes a write, while the
        transport's buffer is under its high-water mark (`resume_writing` flushes the rest)."""
        self._dirty = False
        if self.closed or self.protocol.state is not OPEN:
            return
        protocol, queue = self.protocol, self._queue
        if self._ping:
            self._ping = False
            protocol.send_ping(b"")
            self._write_out()  # (before the frames: nothing of the protocol's may wait behind them)
        sizeof, heads = sys.getsizeof, _HEADS
        while queue and not self._paused:
            whole = self._queued < WRITE_BATCH  # (all of it in this write: its size is `_queued`, the sum of its texts')
            batch = taken = 0
            out: list[bytes] = []
            add = out.append
            for text in queue:
                try:
                    data = text.encode()
                except UnicodeEncodeError:  # a lone surrogate: JSON's own escape, which reads back the same
                    data = text.encode("utf-8", "backslashreplace")
                n = len(data)  # a text frame as the protocol's `send_text` builds it (RFC 6455, 5.2: a server's is not masked)
                add(heads[n] if n < 126 else
                    b"\x81\x7e" + n.to_bytes(2, "big") if n < 65536 else b"\x81\x7f" + n.to_bytes(8, "big"))
                add(data)
                if not whole:
                    batch += sizeof(text)
                    taken += 1
                    if batch >= WRITE_BATCH:
                        break
            if whole:
                batch = self._queued
                queue.clear()
            else:
                del queue[:taken]
            self._queued -= batch
            self._budget.used -= batch
            self.transport.write(b"".join(out))  # (may pause writing: the loop stops)
        self._signal()

    def _write_out(self) -> None:
        """What the protocol has to send, written (an end of stream half-closes the socket)."""
        chunks = self.protocol.data_to_send()
        if not chunks:
            return
        transport = self.transport
        if all(chunks):
            transport.write(b"".join(chunks) if len(chunks) > 1 else chunks[0])
            return
        for chunk in chunks:
            if chunk:
                transport.write(chunk)
            elif transport.can_write_eof():
                with contextlib.suppress(Exception):
                    transport.write_eof()
            else:  # pragma: no cover - (TLS: not served)
                transport.close()

    def drop(self, code: int, reason: str) -> None:
        """Close the connection without waiting (nothing more is queued for it); the peer has
        CLOSE_TIMEOUT seconds to answer the close before the socket is aborted."""
        if self.closed:
            return
        self.closed = True
        self._release_queue()
        self._pending = self._held = None
        log.warning("closing connection %s: %s", self.endpoint_id, reason)
        self._close(code, reason)

    def _close(self, code: int, reason: str) -> None:
        self._slow()  # (the peer's close and anything after it: the protocol's)
        if not self._reading and self.transport is not None:  # (paused for a held request or a turn: the
            self._reading = True  # peer's close must be read, or the handshake waits CLOSE_TIMEOUT for it)
            with contextlib.suppress(Exception):
                self.transport.resume_reading()
        if self.protocol.state is OPEN:
            self.protocol.send_close(code, reason)
            self._write_out()
        if self._timer is None and self.transport is not None:
            self._timer = self.listener.loop.call_later(CLOSE_TIMEOUT, self._abort)

    def _abort(self) -> None:
        self._timer = None
        if self.transport is not None:
            self.transport.abort()

    def _release_queue(self) -> None:
        self._queue.clear()
        self._budget.used -= self._queued
        self._queued = 0
        self._signal()

    def _signal(self) -> None:
        if self._room is not None:
            self._room.set()

    async def room(self, limit: int, frames: Optional[int] = None) -> None:
        """Wait until less than `limit` bytes (and, given `frames`, fewer frames) wait for this
        client, or it is closed; checked again every second (the socket's buffer drains without
        a signal)."""
        while not self.closed and (self.backlog() >= limit or frames is not None and len(self._queue) >= frames):
            self._room = self._room or asyncio.Event()
            self._room.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._room.wait(), 1.0)

    async def paced(self) -> None:
        """Wait while half the send buffer is taken, in bytes or in frames (a replay sends no faster
        than the client reads: small notifications filled the queue's 4,096 frames, and the client
        was closed 1008, long before their bytes filled half its buffer)."""
        lim = self._limits
        if self.backlog() >= lim.send_buffer_bytes // 2 or len(self._queue) >= lim.send_queue // 2:
            await self.room(lim.send_buffer_bytes // 2, lim.send_queue // 2)

    def background(self, coro: Any) -> None:
        """Run `coro` beside the reading (a replay), one at a time: a later one replaces it."""
        if self._replay is not None:
            self._replay.cancel()

        async def guarded() -> None:
            try:
                await coro
            except Exception:  # (a store that cannot be read): the connection goes on, the hub too
                log.exception("connection %s: replay failed", self.endpoint_id)

        task = self._replay = self.listener.loop.create_task(guarded())
        if self._tasks is None:
            self._tasks = set()
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: coro.close())

    def shut(self) -> None:
        """The hub stops: what is queued is written, then the connection closed with 1001."""
        if self.closed:
            if self.protocol.state is not OPEN:
                return
        else:
            self.flush()
            self.closed = True
            self._release_queue()
        self._close(1001, "")


class Listener:
    """The listening socket and its connections: one flush per tick for every connection with
    something to write; on `close`, new handshakes answered 503, open connections closed with 1001
    and waited for (each at most CLOSE_TIMEOUT seconds)."""

    def __init__(self, server: Any, *, max_size: int, logger: logging.Logger) -> None:
        self.server = server
        self.max_size = max_size
        self.logger = logger
        self.loop = asyncio.get_running_loop()
        self.read_view = memoryview(bytearray(READ_SIZE))  # every Link's socket reads (one at a time)
        self.links: set[Link] = set()
        self.serving = True
        self._dirty: list[Link] = []
        self._acceptor: Optional[Acceptor] = None
        self._empty: Optional[asyncio.Future[None]] = None

    async def start(self, host: str, port: int) -> int:
        sockets = await bind(host, port)
        self._acceptor = Acceptor(sockets, lambda: Link(self))
        return int(sockets[0].getsockname()[1])

    def dirty(self, link: Link) -> None:
        if not self._dirty:
            self.loop.call_soon(self.flush)
        self._dirty.append(link)

    def flush(self) -> None:
        dirty, self._dirty = self._dirty, []
        for link in dirty:
            link.flush()

    def lost(self, link: Link) -> None:
        self.links.discard(link)
        if not self.links and self._empty is not None and not self._empty.done():
            self._empty.set_result(None)

    async def close(self) -> None:
        self.serving = False
        if self._acceptor is not None:
            self._acceptor.close()
        for link in list(self.links):
            if link.protocol.state is OPEN:
                link.shut()
        if self.links:
            self._empty = self.loop.create_future()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._empty, CLOSE_TIMEOUT + 1.0)
        for link in list(self.links):  # (a handshake still in progress)
            link._abort()

