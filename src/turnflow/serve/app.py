"""Start a served hub: open the store and the agent registry (registry.py: beside a SQLite store,
inside a PostgreSQL one), the hub (hydrated: every session
as it was), its sweeper, then the WebSocket server; stop on SIGINT / SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from turnflow.serve.ops import Quotas
from turnflow.serve.server import Limits

FD_HEADROOM = 32  # descriptors kept free beyond those open at start (store, registry, logs, accept)
LOG_INTERVAL = 10.0  # seconds: accept errors and failed handshakes are logged at most once per interval

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 8765
    store: str = "turnflow-hub.db"
    registry: Optional[str] = None
    keys: Optional[dict[str, str]] = None
    limits: Limits = field(default_factory=Limits)
    quotas: Quotas = field(default_factory=Quotas)
    invite_timeout: float = 30.0
    sweep_interval: float = 5.0  # TTLs and expectations checked this often (AG2's hub: 30 s and 10 s)
    loop: str = "auto"  # the event loop: "asyncio", "uvloop", or "auto" (uvloop where it is installed)


LOOPS = ("auto", "asyncio", "uvloop")


def loop_runner(choice: str) -> Callable[[Any], Any]:
    """A function running a coroutine to its end on a fresh event loop of the kind `--loop` names.
    "auto" is uvloop where it is installed (the `serve` extra installs it, but on Windows), else
    asyncio's own loop. OptionError when "uvloop" is asked for and is not installed."""
    if choice not in LOOPS:
        raise OptionError(f"--loop {choice!r}: expected one of {', '.join(LOOPS)}")
    if choice != "asyncio":
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                from turnflow.extras import pip_install

                raise OptionError(f"--loop uvloop: uvloop is not installed ({pip_install('serve')}; "
                                  "not available on Windows)") from None
        else:
            return uvloop.run
    return asyncio.run


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    module = type(loop).__module__.partition(".")[0]
    if module == "uvloop":
        import uvloop
        return f"uvloop {uvloop.__version__}"
    return module


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


def connection_cap(wanted: int) -> tuple[int, str]:
    """The effective connection cap: `wanted`, or fewer when the open-file limit (RLIMIT_NOFILE)
    cannot hold that many sockets beside the descriptors already open and FD_HEADROOM. The soft
    limit is first raised towards the hard one as far as needed. Returns (cap, why, for the log)."""
    try:
        import resource
    except ImportError:  # (not on Windows)
        return wanted, f"--max-connections {wanted}"
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        used = 16
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = used + FD_HEADROOM + wanted
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    if soft == resource.RLIM_INFINITY or soft >= need:
        return wanted, f"--max-connections {wanted}"
    cap = max(1, soft - used - FD_HEADROOM)
    return cap, (f"--max-connections {wanted}, but the open-file limit {soft} (ulimit -n) leaves room for "
                 f"{cap}: {used} descriptors open, {FD_HEADROOM} kept free")


class AcceptErrors:
    """The event loop's exception handler: failures to accept a connection (no descriptor left,
    no memory) are counted and logged once per LOG_INTERVAL without a traceback; anything else
    goes to the handler that was there."""

    def __init__(self, previous: Optional[Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]] = None) -> None:
        self.previous = previous
        self.count = 0
        self.last = 0.0
        self.reason = ""

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and "accept" in str(context.get("message", "")):
            self.count += 1
            self.reason = exc.strerror or str(exc)
            now = loop.time()
            if now - self.last >= LOG_INTERVAL:
                print(f"turnflow serve: {self.count} connection(s) could not be accepted in the last "
                      f"{LOG_INTERVAL:.0f} s: {self.reason}", file=sys.stderr, flush=True)
                self.count, self.last = 0, now
            return
        if self.previous is not None:
            self.previous(loop, context)
        else:
            loop.default_exception_handler(context)


class _Once(logging.Filter):
    """Let a warning through at most once per LOG_INTERVAL for each message and reason (the count
    of those held back goes with the next one); with `bare`, without its traceback (a failed
    handshake says what failed, nothing more)."""

    def __init__(self, bare: bool) -> None:
        super().__init__()
        self.bare = bare
        self.last: dict[str, float] = {}
        self.held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        args = record.args
        key = f"{record.msg}|{args[-1] if isinstance(args, tuple) and args and isinstance(args[-1], str) else ''}"
        now = time.monotonic()
        if now - self.last.get(key, -LOG_INTERVAL) < LOG_INTERVAL:
            self.held[key] = self.held.get(key, 0) + 1
            return False
        self.last[key] = now
        held = self.held.pop(key, 0)
        if self.bare and record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            record.args = None
        if self.bare:
            record.exc_info = record.exc_text = None
        if held:
            record.msg = f"{record.getMessage()} (and {held} more in the last {LOG_INTERVAL:.0f} s)"
            record.args = None
        return True


def quiet_logger() -> logging.Logger:
    """The WebSocket layer's logger (failed handshakes: once per interval, no traceback); the
    server's own warnings (connections closed, and why) once per interval and reason."""
    for name, bare in (("turnflow.serve.websocket", True), ("turnflow.serve", False)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Once) for f in logger.filters):
            logger.addFilter(_Once(bare))
    return logging.getLogger("turnflow.serve.websocket")


async def serve(opts: Options, ready: Callable[[str], None], stop: Optional[asyncio.Event] = None) -> None:
    from turnflow.runtime.hub import Hub
    from turnflow.runtime.store import open_store
    from turnflow.serve.ops import Auth, Ops
    from turnflow.serve.registry import open_registry
    from turnflow.serve.server import Server
    from turnflow.serve.wsproto import Listener

    store = open_store(opts.store)
    try:
        registry = open_registry(opts.store, opts.registry)
    except BaseException:
        store.close()
        raise
    if registry.note:
        print(f"turnflow serve: {registry.note}", file=sys.stderr, flush=True)
    hub = await Hub.open(store, keep_ended=False)  # ended sessions are read back from the store when asked for
    ops = Ops(hub, registry, Auth(opts.keys), invite_timeout=opts.invite_timeout, quotas=opts.quotas)
    cap, why = connection_cap(opts.limits.max_connections)
    print(f"turnflow serve: up to {cap} connections ({why}); event loop "
          f"{loop_name(asyncio.get_running_loop())}", file=sys.stderr, flush=True)
    server = Server(ops, opts.limits, cap)
    ops.start()  # invites an earlier run left pending time out; workflows needing AG2 extensions named
    hub.start_sweeper(opts.sweep_interval)
    house = asyncio.get_running_loop().create_task(server.housekeeping())
    pinger = (asyncio.get_running_loop().create_task(server.keepalive(opts.limits.ping_interval))
              if opts.limits.ping_interval is not None else None)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(AcceptErrors(loop.get_exception_handler()))
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    lim = opts.limits
    try:
        listener = Listener(server, max_size=lim.max_frame_bytes, logger=quiet_logger())
        try:
            port = await listener.start(opts.host, opts.port)
            ready(f"ws://{opts.host}:{port}")
            await stop.wait()
        finally:
            await listener.close()
    finally:
        for task in (house, pinger):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        registry.close()
        await hub.aclose()


def main(opts: Options) -> int:
    def ready(url: str) -> None:
        sessions = "" if opts.store.startswith(("postgresql://", "postgres://")) else f" (store {opts.store})"
        print(f"turnflow serve: listening on {url}{sessions}", flush=True)

    loop_runner(opts.loop)(serve(opts, ready))
    print("turnflow serve: stopped", file=sys.stderr, flush=True)
    return 0


