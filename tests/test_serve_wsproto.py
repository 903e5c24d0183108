"""`turnflow serve`'s WebSocket layer (serve/wsproto.py) byte by byte, with a client written here
on a bare TCP stream: frames split anywhere and several in one segment, fragmented messages,
binary frames, 16- and 64-bit lengths, pings, the close handshake, and the frames the protocol
refuses (invalid UTF-8: 1007, unmasked: 1002, too big: 1009)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import struct

import pytest

pytest.importorskip("websockets")

from turnflow.serve.app import Options, serve  # noqa: E402
from turnflow.serve.server import Limits  # noqa: E402

HANDSHAKE = ("GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")


def frame(opcode: int, payload: bytes, fin: bool = True, mask: bool = True) -> bytes:
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def text(obj) -> bytes:
    return frame(1, json.dumps(obj).encode())


def request(op, params, rid):
    return {"kind": "request", "request_id": rid, "op": op, "params": params}


async def read_frame(reader) -> tuple[int, bytes]:
    head = await reader.readexactly(2)
    n = head[1] & 0x7F
    if n == 126:
        n = struct.unpack("!H", await reader.readexactly(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", await reader.readexactly(8))[0]
    assert not head[1] & 0x80  # a server's frames are not masked
    return head[0] & 0x0F, await reader.readexactly(n)


async def answer(reader) -> dict:
    opcode, payload = await asyncio.wait_for(read_frame(reader), 20)
    assert opcode == 1, (opcode, payload)
    return json.loads(payload)


async def close_code(reader) -> int:
    while True:
        opcode, payload = await asyncio.wait_for(read_frame(reader), 20)
        if opcode == 8:
            return int(struct.unpack("!H", payload[:2])[0])


async def connect(url, first: bytes = b"", split: bool = False):
    host, port = url[len("ws://"):].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    hello = HANDSHAKE.format(host=f"{host}:{port}", key=base64.b64encode(os.urandom(16)).decode()).encode()
    if split:  # the request in two segments, the first frame in the second
        writer.write(hello[:20])
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(hello[20:] + first)
    else:
        writer.write(hello + first)
    status = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    assert status.startswith(b"HTTP/1.1 101 "), status
    return reader, writer


def with_server(tmp_path, body, **limits):
    async def main():
        urls: asyncio.Queue = asyncio.Queue()
        stop = asyncio.Event()
        opts = Options(port=0, store=str(tmp_path / "hub.db"), limits=Limits(**limits))
        task = asyncio.get_running_loop().create_task(serve(opts, urls.put_nowait, stop))
        try:
            return await body(await asyncio.wait_for(urls.get(), 60))
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)

    return asyncio.run(asyncio.wait_for(main(), 120))


def test_frames_split_anywhere_batched_fragmented_binary_and_long(tmp_path):
    async def body(url):
        reader, writer = await connect(url)
        reg = text(request("register", {"passport": {"name": "a"}}, "reg"))
        for i in range(len(reg)):  # one byte per segment
            writer.write(reg[i:i + 1])
            await writer.drain()
            await asyncio.sleep(0.001)
        assert (await answer(reader))["ok"] is True
        # three frames in one segment: answered in order
        writer.write(b"".join(text(request("list_agents", {}, f"q{i}")) for i in range(3)))
        assert [(await answer(reader))["request_id"] for _ in range(3)] == ["q0", "q1", "q2"]
        # a message in three fragments, a ping between them (answered at once, with its payload)
        body = json.dumps(request("list_agents", {}, "frag")).encode()
        writer.write(frame(1, body[:5], fin=False) + frame(0, body[5:9], fin=False) + frame(9, b"hi")
                     + frame(0, body[9:]))
        assert await asyncio.wait_for(read_frame(reader), 20) == (10, b"hi")
        assert (await answer(reader))["request_id"] == "frag"
        # a binary frame of JSON, a 16-bit length, a 64-bit length
        writer.write(frame(2, json.dumps(request("list_agents", {}, "bin")).encode()))
        assert (await answer(reader))["request_id"] == "bin"
        pad = {"x": "y" * 300}
        writer.write(text(request("list_agents", pad, "mid")))
        assert (await answer(reader))["request_id"] == "mid"
        big = request("get_agent", {"name_or_id": "z" * 70000}, "big")
        writer.write(text(big))
        reply = await answer(reader)
        assert reply["request_id"] == "big" and reply["ok"] is False
        # a ping frame of the app's own protocol and a bad JSON frame: answered, the connection stays
        writer.write(text({"kind": "ping"}) + frame(1, b"{not json"))
        assert await answer(reader) == {"kind": "pong"}
        assert (await answer(reader))["kind"] == "error"
        # the client closes: the hub echoes its code and closes the TCP connection
        writer.write(frame(8, struct.pack("!H", 1000) + b"bye"))
        assert await close_code(reader) == 1000
        assert await asyncio.wait_for(reader.read(), 20) == b""
        writer.close()

    with_server(tmp_path, body)


def test_connections_reading_through_the_one_read_buffer_keep_their_own_bytes(tmp_path):
    """Every connection is read into the listener's one buffer (`Link.get_buffer`): a frame
    split across reads, with another connection's reads between its parts, arrives whole."""
    async def body(url):
        conns = [await connect(url) for _ in range(3)]
        regs = [text(request("register", {"passport": {"name": f"agent{i}" + "x" * 100}}, f"reg{i}")) for i in range(3)]
        for cut in (7, 200):  # inside the header, inside the payload
            for (_, writer), reg in zip(conns, regs):
                writer.write(reg[:cut])
                await writer.drain()
                await asyncio.sleep(0.02)  # (each part its own read)
            for (_, writer), reg in zip(conns, regs):
                writer.write(reg[cut:])
                await writer.drain()
                await asyncio.sleep(0.02)
            for i, (reader, _) in enumerate(conns):
                reply = await answer(reader)
                assert reply["request_id"] == f"reg{i}"
                if cut == 7:
                    assert reply["ok"] is True and reply["result"]["name"] == f"agent{i}" + "x" * 100
                else:  # (registered by the first pass)
                    assert reply["ok"] is False and f"agent{i}" in reply["error_message"]
        for _, writer in conns:
            writer.close()

    with_server(tmp_path, body)


