"""`turnflow run FLOW --agents A --hub ws://HOST:PORT`: the agents file's agents take part in a session
on a served hub (`turnflow serve`), alongside participants that are remote (AG2 agents, or another
`turnflow run --hub`). The `.flow`'s participant names are the agents' registered names.

The session is run by the ordinary runner on a local *mirror*: a local hub holds the same session
(same spec, participants by name) and drives the file's agents turn by turn as `turnflow run`
always does; every round a local agent takes is posted to the served hub as that agent, and a
remote participant's turn is taken by a proxy that waits for its next round on the served hub and
replays it into the mirror. The served hub is the authority: it runs the same adapters, so both
logs hold the same rounds; the local store keeps the mirror (and the agents' telemetry).

The session's opener (initiator, or a workflow's start speaker) is either one of the file's agents
(this run opens the session) or a remote participant: the run then registers or attaches the
file's agents, waits for that participant's invite to a session of the flow's kind with exactly
the flow's participants (and, for a workflow, the flow's knobs), acks it and runs the mirror.
API keys (`keys`: name -> key, a hub started with `--auth-keys`) go in AG2's `ApiKeyAuth` shape."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any, Optional, Union

from turnflow.runtime.agents.contract import AgentContext, Capabilities, SessionTools
from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope
from turnflow.runtime.errors import AdapterError, StoreError
from turnflow.runtime.hub import Hub
from turnflow.runtime.session_spec import SessionSpec
from turnflow.serve import wire

if TYPE_CHECKING:
    from turnflow.runtime.runner import RunResult

_FORWARDED = (EV_TEXT, EV_PACKET, EV_CONTEXT_SET)
_ROUNDS = (wire.AG2_TEXT, wire.AG2_PACKET)


class HubError(StoreError):
    """The served hub cannot be reached or refused a step of the run (exit 2, like a store)."""


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
        self.changed = asyncio.Event()  # set on every notification (proxies re-read the log)
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
        fut = self._pending[rid] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"kind": "request", "request_id": rid, "op": op, "params": params}))
        frame = await fut
        if not frame["ok"]:
            raise HubError(f"the hub refused {op}: {frame['error_code']}: {frame['error_message']}")
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

    async def next_round(self, name: str) -> dict[str, Any]:
        """The next round of remote participant `name` that the mirror has not replayed yet."""
        agent_id = self.ids[name]
        while True:
            self.client.changed.clear()
            if self.error is not None:
                raise AdapterError(self.error)
            wal: list[dict[str, Any]] = await self.client.call("read_wal", {"channel_id": self.channel_id})
            for env in wal:
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


async def _identify(client: WireClient, names: list[str], local: set[str], replay: bool) -> dict[str, str]:
    ids = {}
    for name in names:
        if name in local:
            agent_id = await client.call("find_agent_id", {"name": name})
            if agent_id is None:
                passport = await client.call("register", {"passport": {"name": name, "auth": client.auth(name)},
                                                          "resume": {}, "skill_md": None, "rule": {}})
                agent_id = passport["agent_id"]
            else:
                client.local[agent_id] = name  # before the hello: the replayed invites are for this agent
                await client.hello(name, replay)
            client.local[agent_id] = name
        else:
            try:
                agent_id = (await client.call("get_agent", {"name_or_id": name}))["agent_id"]
            except HubError:
                raise HubError(f"participant {name!r} is not in the agents file and not registered with the hub at "
                               f"{client.url}") from None
        ids[name] = agent_id
    return ids


async def _join(remote: _Remote, spec: SessionSpec, knobs: list[dict[str, Any]], opener: str, control: Any,
                timeout: Optional[float]) -> dict[str, Any]:
    """Wait for the remote opener's invite to this flow's session, ack it as every one of the
    file's agents in it, and return the channel record. A session of the flow's kind with the
    flow's participants but workflow knobs other than one of `knobs` (the flow's graph in its
    forms) is rejected (the mirror would run another graph); other invites are left alone."""
    client, kind = remote.client, spec.kind
    everyone = set(remote.ids.values())

    async def matching() -> dict[str, Any]:
        while True:
            env, recipient = await client.invites.get()
            data = env.get("event_data") or {}
            if data.get("manifest_type") != kind or data.get("creator_id") != remote.ids[opener]:
                continue
            channel: dict[str, Any] = await client.call("get_channel", {"channel_id": env["channel_id"]})
            if channel["state"] != "pending" or {p["agent_id"] for p in channel["participants"]} != everyone:
                continue
            if kind == "workflow" and channel.get("knobs") not in knobs:
                await client.answer(channel["channel_id"], recipient, False, "the workflow differs from the flow "
                                    "this participant runs")
                continue
            return channel

    waiting = asyncio.wait_for(matching(), timeout)
    try:
        channel = await (control.cancellable(waiting) if control is not None else waiting)
    except asyncio.TimeoutError:
        raise HubError(f"{opener!r} did not open the session within {timeout:g} s") from None
    except Exception as exc:
        if control is None or control.reason is None:
            raise
        raise HubError(f"stopped while waiting for {opener!r} to open the session ({control.reason})") from exc
    for agent_id in client.local:
        if agent_id in channel.get("pending_acks", []):
            await client.answer(channel["channel_id"], agent_id, True)
    return channel


def _bound(remote: _Remote, spec: SessionSpec) -> dict[str, Any]:
    knobs: dict[str, Any] = spec.knobs
    if spec.kind == "workflow" and knobs:
        from turnflow.interop.ag2 import bind_agents

        knobs = bind_agents(knobs, remote.ids)
    return knobs


async def _open_or_join(remote: _Remote, forms: list[SessionSpec], names: list[str], opener: str,
                        task: Optional[str], control: Any,
                        timeout: Optional[float]) -> tuple[dict[str, Any], SessionSpec]:
    """The served session and the form of the spec it runs: opened by this run (on the first
    form) when the opener is one of the file's agents, else the one the remote opener invites the
    file's agents to (on whichever form its knobs are)."""
    client, spec = remote.client, forms[0]
    knobs = _bound(remote, spec)
    if remote.ids[opener] not in client.local:
        bound = [_bound(remote, form) for form in forms]
        channel = await _join(remote, spec, bound, opener, control, timeout)
        knobs = channel.get("knobs") or {}
        return channel, forms[bound.index(knobs)] if knobs in bound else spec
    ttl = spec.ttl_seconds
    return await client.call("create_channel", {
        "creator_id": remote.ids[opener], "manifest_type": spec.kind,
        "participants": [remote.ids[n] for n in names if n != opener], "knobs": knobs,
        "ttl": int(ttl) if ttl else None, "labels": {"task": task} if task else None}), spec


