"""`turnflow run FLOW --agents A --hub ws://HOST:PORT`: the agents file's agents take part in a session
on a served hub (`turnflow serve`), alongside participants that are remote (AG2 agents, or another
`turnflow run --hub`). The `.flow`'s participant names are the agents' registered names.

The session is run by the ordinary runner on a local *mirror*: a local hub holds the same session
(same spec, participants by name) and drives the file's agents turn by turn as `turnflow run`
always does; every round a local agent takes is posted to the served hub as that agent, and a
remote participant's turn is taken by a proxy that waits for its next round on the served hub and
replays it into the mirror. The served hub is the authority: it runs the same adapters, so both
logs hold the same rounds; the local store keeps the mirror (and the agents' telemetry)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Optional

from turnflow.runtime.agents.base import AgentContext, Capabilities, SessionTools
from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.errors import AdapterError, StoreError
from turnflow.runtime.hub import spec_opener
from turnflow.serve import wire

_FORWARDED = (EV_TEXT, EV_PACKET, EV_CONTEXT_SET)
_ROUNDS = (wire.AG2_TEXT, wire.AG2_PACKET)


class HubError(StoreError):
    """The served hub cannot be reached or refused a step of the run (exit 2, like a store)."""


class WireClient:
    """A minimal client of the served hub's protocol (requests, notifications, receipts)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ws: Any = None
        self._pending: dict[str, asyncio.Future] = {}
        self._next = 0
        self._reader: Optional[asyncio.Task] = None
        self._tasks: set = set()
        self.local: dict[str, str] = {}  # agent id -> name, the agents this client acts as
        self.changed = asyncio.Event()  # set on every notification (proxies re-read the log)
        self.closed_reason: dict[str, str] = {}

    async def connect(self) -> None:
        from websockets.asyncio.client import connect

        try:
            self.ws = await connect(self.url, open_timeout=10, max_size=None)
        except (OSError, asyncio.TimeoutError, ValueError) as exc:
            raise HubError(f"cannot reach the hub at {self.url}: {exc}") from None
        except Exception as exc:  # websockets' handshake errors (not a WebSocket server, ...)
            raise HubError(f"cannot reach the hub at {self.url}: {type(exc).__name__}: {exc}") from None
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def call(self, op: str, params: dict) -> Any:
        self._next += 1
        rid = f"r{self._next}"
        fut = self._pending[rid] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params}))
        frame = await fut
        if not frame["ok"]:
            raise HubError(f"the hub refused {op}: {frame['error_code']}: {frame['error_message']}")
        return frame["result"]

    async def hello(self, name: str) -> None:
        fut = self._pending["hello"] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"kind": "hello", "name": name, "auth_scheme": "none", "auth_claim": {},
                                       "since_envelope_id": None}))
        frame = await fut
        if frame["kind"] == "error":
            raise HubError(f"the hub refused to attach {name!r}: {frame['code']}: {frame['message']}")

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                self._on_frame(json.loads(message))
        except Exception:  # the link dropped: every waiter fails
            pass
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(HubError(f"lost the connection to the hub at {self.url}"))
        self.changed.set()

    def _on_frame(self, frame: dict) -> None:
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

    def _on_notify(self, env: dict, recipient: str) -> None:
        et = env.get("event_type")
        if et == wire.AG2_INVITE and recipient in self.local:  # the file's agents accept their invites
            ack = {"channel_id": env["channel_id"], "sender_id": recipient, "audience": None,
                   "event_type": wire.AG2_ACK, "event_data": {}}
            self._spawn(self.call("post_envelope", {"envelope": ack}))
        if et in (wire.AG2_CLOSED, wire.AG2_EXPIRED):
            self.closed_reason[env["channel_id"]] = str(env.get("event_data", {}).get("reason", ""))
        if env.get("envelope_id"):
            self._spawn(self.ws.send(json.dumps({"kind": "receipt", "envelope_id": env["envelope_id"], "status": "ack",
                                                 "recipient_id": recipient, "channel_id": env["channel_id"],
                                                 "reason": ""})))
        self.changed.set()

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