def test_a_frame_right_behind_the_handshake_and_a_split_handshake(tmp_path):
    async def body(url):
        out = []
        for split in (False, True):
            reader, writer = await connect(url, text(request("register", {"passport": {"name": f"n{split}"}}, "r")),
                                           split=split)
            out.append((await answer(reader))["ok"])
            writer.write(text(request("list_agents", {}, "after")))
            out.append((await answer(reader))["request_id"])
            writer.close()
        return out

    assert with_server(tmp_path, body) == [True, "after", True, "after"]


REFUSED = {
    "utf8": (lambda: frame(1, b'{"kind": "ping", "x": "\xff"}'), 1007),  # invalid UTF-8 in a text frame
    "unmasked": (lambda: frame(1, b'{"kind":"ping"}', mask=False), 1002),  # a client's frame must be masked
    "big": (lambda: frame(1, b"x" * 5000), 1009),  # over --max-frame-bytes
    "big-fragments": (lambda: frame(1, b"x" * 3000, fin=False) + frame(0, b"x" * 3000), 1009),  # counted together
    "stray-continuation": (lambda: frame(0, b"x"), 1002),  # a continuation of nothing
    "interleaved": (lambda: frame(1, b"{", fin=False) + frame(1, b"}"), 1002),  # a new message inside a fragmented one
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_frames_the_protocol_refuses_close_the_connection(tmp_path, case):
    bad, code = REFUSED[case][0](), REFUSED[case][1]

    async def body(url):
        reader, writer = await connect(url)
        writer.write(text({"kind": "ping"}) + bad)
        assert await answer(reader) == {"kind": "pong"}  # the frame before it is answered
        got = await close_code(reader)
        writer.close()
        return got

    assert with_server(tmp_path, body, max_frame_bytes=4096) == code



class _Transport(asyncio.Transport):
    """What a `Link` writes, kept (no socket)."""

    def __init__(self):
        super().__init__()
        self.out = bytearray()

    def write(self, data):
        self.out += data

    def get_write_buffer_size(self):
        return 0

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 5555) if name == "peername" else default

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def can_write_eof(self):
        return True

    def write_eof(self):
        pass

    def close(self):
        pass

    def abort(self):
        pass


def test_a_due_ping_is_written_with_the_frames_queued_beside_it():
    """The keepalive's ping and queued frames flushed in one tick: the ping is on the wire before
    the frames (the protocol's bytes never wait behind them for a later write)."""
    from turnflow.serve.server import SendBudget
    from turnflow.serve.wsproto import Link, Listener

    class Server:
        limits = Limits()
        budget = SendBudget(Limits().total_send_bytes)

        def refusal(self, peer):
            return None

        def enter(self, conn, sock):
            pass

    async def main():
        listener = Listener(Server(), max_size=1 << 20, logger=logging.getLogger("test"))
        link = Link(listener)
        transport = _Transport()
        link.connection_made(transport)
        link.data_received(HANDSHAKE.format(host="h", key=base64.b64encode(os.urandom(16)).decode()).encode())
        assert transport.out.startswith(b"HTTP/1.1 101 ")
        transport.out.clear()
        link.send('{"kind":"pong"}')
        link.ping()
        link.flush()
        link._abort()
        return bytes(transport.out)

    out = asyncio.run(main())
    assert out == b"\x89\x00" + b"\x81\x0f" + b'{"kind":"pong"}'


def test_keepalive_pings_go_out_while_frames_are_queued(tmp_path):
    """A client kept busy with answers (50 app-level pings every 10 ms, so answers are queued
    whenever the keepalive's ping is due) still gets a WebSocket ping every `ping_interval`."""
    async def body(url):
        reader, writer = await connect(url)
        writer.write(text(request("register", {"passport": {"name": "busy"}}, "reg")))
        assert (await answer(reader))["ok"] is True
        pings = answers = 0
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.2  # six intervals: three pings still come through a 0.6 s stall

        async def flood():
            while loop.time() < end:
                writer.write(text({"kind": "ping"}) * 50)
                await writer.drain()
                await asyncio.sleep(0.01)

        sender = loop.create_task(flood())
        while loop.time() < end:
            try:
                opcode, _ = await asyncio.wait_for(read_frame(reader), max(0.01, end - loop.time()))
            except asyncio.TimeoutError:
                break
            pings += opcode == 9
            answers += opcode == 1
        await sender
        writer.close()
        return pings, answers

    pings, answers = with_server(tmp_path, body, ping_interval=0.2, ping_timeout=0.2)
    assert answers > 500 and pings >= 3, (pings, answers)


def test_unmasking_is_the_xor_of_rfc_6455_with_or_without_websockets_extension():
    """RFC 6455, 5.3: byte i of the payload XOR byte i % 4 of the key — the module's own XOR and
    the one it reads frames with (websockets' C `apply_mask` where it is built) agree with it."""
    from turnflow.serve import wsproto

    rng = __import__("random").Random(7)
    for n in [*range(0, 70), 125, 126, 127, 1000, 65535, 65536, 70001]:
        payload, key = rng.randbytes(n), rng.randbytes(4)
        want = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        assert wsproto._xor_mask(payload, key) == want
        assert wsproto._unmask(payload, key) == want
