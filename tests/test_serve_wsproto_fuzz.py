"""`turnflow serve` reads whole unfragmented text/binary frames itself (serve/wsproto.py,
`Link._frames`) and hands every other frame to websockets' Sans-I/O `ServerProtocol`. This is a
differential test of that reader: the same byte stream, cut into the same chunks, goes to a `Link`
with the fast reader on and to a `Link` that reads every byte with the protocol (`_fast` off after
the handshake), and the two must do the same: the same messages dispatched (type and content), the
same bytes written to the client (pongs, pings, close frames with their code and reason, the end of
stream), the same end state (protocol state, `closed`, a close deadline armed or not), no exception.

The streams are what a client could send after a valid handshake: text, binary and continuation
frames, fragmented messages with control frames between the fragments, pings, pongs, closes with
and without code and reason (invalid codes, invalid UTF-8 reasons, 1-byte payloads), masked and
unmasked frames, RSV bits, reserved opcodes, lengths in the 7-, 16- and 64-bit forms (non-minimal
encodings too, and 64-bit lengths with the top bit set), declared lengths that lie, payloads at and
over the size limit (single frames and fragments counted together), invalid UTF-8, control frames
over 125 bytes or fragmented; also random and mutated bytes. Each stream is cut into chunks (all in
one, one byte each, or random cuts); between chunks the server may ping, drop the connection or
shut down, and the stream may end with an EOF.

Not compared: what the hub does in answer to a message (here it only keeps them). When the protocol
reads every byte, a chunk is read whole before its messages are handled, so a pong for a ping
behind a message goes out before anything the hub writes (or a close it decides on) for that
message; the fast reader hands the message over before it reads on. Both are valid orders.

The larger run (the default, 100 examples a test, takes a few seconds):

    TURNFLOW_WSPROTO_FUZZ_EXAMPLES=20000 PYTHONPATH=$PWD/src python3 -m pytest -q tests/test_serve_wsproto_fuzz.py
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from typing import Any
from unittest import mock

import pytest

pytest.importorskip("websockets")

import hypothesis  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from websockets.utils import apply_mask  # noqa: E402

from turnflow.serve.server import Limits, SendBudget  # noqa: E402
from turnflow.serve.wsproto import Link, Listener  # noqa: E402

EXAMPLES = int(os.environ.get("TURNFLOW_WSPROTO_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.data_too_large])
HANDSHAKE = (b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
EOF = b"<EOF>"  # (in the transcript of writes: `write_eof`)


# -- a Link with no socket and no event loop ---------------------------------------------------------
class _Timer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Loop:
    """What a Link asks of its loop: timers (never fired here), `call_soon` (a flush: done by hand)."""

    def call_later(self, delay: float, callback: Any, *args: Any) -> _Timer:
        return _Timer()

    def call_soon(self, callback: Any, *args: Any) -> None:
        pass

    def time(self) -> float:
        return 0.0


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = self.aborted = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def write_eof(self) -> None:
        self.writes.append(EOF)

    def can_write_eof(self) -> bool:
        return True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def set_write_buffer_limits(self, high: Any = None, low: Any = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


class _Server:
    """The hub's side of a connection: every message it is given, kept."""

    def __init__(self) -> None:
        self.limits = Limits()
        self.budget = SendBudget(self.limits.total_send_bytes)
        self.messages: list[Any] = []

    def refusal(self, peer: str) -> None:
        return None

    def enter(self, conn: Any, sock: Any) -> None:
        pass

    def take(self, conn: Any, message: Any) -> None:
        self.messages.append(message)

    def forget(self, conn: Any) -> None:
        pass