class _Remote:
    """The served side of one run: ids by name, the remote session, the rounds mirrored so far."""

    def __init__(self, client: WireClient, ids: dict[str, str]) -> None:
        self.client = client
        self.ids = ids
        self.names = {v: k for k, v in ids.items()}
        self.channel_id = ""
        self.mirrored: set[str] = set()  # envelope ids of remote rounds replayed into the mirror
        self.error: Optional[str] = None

    async def forward(self, env: Envelope, md: Any) -> None:
        """The mirror's listener: a round of one of the file's agents, posted to the served hub."""
        if env.event_type not in _FORWARDED or env.sender_id not in self.ids or self.ids[env.sender_id] not in \
                self.client.local or self.error is not None:
            return
        data, et = env.event_data, env.event_type
        routing = data.get("routing") if et == EV_PACKET else None
        if et == EV_PACKET and md.kind != "workflow":  # a plain round: text, as AG2's agents of these kinds send
            data, et = {"text": data.get("body", "")}, EV_TEXT
        elif isinstance(routing, dict) and routing.get("target") in self.ids:
            data = {**data, "routing": {**routing, "target": self.ids[routing["target"]]}}
        out = {"channel_id": self.channel_id, "sender_id": self.ids[env.sender_id], "audience": None,
               "event_type": wire.TO_AG2[et], "event_data": data}
        try:
            await self.client.call("post_envelope", {"envelope": out})
        except HubError as exc:
            self.error = str(exc)

    async def next_round(self, name: str) -> dict:
        """The next round of remote participant `name` that the mirror has not replayed yet."""
        agent_id = self.ids[name]
        while True:
            self.client.changed.clear()
            if self.error is not None:
                raise AdapterError(self.error)
            for env in await self.client.call("read_wal", {"channel_id": self.channel_id}):
                if env["sender_id"] == agent_id and env["event_type"] in _ROUNDS \
                        and env["envelope_id"] not in self.mirrored:
                    self.mirrored.add(env["envelope_id"])
                    return env
            if self.channel_id in self.client.closed_reason:
                raise AdapterError(f"the hub closed the session while waiting for {name!r}: "
                                   f"{self.client.closed_reason[self.channel_id]}")
            await self.client.changed.wait()


class RemoteParticipant:
    """A participant that lives elsewhere: its turn is its next round on the served hub."""

    def __init__(self, name: str, remote: _Remote) -> None:
        self.name = name
        self.remote = remote

    async def open_session(self, ctx: AgentContext, emit: Any) -> Capabilities:
        return Capabilities(control_loop="self", supports_stepwise=True, telemetry_stream=False)

    async def on_message(self, msg: Any, tools: SessionTools) -> None:
        env = await self.remote.next_round(self.name)
        data = env.get("event_data") or {}
        if env["event_type"] == wire.AG2_TEXT:
            tools.send_message(str(data.get("text", "")))
            return
        if data.get("body"):
            tools.send_message(str(data["body"]))
        updates = data.get("context_updates") or {}
        for key, value in (updates.get("set") or {}).items():
            tools.set_context(key, value)
        for key in updates.get("delete") or []:
            tools.delete_context(key)
        routing = data.get("routing") or {}
        if routing.get("tool"):
            tools.execute_tool_call(routing["tool"], {"reason": routing["reason"]} if routing.get("reason") else None)
        if routing.get("kind") == "handoff" and routing.get("target"):
            tools.handoff(self.remote.names.get(routing["target"], routing["target"]), routing.get("reason") or "")
        elif routing.get("kind") == "finish":
            tools.finish(routing.get("reason") or "")

    async def close_session(self, session_id: str) -> None:
        return None


async def _identify(client: WireClient, names: list[str], local: set[str]) -> dict[str, str]:
    ids = {}
    for name in names:
        if name in local:
            agent_id = await client.call("find_agent_id", {"name": name})
            if agent_id is None:
                passport = await client.call("register", {"passport": {"name": name}, "resume": {}, "skill_md": None,
                                                          "rule": {}})
                agent_id = passport["agent_id"]
            else:
                await client.hello(name)
            client.local[agent_id] = name
        else:
            try:
                agent_id = (await client.call("get_agent", {"name_or_id": name}))["agent_id"]
            except HubError:
                raise HubError(f"participant {name!r} is not in the agents file and not registered with the hub at "
                               f"{client.url}") from None
        ids[name] = agent_id
    return ids


async def run_remote(url: str, hub: Any, spec: dict, agents: dict, task: Optional[str], **kw: Any) -> Any:
    """Run `spec` with the file's `agents` on the served hub at `url`; the others are remote."""
    from turnflow.runtime.runner import run_session

    names = [str(p.get("agent_id")) for p in spec.get("participants") or [] if isinstance(p, dict)]
    local = set(agents) & set(names)
    opener = spec_opener(spec)
    if opener is None or opener not in local:
        raise HubError(f"the session's opener {opener!r} must be one of the agents file's agents")
    client = WireClient(url)
    await client.connect()
    try:
        remote = _Remote(client, await _identify(client, names, local))
        knobs = spec.get("knobs") or {}
        if spec.get("kind") == "workflow" and knobs:
            from turnflow.interop.ag2 import bind_agents

            knobs = bind_agents(knobs, remote.ids)
        ttl = spec.get("ttl_seconds")
        channel = await client.call("create_channel", {
            "creator_id": remote.ids[opener], "manifest_type": spec.get("kind"),
            "participants": [remote.ids[n] for n in names if n != opener], "knobs": knobs,
            "ttl": int(ttl) if ttl else None, "labels": {"task": task} if task else None})
        remote.channel_id = channel["channel_id"]
        everyone = {**{n: RemoteParticipant(n, remote) for n in names if n not in local}, **agents}
        hub.subscribe(remote.forward)
        result = await run_session(hub, spec, everyone, task, **kw)
        if remote.channel_id not in client.closed_reason:
            with contextlib.suppress(HubError):
                await client.call("close_channel", {"channel_id": remote.channel_id,
                                                    "reason": result.close_reason or "closed"})
        if remote.error is not None and result.error is None:
            result.error = remote.error
        return result
    finally:
        await client.close()
