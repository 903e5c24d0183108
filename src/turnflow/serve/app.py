"""Start a served hub: open the store and the agent registry (registry.py: beside a SQLite store,
inside a PostgreSQL one), the hub (hydrated: every session
as it was), its sweeper, then the WebSocket server; stop on SIGINT / SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import signal
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from turnflow.serve.server import Limits

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 8765
    store: str = "turnflow-hub.db"
    registry: Optional[str] = None
    keys: Optional[dict[str, str]] = None
    limits: Limits = field(default_factory=Limits)
    invite_timeout: float = 30.0
    sweep_interval: float = 5.0  # TTLs and expectations checked this often (AG2's hub: 30 s and 10 s)


class OptionError(Exception):
    pass


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise OptionError(f"--listen {value!r}: expected HOST:PORT (e.g. 127.0.0.1:8765)")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_keys(path: str, option: str = "--auth-keys") -> dict[str, str]:
    """An API-keys file: a JSON object, agent name -> key (`option` names it in messages; a key
    is never part of one)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise OptionError(f"{option} {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise OptionError(f"{option} {path}: not JSON (line {getattr(exc, 'lineno', '?')})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in data.items()):
        raise OptionError(f"{option} {path}: expected a JSON object of agent name -> non-empty key string")
    return data


async def serve(opts: Options, ready: Callable[[str], None], stop: Optional[asyncio.Event] = None) -> None:
    from websockets.asyncio.server import serve as ws_serve

    from turnflow.runtime.hub import Hub
    from turnflow.runtime.stores import open_store
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry
    from turnflow.serve.server import Server

    store = open_store(opts.store)
    try:
        registry = open_registry(opts.store, opts.registry)
    except BaseException:
        store.close()
        raise
    if registry.note:
        print(f"turnflow serve: {registry.note}", file=sys.stderr, flush=True)
    hub = await Hub.open(store)
    ops = Ops(hub, registry, Auth(opts.keys), invite_timeout=opts.invite_timeout)
    server = Server(ops, opts.limits)
    ops.start()  # invites an earlier run left pending time out; workflows needing AG2 extensions named
    hub.start_sweeper(opts.sweep_interval)
    house = asyncio.get_running_loop().create_task(server.housekeeping())
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    lim = opts.limits
    try:
        async with ws_serve(server.handle, opts.host, opts.port, max_size=lim.max_frame_bytes, compression=None,
                            ping_interval=lim.ping_interval, ping_timeout=None) as ws_server:  # see server.py
            port = ws_server.sockets[0].getsockname()[1]
            ready(f"ws://{opts.host}:{port}")
            await stop.wait()
    finally:
        house.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await house
        registry.close()
        await hub.aclose()


def main(opts: Options) -> int:
    def ready(url: str) -> None:
        sessions = "" if opts.store.startswith(("postgresql://", "postgres://")) else f" (store {opts.store})"
        print(f"turnflow serve: listening on {url}{sessions}", flush=True)

    asyncio.run(serve(opts, ready))
    print("turnflow serve: stopped", file=sys.stderr, flush=True)
    return 0


