"""Drive one session on a hub with agents, turn by turn (what `turnflow run` does).

The session is opened by the participant marked `initiator`, else by the start speaker
(workflow) or the first participant. The hub asks the expected speaker for one round at a
time; in a conversation (no fixed order) the participants alternate, starting with the
opener. In the kinds that have no `finish` routing (consulting, conversation, discussion) a
`finish` step posts the round's text, then closes the session with the finish reason.
An agent that fails its turn (a script that ran out, a refused send, an exception) has
the failure logged as an `error` telemetry event and the turn retried once with the same
input; a second failure closes the session with `agent_error` and the run reports the error
(agents.driver). A bad handshake fails the session start with `AdapterError`.

While the session runs, the hub's sweeper enforces its TTL and expectations (started here
unless the hub already runs one). When the hub ends the session itself (`auto_close`, TTL)
or moves the turn on (`hide`), the agent's turn in progress is cancelled and not retried.
`RunControl.interrupt()` (what `turnflow run` calls on Ctrl-C / SIGTERM) cancels the turn in
progress and closes the session with the reason `interrupted`. The capabilities an agent
declared are honoured: `control_loop: self` → one call per turn, no retry;
`supports_stepwise: false` → the agent is called once per session (single-shot).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Iterable, Optional, Union

from turnflow.runtime.agents.contract import Agent, SessionTools
from turnflow.runtime.agents.driver import TurnStopped, handshake, take_turn
from turnflow.runtime.agents.platform_tools import OPEN_MEMBERSHIP
from turnflow.runtime.agents.protocol import as_agent
from turnflow.runtime.agents.session_context import agent_context
from turnflow.runtime.envelope import (EV_EXPECTATION_VIOLATED, EV_PACKET, EV_SESSION_CLOSED, EV_SESSION_EXPIRED,
                                       EV_TEXT, Envelope)
from turnflow.runtime.errors import AdapterError, EndpointUnavailable, ProtocolError
from turnflow.runtime.hub import Hub
from turnflow.runtime.port import HubPort, SessionHost
from turnflow.runtime.session import SessionMetadata, SessionState, check_agent_id
from turnflow.runtime.session_spec import SessionSpec
from turnflow.runtime.transcript import Messages

TASK_SENDER = "<task>"
MAX_ROUNDS = 100_000
ABNORMAL = ("agent_error", "invite_rejected", "expectation_violated:", "interrupted")


@dataclass
class RunResult:
    session_id: str
    state: str
    close_reason: Optional[str]
    turns: list[dict[str, Any]] = field(default_factory=list)
    error: Optional[str] = None
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return (self.error is None and self.state == SessionState.CLOSED.value
                and not any((self.close_reason or "").startswith(a) for a in ABNORMAL))

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "state": self.state, "close_reason": self.close_reason,
                "turns": self.turns}


def turn_of(e: Envelope) -> Optional[dict[str, Any]]:
    """One substantive envelope as a turn record (None for anything else)."""
    if e.event_type == EV_TEXT:
        return {"speaker": e.sender_id, "kind": "text", "tool": None, "target": None,
                "body": e.event_data.get("text", ""), "set": {}, "delete": []}
    if e.event_type != EV_PACKET:
        return None
    d = e.event_data
    r = d.get("routing") or {}
    cu = d.get("context_updates") or {}
    return {"speaker": e.sender_id, "kind": r.get("kind") or "text", "tool": r.get("tool"),
            "target": r.get("target"), "body": d.get("body", ""), "set": cu.get("set") or {},
            "delete": cu.get("delete") or []}


def turns_of(envelopes: Iterable[Any]) -> list[dict[str, Any]]:
    return [t for t in (turn_of(e) for e in envelopes if isinstance(e, Envelope)) if t is not None]


def sweep_interval_for(md: SessionMetadata) -> float:
    """How often the sweeper runs for a session: a quarter of its shortest deadline, 0.05-1 s."""
    deadlines = [e.seconds for e in md.expectations] + ([md.ttl_seconds] if md.ttl_seconds else [])
    return max(0.05, min([1.0] + [d / 4 for d in deadlines if d]))


class RunControl:
    """Stops a running session from outside: `interrupt()` (safe to call from a signal handler
    on the event loop's thread) cancels the agent's turn in progress; the runner then closes
    the session with `reason`. Repeated calls change nothing."""

    def __init__(self) -> None:
        self.reason: Optional[str] = None
        self._task: Optional[asyncio.Future[Any]] = None
        self._why: Optional[str] = None

    def interrupt(self, reason: str = "interrupted") -> None:
        if self.reason is None:
            self.reason = reason
        self._stop("interrupted")

    def _stop(self, why: str) -> None:
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            self._why = self._why or why
            task.cancel()

    async def cancellable(self, coro: Awaitable[Any]) -> Any:
        """Run agent code so that `interrupt()` or the hub can cancel it (`TurnStopped`)."""
        if self.reason is not None:
            if asyncio.iscoroutine(coro):
                coro.close()
            raise TurnStopped("interrupted")
        task = asyncio.ensure_future(coro)
        self._task, self._why = task, None
        try:
            return await task
        except asyncio.CancelledError:
            if self._why is None:  # cancelled from outside the runner: let it through
                raise
            raise TurnStopped(self._why) from None
        finally:
            self._task = None


async def run_session(hub: Hub, spec: Union[SessionSpec, dict[str, Any]], agents: dict[str, Any], task: Optional[str] = None, *,
                      control: Optional[RunControl] = None, max_turns: Optional[int] = None,
                      ttl_seconds: Optional[float] = None, sweep_interval: Optional[float] = None,
                      labels: Optional[dict[str, Any]] = None, session_id: Optional[str] = None,
                      keep_open: bool = False, peers: Optional[list[dict[str, Any]]] = None) -> RunResult:
    """Run one session of `spec` with `agents` (participant name -> agent). `max_turns` and
    `ttl_seconds` override the spec for this run; `control` lets the caller interrupt it.
    `labels` are added to the new session's `{"task": task}`. With `session_id`, continue that
    session instead (already in the hub, e.g. hydrated after an interruption): every agent is
    handed the session again, pending invites are acked, and the rounds go on from where the log
    stops. `keep_open` (batch runs): a run that is cancelled, loses its store or whose agent's model
    endpoint stays unavailable (`EndpointUnavailable`, raised) leaves the session as its log has
    it, to be continued later, instead of closing it. `agents` may also name agents
    that are not participants (yet): in a conversation or discussion `add_participant` brings one
    in, and it is handed the session on its first turn. `peers` (`{agent_id, role?, description?}`):
    more agents `lookup_peers` lists (a served hub's registered agents)."""
    spec = SessionSpec.parse(spec)
    spec = spec.replace(max_turns=max_turns, ttl_seconds=ttl_seconds)
    ctl = control or RunControl()
    check_run_agents(spec, agents)
    driven = {n: as_agent(a) for n, a in agents.items()}  # each in the one shape the driver calls
    if session_id is not None:
        md = hub.metadata(session_id)
        if md.state.terminal:
            return RunResult(session_id, md.state.value, md.close_reason or None, turns_of(hub.read(session_id)))
        _continue_clocks(hub, session_id)
    else:
        md = await _open(hub, spec, task, labels)
    return await drive_session(HubPort(hub, md.session_id), spec, driven, task, control=ctl,
                               max_turns=max_turns if md.kind != "workflow" else None, sweep_interval=sweep_interval,
                               keep_open=keep_open, peers=peers, continued=session_id is not None)


def _continue_clocks(hub: Hub, session_id: str) -> None:
    """A session continued (a batch taking up an interrupted task): the time nobody held it is not
    its turn's (the turn is asked again from its start) nor its lifetime's (its TTL runs on from
    what the runs before used of it: `held_seconds`)."""
    live = hub.sessions[session_id]
    now = hub.clock()
    live.restart_turn_clocks(now)
    md = live.metadata
    if md.ttl_seconds and md.expires_at is not None:
        times = [e.created_at for e in hub.read(session_id) if isinstance(e, Envelope)]
        shakes = [r["at"] for r in hub.store.telemetry(session_id)
                  if r.get("event") == "handshake" and isinstance(r.get("at"), (int, float))]
        md.expires_at = now + max(0.0, md.ttl_seconds - held_seconds(md.created_at, times, shakes))


def held_seconds(created_at: float, envelope_times: Iterable[float], handshake_times: Iterable[float]) -> float:
    """How long runs held a session, from its log and its agents' handshakes: from its creation to
    its last envelope, less each gap between an envelope and the first handshake after it (a run
    taking the session up again: before it, nobody held the session). By the times' order, so the
    clocks of the processes involved are taken to agree; each gap counts 0 or more."""
    marks = sorted([(t, 0) for t in envelope_times] + [(h, 1) for h in handshake_times])
    last = end = created_at
    gaps = 0.0
    since_envelope = True  # an envelope since the last handshake counted
    for t, kind in marks:
        if kind == 0:
            last = end = max(end, t)
            since_envelope = True
        elif since_envelope:
            gaps += max(0.0, t - last)
            since_envelope = False
    return max(0.0, end - created_at - gaps)


async def drive_session(port: SessionHost, spec: SessionSpec, agents: dict[str, Agent], task: Optional[str], *,
                        control: RunControl, max_turns: Optional[int] = None, sweep_interval: Optional[float] = None,
                        keep_open: bool = False, peers: Optional[list[dict[str, Any]]] = None,
                        continued: bool = False) -> RunResult:
    """Run the session `port` holds with `agents` (in the canonical shape, `as_agent`) until it
    ends: the run loop of `run_session`, on any `SessionHost` (in process, or a served hub's
    session, whose `remote` participants' turns are waited for). `max_turns`: the run closes the
    session (`max_turns`) once that many turns were taken."""
    md = port.live.metadata
    run = _Run(port, md, agents, spec, task, control, max_turns, continued=continued)
    run.peers = [p for p in peers or () if isinstance(p, dict) and isinstance(p.get("agent_id"), str)]
    run.keep_open = keep_open
    port.subscribe(run.watch)
    own_sweeper = port.start_sweeper(sweep_interval if sweep_interval is not None else sweep_interval_for(md))
    error: Optional[str] = None
    try:
        error = await run.drive()
    finally:
        await run.wind_down(keep_open, own_sweeper)
    if md.close_reason == "interrupted" and control.reason is not None:
        error = None
    return RunResult(md.session_id, md.state.value, md.close_reason or None, run.all_turns(), error,
                     interrupted=control.reason is not None)


async def _open(hub: Hub, spec: SessionSpec, task: Optional[str], labels: Optional[dict[str, Any]]) -> Any:
    """A new session of `spec` on `hub`, labelled with the task."""
    return await hub.open_spec(spec, labels={**({"task": task} if task else {}), **(labels or {})})


def check_run_agents(spec: SessionSpec, agents: dict[str, Any], remote: Iterable[str] = ()) -> None:
    """One agent per participant (but the `remote` ones, whose turns are taken elsewhere); agents
    for anyone else only where the session's roster is open (conversation, discussion: newcomers
    `add_participant` may bring in). `AdapterError` naming them."""
    names = spec.participant_ids
    away = set(remote)
    missing = [n for n in names if n not in agents and n not in away]
    if missing:
        raise AdapterError(f"no agent for participant{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    extra = sorted(set(agents) - set(names))
    for n in extra:
        check_agent_id(n)
    if extra and spec.kind not in OPEN_MEMBERSHIP:
        raise AdapterError(f"agents file names {', '.join(extra)}, not a participant of "
                           f"{spec.name or 'this session'} ({', '.join(names)}); only a conversation or "
                           f"discussion takes newcomers, and a {spec.kind or 'session'}'s participants are "
                           "fixed by its flow")


_OPEN = (SessionState.ACTIVE, SessionState.INVITED)


class _Run:
    def __init__(self, port: SessionHost, md: Any, agents: dict[str, Agent], spec: SessionSpec, task: Optional[str],
                 ctl: RunControl, max_turns: Optional[int], continued: bool = False) -> None:
        self.md, self.agents, self.ctl, self.max_turns = md, agents, ctl, max_turns
        self.sid = md.session_id
        self.port = port  # all the run (and the agent side) sees of the hub
        self.all_tools = [t for t in spec.tools if isinstance(t, dict)]
        self.any_tool = not any(t.get("name") for t in self.all_tools)
        self.spec = spec
        self.task = task
        self.caps: dict[str, Any] = {}
        self.calls: dict[str, int] = {}
        self.speaker: Optional[str] = None
        # The run's turns, from the envelopes the hub delivers to `watch` (the log is not read
        # again at the end): a continued session's earlier ones (read once, here), then each one
        # delivered while the delivered seqs follow on without a gap.
        self.base_seq = port.live.last_seq
        self.turns: list[dict[str, Any]] = turns_of(port.read(1, self.base_seq)) if continued else []
        self.next_seq = self.base_seq + 1
        self.gap = False
        self.peers: list[dict[str, Any]] = []
        self.silent_from: Optional[str] = None  # the speaker of the last round, when it was silent
        self.stuck = False  # that speaker was silent twice in a row
        self.keep_open = False  # a batch's run: an outage leaves the session open, to be continued

    def directory(self) -> list[dict[str, Any]]:
        """Every agent `lookup_peers` may list besides the participants: the agents file's, then `peers`."""
        return ([{"agent_id": n, "role": "participant", "description": a.description}
                 for n, a in self.agents.items()] + self.peers)

    def all_turns(self) -> list[dict[str, Any]]:
        """Every turn in the session's log: the ones the run saw, or — when a delivery was missed
        or came out of order (a poster cancelled after its envelope was written) — the log's."""
        try:
            last_seq: Optional[int] = self.port.live.last_seq
        except ProtocolError:  # the hub no longer holds the session
            last_seq = None
        if not self.gap and last_seq == self.next_seq - 1:
            return self.turns
        return turns_of(self.port.read())

    async def drive(self) -> Optional[str]:
        """Hand the session to the agents and run its rounds; returns the error that ended it."""
        port, md, ctl = self.port, self.md, self.ctl
        error: Optional[str] = None
        try:
            await self.start()
            await self.loop()
        except TurnStopped:
            pass
        except (AdapterError, ProtocolError) as exc:
            if isinstance(exc, EndpointUnavailable) and self.keep_open and ctl.reason is None:
                raise  # a batch stops, its session left open: an outage is not the agent's failure
            error = str(exc)
            if md.state in _OPEN:
                await port.close("agent_error")
        if ctl.reason is not None and md.state in _OPEN:
            await port.close(ctl.reason)
        return error

    async def wind_down(self, keep_open: bool, own_sweeper: bool) -> None:
        """Never leave the session open (unless `keep_open`), stop what the run started, and let
        every agent close its session."""
        port, sid = self.port, self.sid
        try:
            if self.md.state in _OPEN and not keep_open:
                await port.close(self.ctl.reason or "agent_error")
        finally:
            if own_sweeper:
                await port.stop_sweeper()
            port.unsubscribe(self.watch)
            for a in self.agents.values():
                try:
                    await a.close_session(sid)
                except Exception:  # close_session never raises by contract; a broken agent must not mask the result
                    pass

    async def watch(self, env: Envelope, md: Any) -> None:
        """A hub listener: the hub ended the session, or moved the turn away from the speaker."""
        if env.session_id != self.sid:
            return
        if env.seq == self.next_seq:
            self.next_seq += 1
            t = turn_of(env)
            if t is not None:
                self.turns.append(t)
        else:
            self.gap = True
        et = env.event_type
        if et in (EV_SESSION_CLOSED, EV_SESSION_EXPIRED) or self.md.state != SessionState.ACTIVE:
            self.ctl._stop("session_ended")
        elif et == EV_EXPECTATION_VIOLATED and self.speaker is not None:
            nxt = self.port.expected_next()
            if nxt is not None and nxt != self.speaker:
                self.ctl._stop("turn_moved")

    async def start(self) -> None:
        md = self.md
        for name in md.participant_ids:
            if name in self.port.remote:  # its own process hands it the session
                continue
            if name not in self.agents:  # a continued session that someone joined (participant.added)
                raise AdapterError(f"participant {name!r} joined the session while it ran and has no agent")
            await self.hand_over(name)

    async def hand_over(self, name: str) -> None:
        """The handshake of participant `name`'s agent (a newcomer's on its first turn: its
        context is the roster now)."""
        port, md, sid = self.port, self.md, self.sid
        if name in self.caps:
            return
        spec = self.spec
        if name not in spec.participant_ids:
            spec = spec.with_participants(md.participants)
        ctx = agent_context(spec, sid, name, self.task)
        try:
            self.caps[name] = await self.ctl.cancellable(handshake(self.port, self.agents[name], ctx))
        except AdapterError as exc:
            if name != md.creator_id and md.state == SessionState.INVITED:
                await port.reject(name, str(exc))
            raise
        port.forget_shown(name)  # its first turn of this run is a bootstrap (a continued session too)
        if md.state.terminal:  # the hub closed it meanwhile (acks_within, TTL)
            raise TurnStopped("session_ended")
        if name in md.pending_acks and md.state == SessionState.INVITED:
            await port.ack(name)

    def _nothing_to_answer(self, speaker: str, live: Any) -> bool:
        """An adapter written to the contract whose `extract_turn_input` gives `speaker` nothing to
        answer (None for the latest message from another participant): the speaker is not asked —
        the round is skipped, as a silent one; twice in a row for the same speaker ends the run."""
        if not getattr(live.adapter, "silent_rounds", False):
            return False
        entries = getattr(live.transcript, "entries", None) or ()
        latest = next((e for e in reversed(entries) if e.sender_id != speaker), None)
        if latest is None or live.adapter.extract_turn_input(latest) is not None:
            return False
        self._silent(speaker, live.adapter)
        if self.stuck:
            raise AdapterError(f"the session expects {speaker!r} again, but the adapter's extract_turn_input gives it "
                               "nothing to answer")
        return True

    def _silent(self, speaker: str, adapter: Any) -> None:
        """A round the adapter builds no envelope for. A built-in adapter's: an empty round, a failed
        turn. An adapter written to the contract (`ContractAdapter`): a silent round, skipped —
        nothing is posted — unless the same speaker was silent just before (nothing else could
        happen: the same turn would be asked again and again)."""
        if not getattr(adapter, "silent_rounds", False):
            raise AdapterError(f"agent {speaker!r} produced an empty round (no text, no routing, no context)")
        self.stuck = self.silent_from == speaker  # the loop ends the run (a failed turn would be retried)
        self.silent_from = speaker

    def _called(self, speaker: str) -> Any:
        """Count one call of `speaker`'s agent; its capabilities (a single-shot agent is called once)."""
        caps = self.caps[speaker]
        self.calls[speaker] = self.calls.get(speaker, 0) + 1
        if not caps.supports_stepwise and self.calls[speaker] > 1:
            raise AdapterError(f"agent {speaker!r} is single-shot (supports_stepwise: false) and already "
                               "took its turn; the session asked it for another one")
        return caps

    def _message(self, speaker: str) -> Any:
        """What `speaker` is shown: its view of the session, after the task (if any)."""
        msg = self.port.view(speaker)
        if self.task:
            head = [{"sender": TASK_SENDER, "text": self.task}]
            msg = msg.with_prefix(head) if isinstance(msg, Messages) else head + list(msg)
        return msg

    async def elsewhere(self, last: Optional[str], step: int) -> tuple[Optional[str], int]:
        """A remote participant's turn: wait until the session's log grows (its round, the turn
        moving on, the session ending); the last speaker and the turns so far then."""
        seq = self.port.live.last_seq
        while self.port.live.last_seq == seq and self.md.state == SessionState.ACTIVE:
            await self.ctl.cancellable(self.port.changed(seq))
        spoken = self.turns if not self.gap else turns_of(self.port.read())
        return (spoken[-1]["speaker"] if spoken else last), max(step, len(spoken))

    async def _next_speaker(self, last: Optional[str]) -> Optional[str]:
        """Who takes the next turn; None when the run is over (the session ended or was
        interrupted, or it reached `max_turns`, closing it)."""
        md = self.md
        if md.state != SessionState.ACTIVE or self.ctl.reason is not None:
            return None
        if self.max_turns is not None and self.port.live.turn_count() >= self.max_turns:
            await self.port.close("max_turns")
            return None
        speaker = self.port.expected_next()
        if speaker is None:  # any order (conversation): alternate, starting with the opener
            ids = md.participant_ids
            speaker = md.creator_id if last is None else ids[(ids.index(last) + 1) % len(ids)]
        return speaker

    async def loop(self) -> None:
        port, md, ctl = self.port, self.md, self.ctl
        live = port.live
        spoken = self.turns if not self.gap else turns_of(port.read())  # a continued session goes on from its log
        last: Optional[str] = spoken[-1]["speaker"] if spoken else None
        step = len(spoken)
        for _ in range(MAX_ROUNDS):
            if md.state == SessionState.INVITED and port.remote:  # remote participants still to ack
                await ctl.cancellable(port.changed(live.last_seq))
                continue
            speaker = await self._next_speaker(last)
            if speaker is None:
                return
            if speaker in port.remote:  # taken elsewhere: wait for the session to move on
                last, step = await self.elsewhere(last, step)
                continue
            if speaker not in self.agents:  # joined while the session ran (a participant.added posted to the hub)
                raise AdapterError(f"participant {speaker!r} joined the session while it ran and has no agent")
            await self.hand_over(speaker)  # a newcomer is handed the session on its first turn
            msg = self._message(speaker)
            if self._nothing_to_answer(speaker, live):
                last = speaker
                continue
            caps = self._called(speaker)
            own = tuple(t for t in self.all_tools if t.get("owner") == speaker)
            step += 1

            def make_tools(_speaker: str = speaker, _own: tuple[Any, ...] = own) -> SessionTools:
                return SessionTools(_speaker, tuple(md.participant_ids), _own, self.any_tool, session_id=self.sid)

            async def deliver(tools: SessionTools, _speaker: str = speaker) -> None:
                if md.state != SessionState.ACTIVE:
                    raise TurnStopped("session_ended")
                if port.expected_next() not in (None, _speaker):
                    raise TurnStopped("turn_moved")
                rnd = tools.round()
                finish = rnd["kind"] == "finish" and md.kind != "workflow"
                if finish:
                    rnd = {**rnd, "kind": "text"}
                env = live.adapter.build_round_envelope(md, _speaker, rnd)
                if env is None and not finish:
                    self._silent(_speaker, live.adapter)
                if env is not None:
                    self.silent_from = None
                    await port.post(env)
                if finish and md.state == SessionState.ACTIVE:
                    await port.close(rnd.get("reason") or "finished")

            attempts = 1 if caps.control_loop == "self" else 2
            self.speaker = speaker
            try:
                await take_turn(self.port, self.agents[speaker], msg, make_tools, deliver, step, attempts=attempts,
                                invoke=ctl.cancellable,
                                still_wanted=lambda: md.state == SessionState.ACTIVE and ctl.reason is None,
                                drivable=self.agents, directory=self.directory)
            except TurnStopped as stop:
                if stop.why != "turn_moved":
                    return
                step -= 1  # the hub moved the turn on before this one was taken
            finally:
                self.speaker = None
            if self.stuck:
                raise AdapterError(f"agent {speaker!r} was silent twice in a row and the session expects it again")
            last = speaker
        raise AdapterError(f"the session did not end within {MAX_ROUNDS} rounds")