async def served_peers(client: WireClient, limit: int = 500) -> list[dict[str, Any]]:
    """The served hub's registered agents as `lookup_peers` lists them (`{agent_id, role, description}`
    by registered name); none when the hub does not answer `list_agents`."""
    try:
        passports = await client.call("list_agents", {"limit": limit})
    except (HubError, AdapterError):
        return []
    out = []
    for p in passports if isinstance(passports, list) else ():
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            out.append({"agent_id": p["name"], "role": "agent", "description": str(p.get("description") or "")[:500]})
    return out


async def run_remote(url: str, hub: Hub, spec: Union[SessionSpec, dict[str, Any]], agents: dict[str, Any],
                     task: Optional[str], *,
                     keys: Optional[dict[str, str]] = None, notice: Any = None, other_forms: Any = (),
                     served: Any = None, **kw: Any) -> RunResult:
    """Run `spec` with the file's `agents` on the served hub at `url`; the others are remote.
    `keys`: API keys of the file's agents; `notice(text)`: tells the user the run is waiting, and
    whether AG2 participants need `register_extensions()`; `other_forms`: the same block compiled
    otherwise (its workflow graph with extension conditions), joined when the remote opener's
    session runs that form; `served(session_id)`: told the served session's id once it is open.
    The result carries the served session's id (the id `turnflow inspect` shows in the served
    store), not the local mirror's."""
    from turnflow.interop.ag2 import extensions_needed
    from turnflow.runtime.runner import run_session

    spec = SessionSpec.parse(spec)
    forms = [spec, *(SessionSpec.parse(form) for form in other_forms)]
    names = spec.participant_ids
    local = set(agents) & set(names)
    opener = spec.opener
    if opener is None or opener not in names:
        raise HubError(f"the flow names no opener among its participants (found {opener!r})")
    if not local:
        raise HubError("none of the flow's participants is defined in the agents file")
    needed = extensions_needed(spec.knobs) if spec.kind == "workflow" else []
    if needed and notice is not None:
        notice(f"the workflow uses {', '.join(needed)}, which AG2 1.2.1 does not ship: every AG2 participant's "
               "process must call turnflow.interop.ag2.register_extensions() before it joins (docs/serve.md)")
    client = WireClient(url, keys)
    await client.connect()
    try:
        remote = _Remote(client, await _identify(client, names, local, replay=opener not in local))
        if opener not in local and notice is not None:
            notice(f"waiting for {opener!r} to open the {spec.kind} session on {url}")
        channel, spec = await _open_or_join(remote, forms, names, opener, task, kw.get("control"),
                                            kw.get("ttl_seconds"))
        remote.channel_id = channel["channel_id"]
        if served is not None:
            served(remote.channel_id)
        everyone = {**{n: RemoteParticipant(n, remote) for n in names if n not in local}, **agents}
        hub.subscribe(remote.forward)
        result = await run_session(hub, spec, everyone, task, peers=await served_peers(client), **kw)
        if remote.channel_id not in client.closed_reason:
            with contextlib.suppress(HubError):
                await client.call("close_channel", {"channel_id": remote.channel_id,
                                                    "reason": result.close_reason or "closed"})
        if remote.error is not None and result.error is None:
            result.error = remote.error
        result.session_id = remote.channel_id
        return result
    finally:
        await client.close()
