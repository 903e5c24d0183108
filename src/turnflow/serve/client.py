"""A minimal client of the served hub's wire protocol (`turnflow serve`, AG2 1.2.1's frames): requests
and their answers, `hello` (attach as a registered agent), notifications acked as they come,
invites to the agents it acts as (acked at once when one of them opened the session, else queued),
and the closes it was told of. API keys (`keys`: name -> key, a hub started with `--auth-keys`) go in
AG2's `ApiKeyAuth` shape."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Optional

from turnflow.runtime.errors import StoreError
from turnflow.serve import wire


class HubError(StoreError):
    """The served hub cannot be reached or refused a step of the run (exit 2, like a store)."""


class Refused(HubError):
    """The served hub answered a request with an error (`code`: AG2's error code)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class WireClient:
    """A minimal client of the served hub's protocol (requests, notifications, receipts)."""

    def __init__(self, url: str, keys: Optional[dict[str, str]] = None) -> None:
        self.url = url
        self.keys = keys or {}
        self.ws: Any = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._reader: Optional[asyncio.Task[Any]] = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.local: dict[str, str] = {}  # agent id -> name, the agents this client acts as
        self.changed = asyncio.Event()  # set on every notification and when the link drops (the log is re-read)
        self.lost = False  # the link dropped
        self.closed_reason: dict[str, str] = {}
        # invites to the file's agents: acked at once when one of them created the session (this
        # run opened it), else queued for `join` (a remote opener); others are left unanswered
        self.invites: asyncio.Queue[tuple[dict[str, Any], str]] = asyncio.Queue()

    def auth(self, name: str) -> dict[str, Any]:
        """The passport's auth block for one of the file's agents: AG2's ApiKeyAuth shape when a
        key is given for it, else NoAuth (the key is sent to the hub, never printed)."""
        key = self.keys.get(name)
        return {"scheme": "api_key", "claim": {"token": key}} if key else {"scheme": "none", "claim": {}}

    async def connect(self) -> None:
        from websockets.asyncio.client import connect

        try:
            self.ws = await connect(self.url, open_timeout=10, max_size=None)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            raise HubError(f"cannot reach the hub at {self.url}: {exc}") from None
        except Exception as exc:  # websockets' handshake errors (not a WebSocket server, ...)
            raise HubError(f"cannot reach the hub at {self.url}: {type(exc).__name__}: {exc}") from None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def call(self, op: str, params: dict[str, Any]) -> Any:
        self._next += 1
        rid = f"r{self._next}"
        if self.lost:
            raise HubError(f"lost the connection to the hub at {self.url}")
        fut = self._pending[rid] = asyncio.get_running_loop().create_future()
        try:
            await self.ws.send(json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params}))
        except Exception:  # websockets' ConnectionClosed: the link dropped
            self._pending.pop(rid, None)
            raise HubError(f"lost the connection to the hub at {self.url}") from None
        frame = await fut
        if not frame["ok"]:
            raise Refused(f"the hub refused {op}: {frame['error_code']}: {frame['error_message']}", frame["error_code"])
        return frame["result"]

    async def hello(self, name: str, replay: bool = False) -> None:
        """Attach as a registered agent; `replay`: the hub re-sends what it has not acked (a
        pending invite among them)."""
        fut = self._pending["hello"] = asyncio.get_running_loop().create_future()
        auth = self.auth(name)
        await self.ws.send(json.dumps({"kind": "hello", "name": name, "auth_scheme": auth["scheme"],
                                       "auth_claim": auth["claim"], "since_envelope_id": "" if replay else None}))
        frame = await fut
        if frame["kind"] == "error":
            raise HubError(f"the hub refused to attach {name!r}: {frame['code']}: {frame['message']}")

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                self._on_frame(json.loads(message))
        except Exception:  # the link dropped: every waiter fails
            pass
        self.lost = True
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(HubError(f"lost the connection to the hub at {self.url}"))
        self.changed.set()

    def _on_frame(self, frame: dict[str, Any]) -> None:
        kind = frame.get("kind")
        if kind == "response":
            fut = self._pending.pop(str(frame.get("request_id")), None)
        elif kind in ("welcome", "error"):
            fut = self._pending.pop("hello", None)
        else:
            fut = None
        if fut is not None and not fut.done():
            fut.set_result(frame)
        if kind == "notify":
            self._on_notify(frame["envelope"], frame["recipient_id"])

    def _on_notify(self, env: dict[str, Any], recipient: str) -> None:
        et = env.get("event_type")
        if et == wire.AG2_INVITE and recipient in self.local:
            if env.get("sender_id") in self.local:  # this run opened the session: its agents accept
                self._spawn(self.answer(env["channel_id"], recipient, True))
            else:
                self.invites.put_nowait((env, recipient))
        if et in (wire.AG2_CLOSED, wire.AG2_EXPIRED):
            self.closed_reason[env["channel_id"]] = str(env.get("event_data", {}).get("reason", ""))
        if env.get("envelope_id"):
            self._spawn(self.ws.send(json.dumps({"kind": "receipt", "envelope_id": env["envelope_id"], "status": "ack",
                                                 "recipient_id": recipient, "channel_id": env["channel_id"],
                                                 "reason": ""})))
        self.changed.set()

    async def answer(self, channel_id: str, agent_id: str, ack: bool, reason: str = "") -> None:
        """Ack (or reject) an invite as one of the file's agents."""
        env = {"channel_id": channel_id, "sender_id": agent_id, "audience": None,
               "event_type": wire.AG2_ACK if ack else wire.AG2_REJECT, "event_data": {} if ack else {"reason": reason}}
        await self.call("post_envelope", {"envelope": env})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