def server_frames(out: bytes) -> list[tuple[Any, ...]]:
    """The frames a server wrote (unmasked), read back; a close frame as its code and reason."""
    frames: list[tuple[Any, ...]] = []
    pos = 0
    while pos < len(out):
        if out.startswith(EOF, pos):
            frames.append(("EOF",))
            pos += len(EOF)
            continue
        head1, n = out[pos], out[pos + 1]
        assert not n & 0x80, "a server's frame is masked"
        pos += 2
        if n == 126:
            n, pos = struct.unpack("!H", out[pos:pos + 2])[0], pos + 2
        elif n == 127:
            n, pos = struct.unpack("!Q", out[pos:pos + 8])[0], pos + 8
        payload = out[pos:pos + n]
        assert len(payload) == n, "a truncated frame"
        pos += n
        if head1 & 0x0F == 8 and len(payload) >= 2:
            frames.append((head1, struct.unpack("!H", payload[:2])[0], payload[2:].decode()))
        else:
            frames.append((head1, payload))
    return frames


def run(stream: list[Any], max_size: int, fast: bool) -> dict[str, Any]:
    """Feed `stream` (chunks of bytes and server actions) to a fresh Link; what it did."""
    server, loop, transport = _Server(), _Loop(), _Transport()
    with mock.patch("asyncio.get_running_loop", return_value=loop):
        listener = Listener(server, max_size=max_size, logger=logging.getLogger("test.wsproto.fuzz"))
    link = Link(listener)
    link.connection_made(transport)
    link.data_received(HANDSHAKE)
    assert transport.writes and transport.writes[0].startswith(b"HTTP/1.1 101 ")
    assert link._fast and not link.closed
    link._fast = fast  # (off: every byte from here on read by websockets' protocol)
    del transport.writes[:]
    for item in stream:
        if isinstance(item, bytes):
            link.data_received(item)
        elif item == "ping":
            link.ping()
            link.flush()
        elif item == "drop":
            link.drop(1008, "dropped by the test")
        elif item == "shut":
            link.shut()
        else:
            assert item == "eof"
            link.eof_received()
    out = b"".join(transport.writes)
    outcome = {
        "messages": server.messages,
        "frames": server_frames(out),
        "out": out,
        "state": link.protocol.state.name,
        "error": repr(link.protocol.parser_exc),  # (why the protocol failed the connection, its exact words)
        "closed": link.closed,
        "deadline": link._timer is not None and not link._timer.cancelled,
        "transport": (transport.closed, transport.aborted),
    }
    link.connection_lost(None)  # (the socket gone, with or without an EOF before)
    outcome["lost"] = (repr(link.protocol.parser_exc), link.protocol.state.name, b"".join(transport.writes)[len(out):])
    return outcome


def check(stream: list[Any], max_size: int) -> None:
    fast = run(stream, max_size, True)
    slow = run(stream, max_size, False)
    assert fast == slow
    if hypothesis.currently_in_test_context():  # (--hypothesis-show-statistics: what the streams reached)
        hypothesis.event(f"messages: {min(len(fast['messages']), 3)}")
        hypothesis.event(f"sent: {sorted({f[1] if f[0] == 0x88 and len(f) == 3 else f[0] for f in fast['frames']}, key=str)}")


# -- what a client sends ----------------------------------------------------------------------------
def encode(opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0, masked: bool = True,
           form: str = "min", declared: int | None = None, key: bytes = b"\x01\x02\x03\x04") -> bytes:
    """A client's frame. `form`: the length as "min" (the shortest), "16" or "64" (non-minimal when
    shorter), "64top" (64-bit with the top bit set); `declared`: a length other than the payload's."""
    n = len(payload) if declared is None else declared
    if form == "64top":
        ext, code = struct.pack("!Q", n | 1 << 63), 127
    elif form == "64" or n >= 65536:
        ext, code = struct.pack("!Q", n), 127
    elif form == "16" or n >= 126:
        ext, code = struct.pack("!H", n), 126
    else:
        ext, code = b"", n
    head = bytes([(0x80 if fin else 0) | (rsv & 7) << 4 | opcode, (0x80 if masked else 0) | code]) + ext
    return head + key + apply_mask(payload, key) if masked else head + payload


BAD_UTF8 = st.sampled_from([b"\xff", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                            b"\xc0\xaf", b"a\x80b", "é".encode()[:1] + b"x"])
CODES = st.one_of(st.sampled_from([1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010,
                                   1011, 1012, 1013, 1014, 1015, 1016, 2999, 3000, 4999, 5000, 0]),
                  st.integers(0, 0xFFFF))
