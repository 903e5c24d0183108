"""`turnflow run FLOW --agents A --hub ws://HOST:PORT`: the agents file's agents take part in a session
on a served hub (`turnflow serve`), alongside participants that are remote (AG2 agents, or another
`turnflow run --hub`). The `.flow`'s participant names are the agents' registered names.

The run drives the served session itself, through a `ServedPort` (serve/served_port.py, the
`SessionHost` over the wire): the served hub holds the session, decides with its adapter whose
turn it is, and logs every round; the ordinary run loop (`runtime.runner.drive_session`) takes
the file's agents' turns through the port and waits for the remote participants' rounds. No hub
runs in this process.

The session's opener (initiator, or a workflow's start speaker) is either one of the file's agents
(this run opens the session) or a remote participant: the run then registers or attaches the
file's agents, waits for that participant's invite to a session of the flow's kind with exactly
the flow's participants (and, for a workflow, the flow's knobs), acks it and runs it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from turnflow.runtime.errors import AdapterError
from turnflow.runtime.session_spec import SessionSpec
from turnflow.serve.client import HubError, WireClient
from turnflow.serve.served_port import ServedPort

if TYPE_CHECKING:
    from turnflow.runtime.runner import RunControl, RunResult

__all__ = ["HubError", "WireClient", "run_remote", "served_peers"]


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


async def _join(client: WireClient, ids: dict[str, str], spec: SessionSpec, knobs: list[dict[str, Any]], opener: str,
                control: Any, timeout: Optional[float]) -> dict[str, Any]:
    """Wait for the remote opener's invite to this flow's session, ack it as every one of the
    file's agents in it, and return the channel record. A session of the flow's kind with the
    flow's participants but workflow knobs other than one of `knobs` (the flow's graph in its
    forms) is rejected (this run would drive another graph); other invites are left alone."""
    kind = spec.kind
    everyone = set(ids.values())

    async def matching() -> dict[str, Any]:
        while True:
            env, recipient = await client.invites.get()
            data = env.get("event_data") or {}
            if data.get("manifest_type") != kind or data.get("creator_id") != ids[opener]:
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


def _bound(ids: dict[str, str], spec: SessionSpec) -> dict[str, Any]:
    knobs: dict[str, Any] = spec.knobs
    if spec.kind == "workflow" and knobs:
        from turnflow.interop.ag2 import bind_agents

        knobs = bind_agents(knobs, ids)
    return knobs


async def _open_or_join(client: WireClient, ids: dict[str, str], forms: list[SessionSpec], names: list[str],
                        opener: str, task: Optional[str], control: Any, max_turns: Optional[int],
                        timeout: Optional[float]) -> tuple[dict[str, Any], SessionSpec]:
    """The served session's channel record and the spec it runs: opened by this run (on the first
    form, with this run's `max_turns` and `timeout` as its TTL) when the opener is one of the file's
    agents, else the one the remote opener invites the file's agents to (on whichever form its
    knobs are; `timeout` bounds the wait)."""
    if ids[opener] not in client.local:
        bound = [_bound(ids, form) for form in forms]
        channel = await _join(client, ids, forms[0], bound, opener, control, timeout)
        knobs = channel.get("knobs") or {}
        return channel, forms[bound.index(knobs)] if knobs in bound else forms[0]
    spec = forms[0].replace(max_turns=max_turns, ttl_seconds=timeout)
    ttl = spec.ttl_seconds
    opened: dict[str, Any] = await client.call("create_channel", {
        "creator_id": ids[opener], "manifest_type": spec.kind,
        "participants": [ids[n] for n in names if n != opener], "knobs": _bound(ids, spec),
        "ttl": int(ttl) if ttl else None, "labels": {"task": task} if task else None})
    return opened, spec


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


async def _deadline(port: ServedPort, seconds: float) -> None:
    """`--timeout` on a session a remote participant opened (its TTL is the opener's): the run
    closes it (`ttl_expired`) when it is still open after `seconds`."""
    await asyncio.sleep(seconds)
    md = port.live.metadata
    if not md.state.terminal:
        with contextlib.suppress(HubError, AdapterError, Exception):
            await port.close("ttl_expired")


async def run_remote(url: str, spec: Union[SessionSpec, dict[str, Any]], agents: dict[str, Any], task: Optional[str], *,
                     keys: Optional[dict[str, str]] = None, notice: Optional[Callable[[str], None]] = None,
                     other_forms: Any = (), on_port: Optional[Callable[[ServedPort], None]] = None,
                     control: Optional[RunControl] = None, max_turns: Optional[int] = None,
                     ttl_seconds: Optional[float] = None) -> RunResult:
    """Run `spec` with the file's `agents` on the served hub at `url`; the others are remote.
    `keys`: API keys of the file's agents; `notice(text)`: tells the user the run is waiting, and
    whether AG2 participants need `register_extensions()`; `other_forms`: the same block compiled
    otherwise (its workflow graph with extension conditions), joined when the remote opener's
    session runs that form; `on_port(port)`: handed the session's `ServedPort` before its first
    envelope is read (to listen to it). `max_turns`, `ttl_seconds`: as `turnflow run`'s; the
    result is the served session's (its id, state, close reason, turns)."""
    from turnflow.interop.ag2 import extensions_needed
    from turnflow.runtime.agents.protocol import as_agent
    from turnflow.runtime.runner import RunControl, check_run_agents, drive_session

    spec = SessionSpec.parse(spec)
    forms = [spec, *(SessionSpec.parse(form) for form in other_forms)]
    names = spec.participant_ids
    local = set(agents) & set(names)
    opener = spec.opener
    if opener is None or opener not in names:
        raise HubError(f"the flow names no opener among its participants (found {opener!r})")
    if not local:
        raise HubError("none of the flow's participants is defined in the agents file")
    check_run_agents(spec, agents, remote=set(names) - local)
    needed = extensions_needed(spec.knobs) if spec.kind == "workflow" else []
    if needed and notice is not None:
        notice(f"the workflow uses {', '.join(needed)}, which AG2 1.2.1 does not ship: every AG2 participant's "
               "process must call turnflow.interop.ag2.register_extensions() before it joins (docs/serve.md)")
    ctl = control or RunControl()
    client = WireClient(url, keys)
    await client.connect()
    port: Optional[ServedPort] = None
    deadline: Optional[asyncio.Task[None]] = None
    try:
        ids = await _identify(client, names, local, replay=opener not in local)
        if opener not in local and notice is not None:
            notice(f"waiting for {opener!r} to open the {spec.kind} session on {url}")
        channel, run_spec = await _open_or_join(client, ids, forms, names, opener, task, ctl, max_turns, ttl_seconds)
        port = ServedPort(client, channel, run_spec, ids, local)
        if on_port is not None:
            on_port(port)
        await port.sync()
        port.start()
        if opener not in local and ttl_seconds:
            deadline = asyncio.get_running_loop().create_task(_deadline(port, ttl_seconds))
        driven = {n: as_agent(a) for n, a in agents.items()}
        return await drive_session(port, run_spec, driven, task, control=ctl, max_turns=max_turns,
                                   peers=await served_peers(client))
    finally:
        if deadline is not None:
            deadline.cancel()
        if port is not None:
            await port.aclose()
        await client.close()
