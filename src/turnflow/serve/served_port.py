"""`ServedPort`: the `SessionHost` (runtime/port.py) of one session on a served hub, over its
WebSocket wire (`serve.client.WireClient`, AG2 1.2.1's frames), for `turnflow run --hub`.

The session is the served hub's: its id, its log, its acks, closes and expiries. The port reads that
log (`read_wal`, from where it stopped, on every notification and after each of its own requests)
and folds each envelope, with agent ids turned back into participant names, through the adapter
the served hub runs for the session (the same built-in adapter, same graph): that fold gives the run
loop whose turn it is, each participant's view and turn input, and the turn count. Nothing is
written by this process: a round is posted to the served hub as its sender (`post_envelope`; a plain
round of a consulting, conversation or discussion session as AG2's text, a workflow round as
`ag2.packet` with handoff targets as agent ids), which validates, logs and folds it; the port then
reads it back. Agents' telemetry, which the wire does not carry, stays in this process: handed to
the telemetry listeners and kept in `telemetry` (`turnflow run --hub --store` writes it).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from turnflow.runtime.clock import STEADY
from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_EXPECTATION_VIOLATED, EV_PACKET, EV_TEXT, LIFECYCLE, Envelope,
                                       telemetry_event_ok)
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.live import LiveSession
from turnflow.runtime.port import Listener, Roster, roster_of, turn_input_of
from turnflow.runtime.session import Participant, SessionMetadata, SessionState, shared_knobs
from turnflow.runtime.transcript import Transcript
from turnflow.serve import wire
from turnflow.serve.client import HubError, Refused, WireClient

if TYPE_CHECKING:
    from turnflow.runtime.session_spec import SessionSpec
    from turnflow.runtime.store.contract import Store

_POSTED = (EV_TEXT, EV_PACKET, EV_CONTEXT_SET)  # what a participant's round is made of
TelemetryListener = Callable[[str, dict[str, Any]], None]


def _epoch(text: Any, default: float) -> float:
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return default


class ServedPort:
    """`SessionHost` of the served session `channel` (its `get_channel` / `create_channel` record),
    run as `spec` (participants by name; `ids`: name -> agent id on the served hub). `local`: the
    participants this process drives; every other one is `remote`."""

    def __init__(self, client: WireClient, channel: dict[str, Any], spec: SessionSpec, ids: dict[str, str],
                 local: Iterable[str], *, clock: Callable[[], float] = STEADY) -> None:
        from turnflow.runtime.adapters import builtin_adapters

        self.client = client
        self.ids = ids
        self.names = {v: k for k, v in ids.items()}
        self._clock = clock
        self._sid = str(channel["channel_id"])
        self._remote = frozenset(n for n in spec.participant_ids if n not in set(local))
        manifest = channel.get("manifest") or {}
        adapter = builtin_adapters()[(spec.kind, int(manifest.get("version", 1)))]
        order = {self.names.get(p["agent_id"], p["agent_id"]): p.get("order", i)
                 for i, p in enumerate(channel.get("participants") or ())}
        parts = sorted((Participant(p.agent_id, p.role, order.get(p.agent_id, p.order), p.description, p.tools)
                        for p in spec.participants), key=lambda p: p.order)
        now = clock()
        creator = self.names.get(channel.get("creator_id", ""), spec.opener or parts[0].agent_id)
        # when the served hub says it opened the session (its clock: kept for the local copy), and
        # when this process learnt of it (its own clock: what `acks_within` counts from)
        self.served_created_at = _epoch(channel.get("created_at"), now)
        md = SessionMetadata(session_id=self._sid, manifest=adapter.manifest, creator_id=creator,
                             participants=parts, knobs=shared_knobs(spec.knobs),
                             created_at=now, name=spec.name,
                             expectations=list(spec.expectations), ttl_seconds=spec.ttl_seconds,
                             labels=dict(channel.get("labels") or {}), tools=spec.tools)
        md.expires_at = _epoch(channel["expires_at"], now) if channel.get("expires_at") else None
        md.pending_acks = set(md.participant_ids) - {creator}
        self._live = LiveSession(md, adapter, adapter.initial_state(md))
        self._live.transcript = Transcript([])
        self.log: list[Envelope] = []  # the served log as folded, seq i at index i - 1
        self.telemetry: list[dict[str, Any]] = []
        self.telemetry_listeners: list[TelemetryListener] = []
        self._listeners: list[Listener] = []
        self._shown: dict[str, Roster] = {}
        self._folded = asyncio.Condition()
        self._reading = asyncio.Lock()
        self._follower: Optional[asyncio.Task[None]] = None
        self.failed: Optional[str] = None  # why the log could not be followed any further
        self._sweeper: Optional[asyncio.Task[None]] = None
        self._fired: set[str] = set()  # keys of the flow's expectations violated so far

    # -- reading the served log -----------------------------------------------------------------
    async def sync(self) -> None:
        """Read and fold what the served log holds past what was folded, delivering each envelope
        to the listeners in log order."""
        async with self._reading:
            wal: list[dict[str, Any]] = await self.client.call("read_wal", {"channel_id": self._sid,
                                                                          "since": len(self.log)})
            now = self._clock()
            for record in wal:
                env = self._from_wire(record, len(self.log) + 1)
                self.log.append(env)
                # folded at the time this process read it, on its own clock: the hub's times are
                # another machine's clock (off, or stepped), which the flow's expectations must not
                # compare with this one's; the log keeps the hub's times
                served_at, env.created_at = env.created_at, now
                self._live.apply(env)
                env.created_at = served_at
                for listener in list(self._listeners):
                    await listener(env, self._live.metadata)
            if wal:
                async with self._folded:
                    self._folded.notify_all()

    async def follow(self) -> None:
        """Fold the served log as the hub notifies this connection (and once a second besides, for
        envelopes addressed to no agent of this process), until the session ends."""
        changed = self.client.changed
        while not self._live.metadata.state.terminal:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), 1.0)
            changed.clear()
            try:
                if self.client.lost:
                    raise HubError(f"lost the connection to the hub at {self.client.url}")
                await self.sync()
            except HubError as exc:  # the waiters see it and say so
                self.failed = str(exc)
                async with self._folded:
                    self._folded.notify_all()
                return

    def start(self) -> None:
        """Start following the served log (`follow`) in a task of its own."""
        self._follower = asyncio.get_running_loop().create_task(self.follow())

    async def aclose(self) -> None:
        await self.stop_sweeper()
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(BaseException):
                await self._follower

    def _name(self, agent_id: Any) -> Any:
        return self.names.get(agent_id, agent_id) if isinstance(agent_id, str) else agent_id

    def _from_wire(self, d: dict[str, Any], seq: int) -> Envelope:
        """One envelope of the served log (AG2's shape, agent ids) as this session's (names)."""
        et = wire.from_ag2_event(d["event_type"], self._live.metadata.kind)
        data: dict[str, Any] = dict(d.get("event_data") or {})
        if et in LIFECYCLE:
            data.pop("channel_id", None)
            if et == wire.FROM_AG2[wire.AG2_INVITE]:
                data = {}
        routing = data.get("routing")
        if et == EV_PACKET and isinstance(routing, dict) and routing.get("target") in self.names:
            data["routing"] = {**routing, "target": self.names[routing["target"]]}
        if et == EV_EXPECTATION_VIOLATED and "agent_id" in data:
            data["agent_id"] = self._name(data["agent_id"])
        audience = d.get("audience")
        return Envelope(self._sid, self._name(d.get("sender_id")),
                        [self._name(a) for a in audience] if isinstance(audience, list) else None, et, data,
                        envelope_id=str(d.get("envelope_id") or ""), created_at=_epoch(d.get("created_at"), 0.0),
                        seq=seq, causation_id=d.get("causation_id"), trace_id=d.get("trace_id"))

    def _to_wire(self, env: Envelope) -> dict[str, Any]:
        """A round of one of this process's participants as the served hub takes it from that agent."""
        et, data = env.event_type, env.event_data
        if et not in _POSTED or env.sender_id not in self.ids or env.sender_id in self._remote:
            raise ProtocolError(f"{et!r} from {env.sender_id!r} cannot be sent to the served hub by this run "
                                "(a run on a served hub posts its own participants' rounds only)")
        routing = data.get("routing") if et == EV_PACKET else None
        if et == EV_PACKET and self._live.metadata.kind != "workflow":  # a plain round: AG2's agents send text
            data, et = {"text": data.get("body", "")}, EV_TEXT
        elif isinstance(routing, dict) and routing.get("target") in self.ids:
            data = {**data, "routing": {**routing, "target": self.ids[routing["target"]]}}
        audience = [self.ids.get(a, a) for a in env.audience] if env.audience is not None else None
        return {"channel_id": self._sid, "sender_id": self.ids[env.sender_id], "audience": audience,
                "event_type": wire.TO_AG2[et], "event_data": data}

    async def _request(self, op: str, params: dict[str, Any]) -> Any:
        """A request about the session, then the log read up to its effect. A refusal of a step
        the session's rules decide (`protocol_error`, `access_denied`) is a `ProtocolError`, as in
        process; a lost link stays a `HubError`."""
        try:
            result = await self.client.call(op, params)
        except Refused as exc:
            if exc.code in ("protocol_error", "access_denied", "error"):
                raise ProtocolError(str(exc)) from None
            raise
        await self.sync()
        return result

    async def copy_to(self, store: Store) -> None:
        """Write the session as this run saw it into a local store, as one group: its creation
        record (participants by name), its log as folded (names for agent ids; the served hub's
        envelope ids and times) and the agents' telemetry (`turnflow run --hub --store`)."""
        from turnflow.runtime.store.records import CommitUnits, envelope_row, session_row, telemetry_row

        units = CommitUnits()
        units.sessions.append(session_row({**self._live.metadata.creation_record(),
                                           "created_at": self.served_created_at}))
        for env in self.log:
            units.rows.append(envelope_row(env, store.next_global_seq()))
            units.envelopes.append(env)
        units.telemetry = [telemetry_row(self._sid, record) for record in self.telemetry]
        await store.commit_group(units)

    # -- SessionPort ----------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self._sid

    def clock(self) -> float:
        return self._clock()

    def metadata(self) -> SessionMetadata:
        return self._live.metadata

    def roster(self) -> Roster:
        return roster_of(self._live.metadata)

    def view(self, agent_id: str) -> Sequence[dict[str, Any]]:
        live = self._live
        policy = live.adapter.default_view_policy(live.metadata, agent_id)
        render = live.adapter.render_envelope
        if not hasattr(policy, "project_log"):
            projected: Sequence[dict[str, Any]] = policy.project(iter(self.log), agent_id, render)
            return projected
        tr = live.transcript
        if tr is None:  # the session ended (its transcript is let go): from the log
            from turnflow.runtime.envelope import SUBSTANTIVE

            tr = Transcript([e for e in self.log if e.event_type in SUBSTANTIVE])
        view: Sequence[dict[str, Any]] = policy.project_log(tr.log_for(agent_id, render,
                                                                       getattr(policy, "named", False)))
        return view

    def turn_input(self, agent_id: str) -> Optional[str]:
        return turn_input_of(self._live, agent_id)

    def check_roster_change(self, envelope: Envelope, queued: Sequence[Envelope] = ()) -> None:
        raise ProtocolError(f"{envelope.event_type!r} refused: a session on a served hub keeps the participants "
                            "it was opened with (turnflow run --hub)")

    async def post(self, envelope: Envelope) -> Envelope:
        envelope_id = await self._request("post_envelope", {"envelope": self._to_wire(envelope)})
        for env in reversed(self.log):
            if env.envelope_id == envelope_id:
                return env
        raise HubError(f"the hub at {self.client.url} accepted envelope {envelope_id!r} of session {self._sid!r} "
                       "but its log does not hold it")

    def record_telemetry(self, agent_id: str, event: Any) -> bool:
        if not telemetry_event_ok(event):
            import warnings

            warnings.warn(f"dropped malformed telemetry event from {agent_id!r}: {event!r}", stacklevel=3)
            return False
        self.store_telemetry({"agent_id": agent_id, "at": self._clock(), **event})
        return True

    async def emit_telemetry(self, agent_id: str, event: Any) -> bool:
        return self.record_telemetry(agent_id, event)

    def store_telemetry(self, record: dict[str, Any]) -> None:
        self.telemetry.append(record)
        for fn in self.telemetry_listeners:
            fn(self._sid, record)

    async def open_chatroom(self, creator_id: str, name: str, others: Sequence[str]) -> SessionMetadata:
        raise ProtocolError(f"create_chatroom({name!r}) refused: turnflow run --hub opens no session on the served "
                            "hub besides the flow's")

    def last_shown(self, agent_id: str) -> Optional[Roster]:
        return self._shown.get(agent_id)

    def shown(self, agent_id: str, roster: Roster) -> None:
        if not self._live.metadata.state.terminal and roster:
            self._shown[agent_id] = roster

    def forget_shown(self, agent_id: str) -> None:
        self._shown.pop(agent_id, None)

    # -- SessionHost ----------------------------------------------------------------------------
    @property
    def live(self) -> LiveSession:
        return self._live

    @property
    def remote(self) -> frozenset[str]:
        return self._remote

    def expected_next(self) -> Optional[str]:
        live = self._live
        return None if live.metadata.state.terminal else live.expected_speaker()

    def read(self, start: int = 1, end: Optional[int] = None) -> Iterable[Any]:
        return self.log[max(start, 1) - 1:end]

    async def ack(self, agent_id: str) -> None:
        if agent_id in self._live.metadata.pending_acks:
            await self._request("post_envelope", {"envelope": {
                "channel_id": self._sid, "sender_id": self.ids[agent_id], "audience": None,
                "event_type": wire.AG2_ACK, "event_data": {}}})

    async def reject(self, agent_id: str, reason: str) -> None:
        await self._request("post_envelope", {"envelope": {
            "channel_id": self._sid, "sender_id": self.ids[agent_id], "audience": None,
            "event_type": wire.AG2_REJECT, "event_data": {"reason": reason}}})

    async def close(self, reason: str) -> None:
        md = self._live.metadata
        if md.state.terminal or md.state == SessionState.CLOSING:
            raise ProtocolError(f"session {self._sid!r} is already {md.state.value}")
        await self._request("close_channel", {"channel_id": self._sid, "reason": reason})

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def start_sweeper(self, interval: float) -> bool:
        """The flow's own `expect` clauses, checked here every `interval` (the served hub checks the
        session's TTL and its kind's default expectations; the wire carries no others)."""
        if self._sweeper is not None or not self._live.metadata.expectations:
            return False

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.sweep()
        self._sweeper = asyncio.get_running_loop().create_task(loop())
        return True

    async def stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None

    async def sweep(self, now: Optional[float] = None) -> list[Envelope]:
        """One pass over the flow's expectations on the session as folded: a violation (once per
        key, as in process) is handed to the listeners as an `expectation.violated` envelope that is
        not in the served log (seq 0); `auto_close` closes the served session
        (`expectation_violated:NAME`). `hide` cannot move the turn on a served hub: it is a warning."""
        from turnflow.runtime.expectations import evaluate

        live = self._live
        md = live.metadata
        now = self._clock() if now is None else now
        fired: list[Envelope] = []
        for i, exp in enumerate(md.expectations):
            if md.state != SessionState.ACTIVE and md.state != SessionState.INVITED:
                break
            found = evaluate(live, i, exp, now)
            if found is None or found[0] in self._fired:
                continue
            key, agent = found
            self._fired.add(key)
            action = "warn" if exp.on_violation == "hide" else exp.on_violation
            env = Envelope(self._sid, md.creator_id, [] if action == "audit" else None, EV_EXPECTATION_VIOLATED,
                           {"name": exp.name, "action": action, "seconds": exp.to_dict()["params"]["seconds"],
                            "agent_id": agent, "key": key}, created_at=now)
            fired.append(env)
            for listener in list(self._listeners):
                await listener(env, md)
            if action == "auto_close":
                with contextlib.suppress(ProtocolError):  # (ended meanwhile)
                    await self.close(f"expectation_violated:{exp.name}")
        return fired

    async def changed(self, seq: int) -> None:
        async with self._folded:
            await self._folded.wait_for(lambda: len(self.log) > seq or self.failed is not None)
        if len(self.log) <= seq:
            raise HubError(self.failed or f"lost the connection to the hub at {self.client.url}")