VALID_CODES = st.sampled_from([1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4999])
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)  # (no lone surrogates: valid UTF-8)
KEY = st.binary(min_size=4, max_size=4)
FORM = st.sampled_from(["min"] * 6 + ["16", "64"])  # (a non-minimal length is read as any other)


@st.composite
def good_payload(draw: Any, opcode: int) -> bytes:
    """A payload the protocol accepts for `opcode` (the size limit aside)."""
    if opcode in (9, 10):
        return bytes(draw(st.binary(max_size=8) | st.sampled_from([b"p" * 125, b""])))
    big = draw(st.integers(0, 11))
    if opcode == 1:
        if big == 0:  # 16-bit (or, rarely, 64-bit) lengths, around the 125/126 boundary
            return ("é" * draw(st.sampled_from([62, 63, 64, 150, 35000])) + "x" * draw(st.integers(0, 1))).encode()
        return str(draw(TEXT)).encode()
    if big == 0:
        return b"\x00" * draw(st.sampled_from([125, 126, 127, 300, 65535, 65536, 70000]))
    return bytes(draw(st.binary(max_size=40)))


@st.composite
def good_unit(draw: Any) -> bytes:
    """Frames a well-behaved client sends: a text or binary message, in one frame or in fragments
    (pings and pongs between them), a ping, a pong."""
    kind = draw(st.sampled_from(["text", "text", "text", "binary", "binary", "ping", "pong", "fragmented"]))
    if kind in ("ping", "pong"):
        opcode = 9 if kind == "ping" else 10
        return encode(opcode, draw(good_payload(opcode)), key=draw(KEY))
    opcode = 2 if kind == "binary" or (kind == "fragmented" and draw(st.booleans())) else 1
    payload = draw(good_payload(opcode))
    if kind != "fragmented":
        return encode(opcode, payload, form=draw(FORM), key=draw(KEY))
    cuts = sorted(draw(st.lists(st.integers(0, len(payload)), min_size=1, max_size=4)))
    parts = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])]
    out = b""
    for i, part in enumerate(parts):  # (text cut anywhere: UTF-8 is checked on the whole message)
        out += encode(opcode if i == 0 else 0, part, fin=i == len(parts) - 1, form=draw(FORM), key=draw(KEY))
        if i < len(parts) - 1 and draw(st.integers(0, 3)) == 0:
            out += encode(draw(st.sampled_from([9, 10])), draw(st.binary(max_size=4)), key=draw(KEY))
    return out


@st.composite
def close_payload(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["empty", "code", "reason", "reason", "bad-code", "one", "bad-reason", "long"]))
    if kind == "empty":
        return b""
    code = struct.pack("!H", draw(VALID_CODES if kind in ("code", "reason") else CODES))
    if kind == "one":
        return code[:1]
    if kind == "bad-reason":
        return code + draw(BAD_UTF8)
    if kind == "long":  # a control frame over 125 bytes
        return code + b"r" * draw(st.integers(122, 130))
    return code + (str(draw(TEXT)).encode() if kind == "reason" else b"")


@st.composite
def odd_frame(draw: Any) -> bytes:
    """A frame with anything in its header: any opcode, FIN or not, RSV bits, unmasked, a length
    in any form (64-bit with the top bit set too) and maybe not the payload's."""
    opcode = draw(st.integers(0, 15))
    payload = bytes(draw(close_payload() if opcode == 8 else good_payload(opcode) | st.binary(max_size=20)))
    return encode(opcode, payload, fin=draw(st.booleans()), rsv=draw(st.sampled_from([0, 0, 1, 2, 4, 7])),
                  masked=draw(st.integers(0, 3)) > 0, form=draw(st.sampled_from(["min", "16", "64", "64top"])),
                  declared=draw(st.none() | st.integers(0, 300) | st.integers(0, (1 << 64) - 1)), key=draw(KEY))


@st.composite
def bad_unit(draw: Any, max_size: int) -> bytes:
    """Frames the protocol refuses or that end the connection, or end it as a client may."""
    kind = draw(st.sampled_from(["odd", "odd", "bad-text", "bad-fragments", "big", "big-fragments", "close",
                                 "ctrl-long", "ctrl-fragmented", "stray", "interleaved", "raw"]))
    key = draw(KEY)
    if kind == "odd":
        return bytes(draw(odd_frame()))
    if kind == "bad-text":
        return encode(1, str(draw(TEXT)).encode() + draw(BAD_UTF8) + b"ok", key=key)
    if kind == "bad-fragments":  # invalid UTF-8 in a fragmented text message (the cut inside a character or not)
        bad = str(draw(TEXT)).encode() + draw(BAD_UTF8) + b"ok"
        cut = draw(st.integers(0, len(bad)))
        return encode(1, bad[:cut], fin=False, key=key) + encode(0, bad[cut:], key=key)
    if kind == "big":  # at the limit, one over
        n = max_size + draw(st.integers(0, 1))
        return encode(draw(st.sampled_from([1, 2])), b"a" * n, form=draw(FORM), key=key)
    if kind == "big-fragments":  # fragments counted together: at the limit, one over
        n = max_size + draw(st.integers(0, 1))
        cut = draw(st.integers(0, n))
        return encode(2, b"b" * cut, fin=False, key=key) + encode(0, b"b" * (n - cut), key=key)
    if kind == "close":
        return encode(8, draw(close_payload()), key=key)
    if kind == "ctrl-long":
        return encode(draw(st.sampled_from([8, 9, 10])), b"\x03\xe8" + b"c" * draw(st.integers(124, 130)), key=key)
    if kind == "ctrl-fragmented":
        return encode(draw(st.sampled_from([8, 9, 10])), b"\x03\xe8", fin=False, key=key)
    if kind == "stray":
        return encode(0, b"x", fin=draw(st.booleans()), key=key)
    if kind == "interleaved":
        return encode(1, b"{", fin=False, key=key) + encode(draw(st.sampled_from([1, 2])), b"}", key=key)
    return bytes(draw(st.binary(min_size=1, max_size=6)))


@st.composite
def stream_bytes(draw: Any, max_size: int) -> bytes:
    """Good frames, maybe one bad unit among them, maybe a few bytes changed."""
    units = [bytes(u) for u in draw(st.lists(good_unit(), min_size=1, max_size=8))]
    if draw(st.integers(0, 2)) > 0:
        units.insert(draw(st.integers(0, len(units))), draw(bad_unit(max_size)))
    data = b"".join(units)
    for _ in range(draw(st.integers(1, 2)) if draw(st.integers(0, 7)) == 0 else 0):  # mutations
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
        elif kind == "insert":
            data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 4)):]
        else:
            data = data[:at]
    return data


@st.composite
def chunked(draw: Any, data: bytes) -> list[Any]:
    """`data` in chunks (all in one, a byte each, random cuts), server actions between them, maybe an EOF."""
    how = draw(st.sampled_from(["one", "bytes", "cuts", "cuts"]))
    if how == "one":
        cuts: list[int] = []
    elif how == "bytes" and len(data) <= 3000:
        cuts = list(range(1, len(data)))
    else:
        cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=12))))
    chunks: list[Any] = [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)]) if data[a:b]]
    for _ in range(draw(st.integers(1, 2)) if draw(st.integers(0, 5)) == 0 else 0):
        chunks.insert(draw(st.integers(0, len(chunks))), draw(st.sampled_from(["ping", "drop", "shut"])))
    if draw(st.booleans()):
        chunks.append("eof")
    return chunks


SIZES = st.sampled_from([5, 125, 126, 200] + [1 << 20] * 4)


@FUZZ
@given(st.data())
def test_the_fast_reader_does_what_the_protocol_does(data: Any) -> None:
    max_size = data.draw(SIZES, label="max_size")
    stream = data.draw(chunked(data.draw(stream_bytes(max_size), label="bytes")), label="stream")
    check(stream, max_size)


@FUZZ
@given(st.binary(max_size=200), st.data())
def test_random_bytes(raw: bytes, data: Any) -> None:
    max_size = data.draw(SIZES, label="max_size")
    check(data.draw(chunked(raw), label="stream"), max_size)


# -- the differences found, each on its own ---------------------------------------------------------
def test_a_reserved_opcode_fails_at_its_header():
    """The protocol fails the connection (1002) once the first two bytes of a frame show a
    reserved opcode, before the rest of it is in; the fast reader waited for the whole frame."""
    stream: list[Any] = [b"\x83\x81"]  # opcode 3, masked, 1 byte of payload (not sent)
    check(stream, 1 << 20)
    assert server_frames(run(stream, 1 << 20, True)["out"]) == [(0x88, 1002, "invalid opcode"), ("EOF",)]


def test_a_partial_frame_held_when_the_server_closes_goes_to_the_protocol():
    """The first byte of a ping is in when the server drops the connection; the rest comes after.
    The protocol (CLOSING) reads the ping and answers it; the fast reader lost the byte it held,
    so the protocol read the ping's second byte as a frame's first."""
    stream: list[Any] = [b"\x89", "drop", b"\x80\x00\x00\x00\x00"]
    check(stream, 1 << 20)
    assert server_frames(run(stream, 1 << 20, True)["out"]) == [(0x88, 1008, "dropped by the test"), (0x8A, b"")]


def test_invalid_utf8_with_a_ping_behind_it_in_the_same_chunk():
    """A text frame of invalid UTF-8 and a ping after it, in one chunk: the protocol has read the
    ping (and answered it) before the text frame is decoded and the connection failed with 1007;
    the fast reader failed the connection at the text frame and the ping was discarded."""
    stream: list[Any] = [encode(1, b"a\xff") + encode(9, b"p")]
    check(stream, 1 << 20)
    assert server_frames(run(stream, 1 << 20, True)["out"]) == [
        (0x8A, b"p"), (0x88, 1007, "invalid start byte at position 1"), ("EOF",)]


def test_an_unmasked_frame_fails_at_its_first_two_bytes():
    """An unmasked frame with a 64-bit length, its length not all in: the protocol fails the
    connection (1002) at the first two bytes; the fast reader waited for the length first."""
    stream: list[Any] = [b"\x81\x7f\x00\x00"]
    check(stream, 1 << 20)
    assert server_frames(run(stream, 1 << 20, True)["out"]) == [(0x88, 1002, "incorrect masking"), ("EOF",)]


def test_a_fragment_over_what_is_left_of_the_limit_fails_at_its_header():
    """A fragmented message's next fragment longer than what is left of `max_size`: the protocol
    fails the connection (1009) at its header, before its payload is in; the fast reader compared
    the fragment with the whole limit and waited for its payload."""
    first = encode(1, b"x" * 60, fin=False)
    stream: list[Any] = [first + encode(0, b"y" * 60)[:8]]  # the continuation's header and mask only
    check(stream, 100)
    frames = server_frames(run(stream, 100, True)["out"])
    assert [f[:2] for f in frames] == [(0x88, 1009), ("EOF",)], frames


def test_a_fragmented_text_message_of_invalid_utf8_with_a_bad_frame_behind_it():
    """The last fragment of a text message of invalid UTF-8 and a fragmented ping after it, in one
    chunk: the protocol fails the connection for the ping (1002) before the message is decoded;
    the fast reader handed the protocol the fragment alone, and the 1007 came first."""
    stream: list[Any] = [encode(1, b"", fin=False) + encode(0, b"\xffok") + encode(9, b"", fin=False)]
    check(stream, 1 << 20)
    assert server_frames(run(stream, 1 << 20, True)["out"]) == [(0x88, 1002, "fragmented control frame"), ("EOF",)]


def test_an_end_of_stream_inside_a_frame():
    """The stream ends one byte into a frame: the protocol fails the connection for a stream that
    ends inside a frame, not between frames (the fast reader held the byte, the protocol never saw it)."""
    stream: list[Any] = [b"\x81", "eof"]
    check(stream, 1 << 20)
    assert run(stream, 1 << 20, True)["error"] == repr(EOFError("stream ends after 1 bytes, expected 2 bytes"))
