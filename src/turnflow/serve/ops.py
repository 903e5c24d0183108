"""The request ops of AG2 1.2.1's `HubClient` (`ag2/network/client/hub_client.py`), answered by a
turnflow `Hub` (docs/serve.md has the table). Each op checks its params' types, then who may do
it: discovery reads are open, ops acting as an agent need that agent bound to the connection
(by `register` or an authenticated `hello`), ops on a session need a bound participant of it.
Failures raise `OpError` with AG2's error codes; the server answers them on the request."""

from __future__ import annotations

import asyncio
import collections
import hmac
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Optional, Protocol

from turnflow.runtime.envelope import EV_SESSION_REJECT, EV_TEXT, SUBSTANTIVE, Envelope
from turnflow.runtime.errors import ProtocolError
from turnflow.runtime.session import SessionMetadata, SessionState
from turnflow.serve import frames, rules, shapes, wire
from turnflow.serve.registry import Agent, Registry, new_agent_id, records_size

if TYPE_CHECKING:
    from turnflow.runtime.hub import Hub

log = logging.getLogger("turnflow.serve")
_AGENT_ID_SHAPE = re.compile(r"[0-9a-f]{32}\Z")
_MIRROR_FAILURE_KEYS = frozenset({"op", "owner_id", "channel_id", "exc_type", "exc_message"})  # AG2's TaskMirror's
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")  # AG2's hub accepts task ids of this shape
PRIORITIES = ("background", "normal", "urgent")  # AG2's `Priority`
_PROTOCOL_EVENTS = ("ag2.channel.", "ag2.task.")  # AG2's hub: every other event type is substantive
_DURATION = re.compile(r"(\d{1,9})([smhd]?)\Z")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_ENDING = (SessionState.CLOSING, SessionState.CLOSED, SessionState.EXPIRED)
MAX_TEXT = 500  # a failure report's text kept (AG2's hub keeps as much)
ENDED_PARTS_KEPT = 1024  # channel records' parts kept past their session's end (`Ops._channel_parts`)
# `list_channels` listing at once, hub-wide: each lets the loop run between parts while it holds the records
# encoded so far (up to --max-reply-bytes); the others wait their turn holding nothing
LISTINGS_AT_ONCE = 4
REPLAY_PART = 256  # envelopes a replay reads from the store at a time (`Ops.replay`)

# every other op AG2's client sends: answered with a protocol error (docs/serve.md says why)
UNSUPPORTED = frozenset({"get_task", "list_tasks", "observe_task", "update_task", "record_observation",
                         "fire_task_event", "checkpoint_task", "read_task_checkpoint"})


# a posted envelope's causation_id and trace_id (AG2's are an envelope id, 32 hex digits, and a W3C
# traceparent, 55 characters): a cause is kept twice while its session lives, in the envelope's
# text and as a key of `_Log.caused`, and neither counts toward --max-session-bytes but once
MAX_ID = 256
# a listing lets the event loop run after encoding about this many bytes of channel records
LIST_BYTES = 256 << 10


@dataclass
class Quotas:
    """What one agent or session may hold on the hub (docs/serve.md, "Limits")."""

    max_session_bytes: int = 8 << 20  # a live session's log, as AG2 envelopes: past it, posts are refused
    max_channels_per_agent: int = 1000  # live sessions an agent has opened
    max_labels_bytes: int = 16 << 10  # a channel's labels (with its intent), as JSON
    max_list: int = 1000  # entries of one list_agents / list_channels answer
    max_agents: int = 50_000  # registered agents
    max_registry_bytes: int = 64 << 20  # their records (passport, résumé, rule, skill text) as stored JSON
    max_live_bytes: int = 512 << 20  # the live sessions' logs held (as AG2 envelopes), all together
    max_live_sessions: int = 50_000  # live sessions, all together (each ~8 KiB of the hub's memory)
    max_knobs_bytes: int = 64 << 20  # the knobs and labels of all live sessions together, as JSON (held ~5 times over)


class OpError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _denied(message: str) -> OpError:
    return OpError(frames.ACCESS_DENIED, message)


def _missing(message: str) -> OpError:
    return OpError(frames.NOT_FOUND, message)


def _bad(message: str) -> OpError:
    return OpError(frames.PROTOCOL_ERROR, message)


def _get(params: dict[str, Any], key: str, types: tuple[type, ...], default: Any = ...) -> Any:
    value = params.get(key, default)
    if type(value) in types:  # (the usual case: a value of exactly one of the types, a bool only where allowed)
        return value
    if value is ...:
        raise _bad(f"missing param {key!r}")
    if value is None and type(None) in types:
        return None
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise _bad(f"param {key!r} must be {' or '.join(t.__name__ for t in types)}, got {type(value).__name__}")
    return value


def as_op_error(exc: ProtocolError) -> OpError:
    """A hub's refusal, answered as a protocol error with its message."""
    return _bad(str(exc))


def _shaped(shape: shapes.Shape, value: Any) -> dict[str, Any]:
    try:
        return shapes.normalise(shape, value)
    except shapes.ShapeError as exc:
        raise _bad(str(exc)) from None


def _checked(shape: shapes.Shape, value: Any) -> dict[str, Any]:
    """`_shaped`, as the shared record (`shapes.checked_shared`: an equal value is checked once)."""
    try:
        return shapes.checked_shared(shape, value)
    except shapes.ShapeError as exc:
        raise _bad(str(exc)) from None


def _str(params: dict[str, Any], key: str) -> str:
    value: str = _get(params, key, (str,))
    return value


def _str_list(params: dict[str, Any], key: str) -> list[str]:
    value: list[str] = _get(params, key, (list,))
    if not all(isinstance(v, str) for v in value):
        raise _bad(f"param {key!r} must be a list of strings")
    return value


def parse_ttl(value: Any) -> Optional[float]:
    """AG2's durations: seconds as an integer, or "30s" / "15m" / "2h" / "1d"; 0 or "" = none."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return float(value)
    m = _DURATION.match(value) if isinstance(value, str) else None
    if m is None:
        raise _bad(f"ttl must be seconds or a duration like '15m', got {str(value)[:40]!r}")
    return float(int(m.group(1)) * _UNITS[m.group(2)]) or None


class Auth:
    """No keys: AG2's `NoAuth` (scheme "none"). With keys (name -> token): AG2's `ApiKeyAuth`
    (scheme "api_key", claim {"token": ...}), compared in constant time; "none" is refused."""

    def __init__(self, keys: Optional[dict[str, str]] = None) -> None:
        self.keys = keys

    def check(self, name: str, scheme: Any, claim: Any) -> None:
        if self.keys is None:
            if scheme != "none":
                raise OpError(frames.AUTH_FAILED, f"unknown auth scheme: {str(scheme)[:40]!r}")
            return
        if scheme != "api_key":
            raise OpError(frames.AUTH_FAILED, "this hub requires the 'api_key' auth scheme")
        token = claim.get("token") if isinstance(claim, dict) else None
        if not isinstance(token, str):
            raise OpError(frames.AUTH_FAILED, "api_key claim missing required string field 'token'")
        expected = self.keys.get(name)
        if expected is None or not hmac.compare_digest(token.encode(), expected.encode()):
            raise OpError(frames.AUTH_FAILED, f"api_key rejected for {name!r}")


class Conn(Protocol):
    """What the ops need of a connection (`wsproto.Link`)."""

    endpoint_id: str
    agents: set[str]

    def send(self, text: str) -> None: ...


class _Log:
    """The AG2 encodings (JSON texts) of a live session's envelopes as read so far, in log order
    (AG2's client reads the log several times a turn). Only the texts, and who sent the envelopes
    caused by another (`find_envelope_by_causation`): the envelopes themselves are the hub's, read
    from it (`Hub.read`) by the few ops that need their other fields."""

    __slots__ = ("texts", "size", "last", "caused", "turn")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.size = 0  # characters of `texts`
        self.last = 0  # seq of the last envelope encoded
        # causation id -> (index in `texts`, sender id) of each envelope caused by it, in log order
        self.caused: Optional[dict[str, list[tuple[int, str]]]] = None
        self.turn: Optional[tuple[str, float]] = None  # the last text or packet's id and time (`pending_turns_for`)

    def add(self, env: Envelope, text: str) -> None:
        cause = env.causation_id
        if cause is not None:
            if self.caused is None:
                self.caused = {}
            self.caused.setdefault(cause, []).append((len(self.texts), env.sender_id))
        if env.event_type in SUBSTANTIVE:
            self.turn = (env.envelope_id, env.created_at)
        self.texts.append(text)
        self.size += len(text)
        self.last = env.seq


class _InviteTimeout(Exception):
    """A `create_channel` waited `invite_timeout` for its invitees' acks."""


def _time_out(waiter: "asyncio.Future[Any]") -> None:
    if not waiter.done():
        waiter.set_exception(_InviteTimeout())


def _json_size(value: Any) -> int:
    """Characters of `value` as JSON (a session's knobs: 0 for none, or for a value that is not JSON,
    which the hub refuses on its own)."""
    if not value:
        return 0
    try:
        return len(frames.dumps(value))
    except (TypeError, ValueError):
        return 0


def _authorize_task(conn: Conn, op: str, params: dict[str, Any]) -> None:
    """AG2's hub's checks of a task op before it acts (`Hub._authorize_request`): every task id
    named of its shape (`protocol_error`), then the agent it acts as bound (`observe_task`'s
    owner, `record_observation`'s) or, for an op on a task, some agent bound (`access_denied`)."""
    ids = [params.get("task_id")] + [params[k].get("task_id") for k in ("metadata", "envelope")
                                     if isinstance(params.get(k), dict)]
    for task_id in ids:
        if task_id is not None and not (isinstance(task_id, str) and _TASK_ID.match(task_id)):
            raise _bad(f"invalid task_id: {repr(task_id[:140]) if isinstance(task_id, str) else repr(task_id)[:140]}")
    if op == "record_observation":
        owner = _str(params, "owner_id")
    elif op == "observe_task":
        owner = _str(_get(params, "metadata", (dict,)), "owner_id")
    elif op in ("update_task", "fire_task_event", "checkpoint_task", "read_task_checkpoint"):
        if not conn.agents:
            raise _denied("connection has no bound agent")
        if op != "fire_task_event":
            return
        kind, payload = params.get("kind"), params.get("payload", {})  # (only a mirror's failure report, by its owner)
        if kind != "mirror_failed":
            raise _denied(f"only 'mirror_failed' task events are accepted over the wire, got {str(kind)[:40]!r}")
        if not isinstance(payload, dict) or not set(payload) <= _MIRROR_FAILURE_KEYS:
            raise _bad(f"mirror_failed payload keys must be within {sorted(_MIRROR_FAILURE_KEYS)}")
        reporter = payload.get("owner_id")
        if not isinstance(reporter, str):
            raise _bad("mirror_failed payload needs the reporting agent's owner_id")
        owner = reporter
    else:
        return
    if owner not in conn.agents:
        raise _denied(f"connection is not bound to agent {owner[:64]!r}")


class Ops:
    def __init__(self, hub: "Hub", registry: Registry, auth: Auth, *, invite_timeout: float = 30.0,
                 quotas: Optional[Quotas] = None) -> None:
        self.hub = hub
        self.registry = registry
        self.auth = auth
        self.invite_timeout = invite_timeout
        self.quotas = quotas or Quotas()
        self.max_reply = 16 << 20  # the server's `Limits.max_reply_bytes` (set by it)
        self._listing = 0  # bytes of channel records the listings being answered hold (`list_channels`)
        self._opened: dict[str, str] = {}  # live session id -> its creator (counted in `_opened_by`)
        self._opened_by: dict[str, int] = {}  # agent id -> live sessions it opened
        self._knob_bytes: dict[str, int] = {}  # live session id -> its knobs' and labels' JSON size (summed: `knob_bytes`)
        self.knob_bytes = 0
        for sid, live in list(hub.sessions.items()):
            if not live.metadata.state.terminal and live.metadata.creator_id:
                md = live.metadata
                self._count_open(sid, md.creator_id, _json_size(md.knobs) + _json_size(md.labels))
        live_ids = {sid for sid, live in hub.sessions.items() if not live.metadata.state.terminal}
        for own in registry.cursors.values():  # cursors of ended sessions: not kept in memory (replay skips them)
            for sid in [sid for sid in own if sid not in live_ids]:
                del own[sid]
        self.routes: dict[str, Conn] = {}  # agent id -> the connection it is bound to
        self._opening: dict[str, asyncio.Future[Any]] = {}  # session id -> create_channel waiting for acks
        # (loop time, session id) when each create_channel waiting for acks gives up, in that order
        # (one invite timeout for every open: one timer for all of them, armed for the first)
        self._deadlines: collections.deque[tuple[float, str]] = collections.deque()
        self._deadline_timer: Optional[asyncio.TimerHandle] = None
        self._logs: dict[str, _Log] = {}  # live sessions' logs read so far
        self.held = 0  # characters of their texts (`_Log.size`), bounded by `Quotas.max_live_bytes` for posts
        # live sessions' channel records: (state, acks left, participants, JSON)
        self._channels: dict[str, tuple[SessionState, int, Any, frames.Raw]] = {}
        self._parts: dict[str, tuple[Any, ...]] = {}  # live sessions' `_channel_parts`
        self._passports: dict[str, tuple[dict[str, Any], frames.Raw]] = {}  # agent id -> (passport, its JSON)
        self._ended_parts: dict[str, tuple[Any, ...]] = {}  # those of the last few sessions that ended, in order
        self._manifests: dict[tuple[int, tuple[Any, ...]], tuple[Any, str]] = {}  # `_manifest_text`'s
        self.pending: dict[str, int] = {}  # agent id -> substantive notifications outstanding (rules.inbox)
        self._timers: set[asyncio.Task[Any]] = set()  # invites timed out after a restart (time_out_invites)
        self._listings = asyncio.Semaphore(LISTINGS_AT_ONCE)  # (`list_channels`)
        self.table: dict[str, Callable[[Conn, dict[str, Any]], Awaitable[Any]]] = {
            "register": self.register, "get_agent": self.get_agent, "get_resume": self.get_resume,
            "get_skill": self.get_skill, "get_rule": self.get_rule, "find_agent_id": self.find_agent_id,
            "names_for": self.names_for, "list_agents": self.list_agents, "set_resume": self.set_resume,
            "set_skill": self.set_skill, "set_rule": self.set_rule, "unregister": self.unregister,
            "create_channel": self.create_channel, "get_channel": self.get_channel,
            "list_channels": self.list_channels, "close_channel": self.close_channel,
            "post_envelope": self.post_envelope, "read_wal": self.read_wal,
            "find_envelope_by_causation": self.find_by_causation, "can_send": self.can_send,
            "pending_turns_for": self.pending_turns_for, "report_turn_failure": self.report_turn_failure,
        }
        hub.subscribe(self.on_envelope)

    # -- dispatch -----------------------------------------------------------------------------------
    async def call(self, conn: Conn, op: str, params: dict[str, Any]) -> Any:
        try:
            return await self.handler(op)(conn, params)
        except ProtocolError as exc:
            raise as_op_error(exc) from None

    def handler(self, op: str) -> Callable[[Conn, dict[str, Any]], Awaitable[Any]]:
        """The op's handler (the server awaits it directly, one coroutine fewer per request than
        `call`, turning a `ProtocolError` into an `OpError` with `as_op_error` as `call` does)."""
        handler = self.table.get(op)
        if handler is None:
            if op in UNSUPPORTED:
                return self._task_op(op)
            raise _bad(f"unknown control-plane op: {op[:60]!r}")
        return handler

    @staticmethod
    def _task_op(op: str) -> Callable[[Conn, dict[str, Any]], Awaitable[Any]]:
        """A task op, which turnflow does not support: refused, after AG2's hub's own refusals of
        who may ask (`_authorize_task`), so a client not entitled to it is answered as AG2's hub
        answers it."""
        async def refuse(conn: Conn, params: dict[str, Any]) -> Any:
            _authorize_task(conn, op, params)
            raise _bad(f"turnflow serve does not support the task op {op!r} (docs/serve.md)")
        return refuse

    # -- connections and identities -----------------------------------------------------------------
    def bind(self, conn: Conn, agent_id: str) -> None:
        prior = self.routes.get(agent_id)
        if prior is not None and prior is not conn:
            prior.agents.discard(agent_id)
        conn.agents.add(agent_id)
        self.routes[agent_id] = conn

    def unbind_all(self, conn: Conn) -> None:
        for agent_id in conn.agents:
            if self.routes.get(agent_id) is conn:
                del self.routes[agent_id]
        conn.agents = set()

    def _bound(self, conn: Conn, agent_id: str) -> None:
        if agent_id not in conn.agents:
            raise _denied(f"connection is not bound to agent {agent_id[:64]!r}")

    def _agent(self, agent_id: str, what: str = "agent") -> Agent:
        agent = self.registry.by_id.get(agent_id)
        if agent is None:
            raise _missing(f"{what} not found: {agent_id[:64]}")
        return agent

    def _md(self, session_id: str) -> SessionMetadata:
        live = self.hub.sessions.get(session_id)  # (a dict lookup: the id's shape needs no check to find it)
        if live is not None:
            return live.metadata
        try:
            return self.hub.metadata(session_id)
        except ProtocolError:
            raise _missing(f"channel not found: {session_id[:64]}") from None

    def _participant(self, conn: Conn, session_id: str) -> SessionMetadata:
        live = self.hub.sessions.get(session_id)
        md = live.metadata if live is not None else self._md(session_id)
        if conn.agents.isdisjoint(md.pset):
            raise _denied(f"connection has no participant in channel {session_id!r}")
        return md

    async def hello(self, conn: Conn, frame: dict[str, Any]) -> None:
        """A (re)attach: bind the named identity after its credential is checked, welcome, then
        replay what it has not acked when `since_envelope_id` is given."""
        agent = self.registry.get(frame["name"])
        if agent is None or agent.name != frame["name"]:
            conn.send(frames.error(frames.NOT_FOUND, f"unknown name: {frame['name'][:64]}"))
            return
        scheme = agent.passport.get("auth", {}).get("scheme", "none")
        try:
            if not isinstance(frame["auth_claim"], dict):  # (AG2's hub: after the name is found, before the scheme)
                raise OpError(frames.AUTH_FAILED, "auth_claim must be a JSON object")
            if frame["auth_scheme"] != scheme:
                raise OpError(frames.AUTH_FAILED, f"auth scheme {frame['auth_scheme'][:40]!r} does not match "
                                                  f"{agent.name!r}'s registered scheme {scheme!r}")
            self.auth.check(agent.name, frame["auth_scheme"], frame["auth_claim"])
        except OpError as exc:
            conn.send(frames.error(exc.code, exc.message))
            return
        self.bind(conn, agent.agent_id)
        conn.send(frames.welcome(conn.endpoint_id, wire.now_iso()))
        if frame["since_envelope_id"] is not None:
            replay = self.replay(conn, agent.agent_id, frame["since_envelope_id"])
            background = getattr(conn, "background", None)
            if background is not None:  # (the server's connection: its reader goes on meanwhile, acks included)
                background(replay)
            else:
                await replay

    async def replay(self, conn: Conn, agent_id: str, since: str) -> None:
        """Send again what the agent has not acked, paced by the client's reading (the server's
        connection waits while half its send buffer is taken), so a long backlog does not overflow it."""
        paced = getattr(conn, "paced", None)
        for sid, md in self._sessions():
            if md.state.terminal or agent_id not in md.pset:
                continue
            high = max(self.registry.cursor(agent_id, sid), since)
            log = self._read(sid, md)
            texts, last, i = log.texts, log.last, 0
            # (the envelopes read from the store in parts, as they are sent: a client that does not read
            # keeps the replay waiting after a few, and a hello repeated does not read a whole log each time)
            for start in range(1, last + 1, REPLAY_PART):
                for env in self.hub.read(sid, start, min(start + REPLAY_PART - 1, last)):
                    if not isinstance(env, Envelope):
                        continue
                    text, i = texts[i], i + 1
                    if env.envelope_id > high and env.sender_id != agent_id and agent_id in wire.recipients(env, md) \
                            and self._accepts(env, md, agent_id):
                        conn.send(frames.notify(text, agent_id))
                        if paced is not None:
                            await paced()

    def receipt(self, conn: Conn, frame: dict[str, Any]) -> None:
        """An ack moves the agent's cursor in a live session it is a participant of (ids of
        anything else are not kept: cursors only matter for replay, of live sessions)."""
        agent_id, channel_id, envelope_id = frame["recipient_id"], frame["channel_id"], frame["envelope_id"]
        if frame["status"] != "ack" or agent_id not in conn.agents or not channel_id or not envelope_id:
            return
        live = self.hub.sessions.get(channel_id)
        if live is None or live.metadata.state.terminal or agent_id not in live.metadata.pset:
            return
        if len(envelope_id) <= 20 and envelope_id.isascii() and envelope_id.isdigit():  # the hub's ids
            self.registry.advance(agent_id, channel_id, envelope_id)

    # -- helpers over the hub ------------------------------------------------------------------------
    def _sessions(self) -> list[tuple[str, SessionMetadata]]:
        return [(sid, live.metadata) for sid, live in list(self.hub.sessions.items())]

    def _read(self, session_id: str, md: SessionMetadata) -> _Log:
        """The session's log as AG2 texts, read from the store past what was read before."""
        log = self._logs.get(session_id)
        if log is None:
            log = _Log()
            if not md.state.terminal:
                self._logs[session_id] = log
        live = self.hub.sessions.get(session_id)
        if log.texts and log.last == getattr(live, "last_seq", None):  # nothing new since the last read
            return log
        size = log.size
        for env in self.hub.read(session_id, log.last + 1):
            if isinstance(env, Envelope):
                log.add(env, wire.envelope_json(env, md))
        if log is self._logs.get(session_id):
            self.held += log.size - size
        return log

    def _envelopes(self, session_id: str, md: SessionMetadata) -> tuple[_Log, list[Envelope]]:
        """The session's log and its envelopes, read from the hub: `envelopes[i]` is the one
        `log.texts[i]` encodes (for the rare ops that need the envelopes' fields)."""
        log = self._read(session_id, md)
        envs = [e for e in self.hub.read(session_id, 1, log.last) if isinstance(e, Envelope)]
        return log, envs

    def _count_open(self, session_id: str, creator: str, knob_bytes: int = 0) -> None:
        self._opened[session_id] = creator
        self._opened_by[creator] = self._opened_by.get(creator, 0) + 1
        if knob_bytes:
            self._knob_bytes[session_id] = knob_bytes
            self.knob_bytes += knob_bytes

    def _ended(self, md: SessionMetadata) -> None:
        """A session ended: what was held for it goes (its count against its creator's quota, its
        participants' delivery cursors in memory: replay skips ended sessions)."""
        session_id = md.session_id
        cursors = self.registry.cursors
        for agent_id in md.pset:
            own = cursors.get(agent_id)
            if own is not None:
                own.pop(session_id, None)
        creator = self._opened.pop(session_id, None)
        if creator is not None:
            left = self._opened_by.pop(creator, 1) - 1
            if left > 0:
                self._opened_by[creator] = left
        self.knob_bytes -= self._knob_bytes.pop(session_id, 0)

    async def on_envelope(self, env: Envelope, md: SessionMetadata) -> None:
        """The hub's listener: notify every recipient bound to a connection (queued, never awaited
        on a socket, so a slow client does not slow the hub), and settle a waiting create."""
        self.notify(env, md)

    def notify(self, env: Envelope, md: SessionMetadata) -> None:
        terminal = md.state.terminal
        waiter = self._opening.get(md.session_id)
        if waiter is not None and not waiter.done():
            if md.state == SessionState.ACTIVE:
                waiter.set_result(None)
            elif terminal:
                waiter.set_exception(_bad(f"channel {md.session_id!r} closed during handshake: {md.close_reason}"))
        body = None
        log = self._logs.get(md.session_id)
        if log is None and env.seq == 1 and not terminal:  # a new session's first envelope (an
            log = self._logs[md.session_id] = _Log()  # invite): its log kept from here, not read back
        if log is not None and log.last + 1 == env.seq:
            body = wire.envelope_json(env, md)
            log.add(env, body)
            self.held += len(body)
        if terminal:
            self._forget_live(md)
        substantive = wire.substantive(env)
        routes, by_id, pending = self.routes, self.registry.by_id, self.pending
        for rid in wire.recipients(env, md):
            conn = routes.get(rid)
            if conn is None:
                continue
            agent = by_id.get(rid)  # (a rule open to every sender, AG2's default, accepts without asking who sent it)
            if agent is not None and "*" not in agent.rule["access"]["inbound_from"] and not self._accepts(env, md, rid):
                continue
            if body is None:
                body = wire.envelope_json(env, md)
            if substantive:
                pending[rid] = pending.get(rid, 0) + 1
            conn.send(frames.notify(body, rid))

    def _forget_live(self, md: SessionMetadata) -> None:
        """What `notify` kept of a session while it lived, let go at its end (its record's kept
        parts stay a while: AG2's client reads the record of the channel it saw close)."""
        dropped = self._logs.pop(md.session_id, None)
        if dropped is not None:
            self.held -= dropped.size
        self._channels.pop(md.session_id, None)
        parts = self._parts.pop(md.session_id, None)
        if parts is not None:
            ended = self._ended_parts
            while len(ended) >= ENDED_PARTS_KEPT:
                del ended[next(iter(ended))]
            ended[md.session_id] = parts
        self._ended(md)

    def _accepts(self, env: Envelope, md: SessionMetadata, rid: str) -> bool:
        """AG2's dispatch gate: a recipient is not notified of an envelope whose sender (as AG2
        shows it) its rule's `inbound_from` does not match; the envelope stays in the log."""
        sender_id = wire.shown_sender(env, md)
        if rid == sender_id:
            return True
        by_id = self.registry.by_id
        recipient, sender = by_id.get(rid), by_id.get(sender_id)
        return recipient is None or sender is None or rules.accepts(recipient, sender)

    # -- identity ops ------------------------------------------------------------------------------
    async def register(self, conn: Conn, params: dict[str, Any]) -> Any:
        """AG2's `register`: the passport, résumé and rule checked against AG2's shapes and kept
        complete (every field AG2 defines), as AG2's hub keeps them."""
        passport = _shaped(shapes.PASSPORT, _get(params, "passport", (dict,)))
        resume = _checked(shapes.RESUME, _get(params, "resume", (dict, type(None)), None) or {})
        rule = _checked(shapes.RULE, _get(params, "rule", (dict, type(None)), None) or {})
        skill = _get(params, "skill_md", (str, type(None)), None)
        name = passport["name"]
        if _AGENT_ID_SHAPE.match(name):
            raise _bad(f"name {name!r} is, or has the shape of, an agent id")  # (AG2's hub's words)
        if not name:
            raise _bad("name must not be empty")
        kind = passport.get("kind")
        if kind not in (None, "agent", "human"):  # (remote_agent: the only other kind of AG2's passport shape)
            raise _denied(f"this hub does not accept {str(kind)[:20]} registration over the wire")
        auth = passport["auth"]
        self.auth.check(name, auth["scheme"], auth["claim"])
        if name in self.registry.by_name:
            raise _bad(f"name {name!r} already registered (agent_id={self.registry.by_name[name]}); "
                       "unregister it before re-registering.")
        agent_id = new_agent_id()
        passport.update(agent_id=agent_id, created_at=wire.now_iso(), auth=shapes.shared({**auth, "claim": {}}))
        agent = Agent(agent_id, name, passport, resume, rule, skill)
        if len(self.registry.by_id) >= self.quotas.max_agents:
            raise _bad(f"this hub holds {len(self.registry.by_id)} registered agents, its limit (--max-agents): "
                       "no more can register until one unregisters")
        self._room(agent, records_size(agent), "register with")
        self.registry.add(agent)
        self.bind(conn, agent_id)
        return passport

    async def get_agent(self, conn: Conn, params: dict[str, Any]) -> Any:
        key = params.get("name_or_id")
        if type(key) is not str:
            key = _str(params, "name_or_id")
        agent = self.registry.get(key)
        if agent is None:
            raise _missing(f"agent not found: {key[:64]}")
        kept = self._passports.get(agent.agent_id)
        if kept is not None and kept[0] is agent.passport:
            return kept[1]
        return self._passport_text(agent)

    def _passport_text(self, agent: Agent) -> Any:
        """An agent's passport as its JSON text (`frames.Raw`), kept while it is registered with
        that passport (AG2's client looks its target up before each open); the record itself
        when msgspec cannot write it as `frames.encode` would (then encoded on each answer)."""
        passport = agent.passport
        plain = frames.fast_text(passport)
        if plain is None:  # (e.g. a lone surrogate an earlier version stored: `frames.encode` repairs it)
            return passport
        text = frames.Raw(plain)
        self._passports[agent.agent_id] = (passport, text)
        return text

    # (an unknown agent id: as AG2's hub answers, `resume not found` / `rule not found`, and no skill)
    async def get_resume(self, conn: Conn, params: dict[str, Any]) -> Any:
        return self._agent(_str(params, "agent_id"), "resume").resume

    async def get_rule(self, conn: Conn, params: dict[str, Any]) -> Any:
        return self._agent(_str(params, "agent_id"), "rule").rule

    async def get_skill(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent = self.registry.by_id.get(_str(params, "agent_id"))
        return None if agent is None else agent.skill

    async def find_agent_id(self, conn: Conn, params: dict[str, Any]) -> Any:
        return self.registry.by_name.get(_str(params, "name"))

    async def names_for(self, conn: Conn, params: dict[str, Any]) -> Any:
        by_id = self.registry.by_id
        return {aid: by_id[aid].name if aid in by_id else aid for aid in _str_list(params, "agent_ids")}

    async def list_agents(self, conn: Conn, params: dict[str, Any]) -> Any:
        capability = _get(params, "capability", (str, type(None)), None)
        query = _get(params, "query", (str, type(None)), None)
        kind = _get(params, "kind", (str, type(None)), None)
        sort_by = _get(params, "sort_by", (str, type(None)), None)
        limit = min(_get(params, "limit", (int,), 50), self.quotas.max_list)
        found = []
        lowered = query.lower() if query is not None else None
        scanned = 0  # characters of summaries searched, and agents looked at, since the loop last let others in
        for agent in list(self.registry.by_id.values()):  # (a copy: others may register or go meanwhile)
            scanned += 64
            if scanned >= LIST_BYTES:  # (the server answers it in a task: a search of every résumé, up to
                scanned = 0  # --max-registry-bytes of them, lets the other clients in every LIST_BYTES searched)
                await asyncio.sleep(0)
            if kind is not None and (agent.passport.get("kind") or "agent") != kind:
                continue
            claimed = agent.resume.get("claimed_capabilities") or []
            observed = agent.resume.get("observed") or {}
            if capability is not None and capability not in claimed and capability not in observed:
                continue
            if lowered is not None:
                summary = str(agent.resume.get("summary", ""))
                scanned += len(summary)
                if lowered not in summary.lower():
                    continue
            found.append(agent)
        if sort_by == "name":
            found.sort(key=lambda a: a.name)
        return [a.passport for a in found[:max(limit, 0)]]

    async def set_resume(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _str(params, "agent_id")
        self._bound(conn, agent_id)
        agent = self._agent(agent_id)
        resume = _shaped(shapes.RESUME, _get(params, "resume", (dict,)))
        resume.update(version=agent.resume["version"] + 1, last_updated=wire.now_iso())
        self._room(agent, records_size(agent, resume=resume) - agent.size)
        agent.resume = resume
        self.registry.update(agent)
        return None

    async def set_skill(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _str(params, "agent_id")
        self._bound(conn, agent_id)
        agent = self._agent(agent_id)
        skill = _get(params, "skill_md", (str, type(None)), None)
        self._room(agent, records_size(agent, skill=skill) - agent.size)
        agent.skill = skill
        self.registry.update(agent)
        return None

    async def set_rule(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _str(params, "agent_id")
        self._bound(conn, agent_id)
        agent = self._agent(agent_id)
        rule = _shaped(shapes.RULE, _get(params, "rule", (dict,)))
        rule["version"] = agent.rule["version"] + 1  # as AG2's hub numbers a replaced rule
        self._room(agent, records_size(agent, rule=rule) - agent.size)
        agent.rule = rule
        self.registry.update(agent)
        return None

    def _room(self, agent: Agent, more: int, what: str = "grow by") -> None:
        """Refuse `more` characters of records for `agent` when the registry would hold over its
        budget (--max-registry-bytes); a record that shrinks is always taken."""
        total, cap = self.registry.size + more, self.quotas.max_registry_bytes
        if more > 0 and total > cap:
            raise _bad(f"the registered agents' records would be {total} bytes, over this hub's limit of {cap} "
                       f"(--max-registry-bytes): {agent.name!r} cannot {what} {more} bytes")

    async def unregister(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _str(params, "agent_id")
        self._bound(conn, agent_id)
        self.registry.remove(agent_id)
        self._passports.pop(agent_id, None)
        conn.agents.discard(agent_id)
        self.routes.pop(agent_id, None)
        self.pending.pop(agent_id, None)  # as AG2's hub drops its inbox count
        return None

    # -- sessions ----------------------------------------------------------------------------------
    def _participants(self, creator: str, targets: list[str]) -> list[dict[str, Any]]:
        if not targets:
            raise _bad("channel requires at least one participant")
        seen: set[str] = set()
        for t in targets:  # (in AG2's hub's order: each one listed twice, or not registered, as it comes)
            if t in seen:
                raise _bad(f"participant listed twice: {t[:64]!r}")
            seen.add(t)
            if t not in self.registry.by_id:
                raise _missing(f"participant not registered: {t[:64]}")
        ids = targets if creator in targets else [creator, *targets]
        return [{"agent_id": a, "order": i,
                 "role": "initiator" if a == creator else "respondent" if len(ids) == 2 else "participant"}
                for i, a in enumerate(ids)]

    def _default_ttl(self, creator: str) -> Any:
        return self._agent(creator).rule["limits"]["channel_ttl_default"]

    def _authorize_open(self, creator_id: str, ids: list[str]) -> None:
        """AG2's arbiter before a channel opens: the invitees' `inbound_from` and the creator's
        `max_concurrent_channels`, then the creator's `outbound_to` for each invite (AG2's hub
        checks that one when it posts the invites, after writing the channel, which it then
        closes `invite_failed`; here nothing is written)."""
        creator = self._agent(creator_id)
        invitees = [self._agent(a) for a in ids if a != creator_id]
        cap = creator.rule["limits"]["max_concurrent_channels"]
        running = 0 if cap <= 0 else sum(1 for _, md in self._sessions()
                                         if md.creator_id == creator_id and not md.state.terminal)
        why = rules.channel_open(creator, invitees, running) or rules.send(creator, invitees, 0)
        if why is not None:
            raise _denied(why)

    def start(self) -> None:
        """What a (re)started hub does before serving: time out invites an earlier run left
        pending, and name the live workflow sessions AG2's unchanged client cannot take part in."""
        self.time_out_invites()
        for sid, md in self._sessions():
            if md.manifest.type == "workflow" and not md.state.terminal:
                self._say_extensions(sid, md.knobs)

    def _say_extensions(self, sid: str, knobs: Any) -> None:
        from turnflow.interop.ag2 import extensions_needed

        needed = extensions_needed(knobs) if isinstance(knobs, dict) else []
        if needed:
            log.warning("session %s: its workflow uses %s, which AG2 1.2.1 does not ship: an AG2 participant's "
                        "process must call turnflow.interop.ag2.register_extensions() (docs/serve.md)",
                        sid, ", ".join(needed))

    def time_out_invites(self) -> None:
        """Every session still waiting for acks (one a crashed or stopped hub was opening) is
        closed `invite_timeout` at the time it would have been without the restart: its opening
        plus `invite_timeout`, at once if that has passed. (A live `create_channel` closes its
        own session the same way.)"""
        loop = asyncio.get_running_loop()
        now = self.hub.clock()
        for sid, md in self._sessions():
            if md.state == SessionState.INVITED:
                delay = max(0.0, md.created_at + self.invite_timeout - now)
                loop.call_later(delay, self._expire_invite, sid)

    def _expire_invite(self, sid: str) -> None:
        async def expire() -> None:
            md = self._md(sid)
            if md.state == SessionState.INVITED:
                try:
                    await self.hub.close(sid, "invite_timeout")
                except Exception as exc:  # the hub is stopping, or the store failed: said, not raised
                    log.warning("session %s: could not close it invite_timeout: %s", sid, exc)
        task = asyncio.get_running_loop().create_task(expire())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    async def create_channel(self, conn: Conn, params: dict[str, Any]) -> Any:
        creator = _str(params, "creator_id")
        self._bound(conn, creator)
        kind = _str(params, "manifest_type")
        version = _get(params, "manifest_version", (int,), 1)
        targets = _str_list(params, "participants")
        parts = self._participants(creator, targets)  # (checked before the kind, as AG2's hub checks them)
        if (kind, version) not in self.hub.adapters:
            raise _missing(f"no adapter registered for {kind[:40]!r}@v{version}")
        required_acks = _get(params, "required_acks", (int, type(None)), None)
        ttl = params.get("ttl")
        ttl_seconds = parse_ttl(self._default_ttl(creator) if ttl is None else ttl)
        knobs = _get(params, "knobs", (dict, type(None)), None) or {}
        try:
            labels = shapes.labels(params.get("labels"))
        except shapes.ShapeError as exc:
            raise _bad(str(exc)) from None
        intent = _get(params, "intent", (str, type(None)), None)
        if intent:
            labels["intent"] = intent
        self._authorize_open(creator, [p["agent_id"] for p in parts])
        self._check_open_quotas(creator, labels)
        knob_bytes = _json_size(knobs) + _json_size(labels)
        if knob_bytes and self.knob_bytes + knob_bytes > self.quotas.max_knobs_bytes:
            raise _bad(f"the knobs and labels of the hub's live channels would be {self.knob_bytes + knob_bytes} bytes "
                       f"as JSON, over its limit of {self.quotas.max_knobs_bytes} (--max-knobs-bytes): no more can be "
                       "opened with these until some end")
        md = await self.hub.open_session(kind, parts, creator_id=creator, knobs=knobs, ttl_seconds=ttl_seconds,
                                         labels=labels, version=version,
                                         extra=None if required_acks is None else {"required_acks": required_acks})
        sid = md.session_id
        if not md.state.terminal:
            self._count_open(sid, creator, knob_bytes)
        if kind == "workflow":
            self._say_extensions(sid, knobs)
        loop = asyncio.get_running_loop()
        waiter = self._opening[sid] = loop.create_future()
        try:  # (the invites reached the invited through the hub's listener, `on_envelope`)
            self._read(sid, self._md(sid))  # kept from now on, each later envelope appended as it is written
            if md.state == SessionState.INVITED:
                # `wait_for(shield(waiter), invite_timeout)` without its two futures and its timer per
                # open: `_time_out_invites` ends the wait (the waiter is popped from `_opening` below
                # whatever ends it)
                self._deadlines.append((loop.time() + self.invite_timeout, sid))
                if self._deadline_timer is None:
                    self._deadline_timer = loop.call_at(self._deadlines[0][0], self._time_out_invites)
                try:
                    await waiter
                except _InviteTimeout:
                    if md.state not in _ENDING:
                        await self.hub.close(sid, "invite_timeout")
                    raise _bad(f"channel {sid!r} ack timeout") from None
        finally:
            self._opening.pop(sid, None)
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved (raised below when it is the outcome)
        if waiter.done() and waiter.exception() is not None:
            raise waiter.exception()  # type: ignore[misc]
        return self._channel(md)

    def _time_out_invites(self) -> None:
        """The first deadline has come (the timer was armed for it): its open, and every later one
        whose deadline has passed, stop waiting (`_InviteTimeout`) unless they ended meanwhile;
        then the timer is armed for the next deadline."""
        loop = asyncio.get_running_loop()
        deadlines, now = self._deadlines, loop.time()
        first = True
        while deadlines and (first or deadlines[0][0] <= now):
            first = False
            waiter = self._opening.get(deadlines.popleft()[1])
            if waiter is not None:
                _time_out(waiter)
        self._deadline_timer = loop.call_at(deadlines[0][0], self._time_out_invites) if deadlines else None

    def _check_open_quotas(self, creator: str, labels: dict[str, Any]) -> None:
        q = self.quotas
        if len(self._opened) >= q.max_live_sessions:
            raise _bad(f"the hub has {len(self._opened)} live channels, its limit (--max-live-sessions): "
                       "no more can be opened until some end")
        if self._opened_by.get(creator, 0) >= q.max_channels_per_agent:
            raise _bad(f"agent has {q.max_channels_per_agent} live channels open, this hub's limit "
                       "(--max-channels-per-agent): close one first")
        if labels:
            try:
                size = len(frames.dumps(labels))
            except (TypeError, ValueError) as exc:
                raise _bad(f"labels cannot be stored: {str(exc)[:100]}") from None
            if size > q.max_labels_bytes:
                raise _bad(f"labels are {size} bytes as JSON, over this hub's limit of {q.max_labels_bytes} "
                           "(--max-labels-bytes)")

    def _channel(self, md: SessionMetadata) -> frames.Raw:
        """The AG2 channel record of a session, encoded once per state (AG2's client asks for it
        every turn), as text around the parts that do not change while the session lives
        (`_channel_parts`): the state, `closed_at`, `close_reason` and `pending_acks` are
        encoded on each new state, the rest once per session. The same JSON as encoding
        `wire.channel_to_ag2(md)` whole (tests/test_serve_codec.py)."""
        sid = md.session_id
        state = md.state
        cached = self._channels.get(sid)
        if cached is not None and cached[0] is state and cached[1] == len(md.pending_acks) \
                and cached[2] is md.participants:  # (a roster change: another tuple)
            return cached[3]
        key = (md.manifest, md.expectations, md.creator_id, md.participants, md.created_at, md.expires_at,
               md.knobs, md.labels, md.extra)
        parts = self._parts.get(sid) or self._ended_parts.get(sid)
        if parts is None or parts[0] != key:
            parts = self._channel_parts(md, key)
            if not state.terminal:
                self._parts[sid] = parts
        what = f"channel {sid}"
        closed, reason, acks = wire.iso(md.closed_at), md.close_reason, md.pending_acks
        rejected = self._rejected_by(md)
        if rejected:
            acks = acks.difference(rejected)
        # (`iso`'s text is ASCII digits and punctuation: quoted as it is; an empty reason and no
        # pending acks, a live session's, written as their JSON)
        text = frames.Raw(parts[1] + parts[2] + parts[3] + wire.state_json(state) + parts[4]
                          + ("null" if closed is None else '"' + closed + '"')
                          + ',"close_reason":' + ('""' if reason == "" else frames.encode(reason, what)) + parts[5]
                          + (frames.encode(sorted(acks), what) if acks else "[]")
                          + ',"rejected_by":' + (frames.encode(rejected, what) if rejected else "[]") + "}")
        if not state.terminal:
            self._channels[sid] = (state, len(md.pending_acks), md.participants, text)
        return text

    def _channel_parts(self, md: SessionMetadata, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """`key` and the text of a channel record around its state (up to its manifest, the
        manifest, up to `"state":`, from the state's value up to `"closed_at":`, from after
        `close_reason` up to `"pending_acks":`),
        each value encoded as `frames.encode` encodes it in the whole record. Kept per live
        session (and, past its end, for the last few ended: AG2's client reads the record of
        the channel it saw close), made again when one of the values in `key` is another."""
        what = f"channel {md.session_id}"  # (built as text around its manifest's, encoded once per kind: the same JSON)
        r = wire.channel_rest(md)
        # (three objects of the record's fields in its order, each written without its braces)
        head = frames.encode({"creator_id": r["creator_id"], "participants": r["participants"]}, what)[1:-1]
        middle = frames.encode({"created_at": r["created_at"], "expires_at": r["expires_at"]}, what)[1:-1]
        tail = frames.encode({"parent_channel_id": r["parent_channel_id"], "knobs": r["knobs"], "labels": r["labels"],
                              "required_acks": r["required_acks"]}, what)[1:-1]
        # (the manifest's text is the one `_manifest_text` keeps for every session of the kind: not copied)
        return (key, '{"channel_id":' + frames.encode(md.session_id, what) + ',"manifest":',
                self._manifest_text(md, what), "," + head + ',"state":', "," + middle + ',"closed_at":',
                "," + tail + ',"pending_acks":')

    def _manifest_text(self, md: SessionMetadata, what: str) -> str:
        """The JSON of a channel record's manifest, kept per manifest and expectations (both frozen;
        every session of a kind shares its adapter's manifest) when it needed no repair."""
        key = (id(md.manifest), tuple(md.expectations))
        cached = self._manifests.get(key)
        if cached is not None and cached[0] is md.manifest:
            return cached[1]
        manifest = wire.manifest_to_ag2(md)
        text = frames.encode(manifest, what)
        if frames.clean(manifest):
            if len(self._manifests) >= 256:
                self._manifests.clear()
            self._manifests[key] = (md.manifest, text)
        return text

    def _rejected_by(self, md: SessionMetadata) -> list[str]:
        """Who rejected the invite that closed a session `invite_rejected` (AG2's `rejected_by`),
        from its log; nobody for any other session (no read)."""
        if md.close_reason != "invite_rejected" or not md.state.terminal:
            return []
        sid = md.session_id  # (an ended session's log read from the store: it is not read back whole)
        log = self.hub.read(sid, 1) if sid in self.hub.sessions else self.hub.store.read_range(sid, 1)
        return [e.sender_id for e in log if isinstance(e, Envelope) and e.event_type == EV_SESSION_REJECT]

    async def get_channel(self, conn: Conn, params: dict[str, Any]) -> Any:
        sid = params.get("channel_id")
        return self._channel(self._participant(conn, sid if type(sid) is str else _str(params, "channel_id")))

    async def list_channels(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _get(params, "agent_id", (str, type(None)), None)
        limit = min(_get(params, "limit", (int,), 50), self.quotas.max_list)
        if agent_id is not None:
            self._bound(conn, agent_id)
        mine = {agent_id} if agent_id is not None else set(conn.agents)
        # (ended ones included, as AG2's hub lists them: a hub that let them go builds them from their
        # creation and end records, `Hub.iter_sessions_of`). Each record encoded as it is found, and
        # the loop let run between parts: a listing of many ended channels does not hold up the others.
        # A channel's record is as large as its knobs (bounded by the frame size alone): the listing
        # stops once over the answer's limit (what the server would refuse to send), and lets the
        # loop run every `LIST_BYTES` encoded too.
        # Listings run concurrently (each in its task), at most LISTINGS_AT_ONCE of them building at
        # once: together they hold at most twice that limit, the one that would go past it refused.
        # (the stored records a part was built from are counted too, from before they are decoded
        # until the part is encoded)
        texts: list[str] = []
        size = encoded = records = 0

        def hold(n: int) -> None:
            nonlocal records
            records += n
            self._listing += n
            self._over_listing(size, size + records)

        async with self._listings:  # (at most LISTINGS_AT_ONCE build at once, hub-wide; the others wait holding nothing)
            parts = self.hub.iter_sessions_of(mine, limit, hold)
            try:
                for found in parts:
                    for md in found:
                        text = self._channel(md)  # (`get_channel`'s record: the same JSON)
                        texts.append(text)
                        size += len(text) + 1
                        self._listing += len(text) + 1
                        self._over_listing(size, size + records)
                        encoded += len(text)
                        if encoded >= LIST_BYTES:
                            encoded = 0
                            await asyncio.sleep(0)
                    self._listing -= records
                    records = 0
                    await asyncio.sleep(0)
            finally:
                self._listing -= size + records
                parts.close()
        return frames.Raw("[" + ",".join(texts) + "]")

    def _over_listing(self, size: int, mine: int) -> None:
        """Refuse a listing that has built `size` bytes (holding `mine` with the stored records it
        has in hand) when it is over the limit of one answer, or when others are being built too and
        all of them hold over twice that."""
        if size > self.max_reply:
            raise _bad(f"the channels listed are over this hub's limit for one answer ({self.max_reply}, "
                       "--max-reply-bytes): list fewer with limit")
        if self._listing > 2 * self.max_reply and self._listing > mine:
            raise _bad(f"the hub has {self._listing} bytes of channel listings being built at once, over its limit "
                       f"({2 * self.max_reply}, twice --max-reply-bytes): try again, or list fewer with limit")

    async def close_channel(self, conn: Conn, params: dict[str, Any]) -> Any:
        sid = _str(params, "channel_id")
        reason = _get(params, "reason", (str,), "") or "explicit_close"
        md = self._participant(conn, sid)
        if md.state not in _ENDING:
            await self.hub.close(sid, reason[:MAX_TEXT])
        return wire.channel_to_ag2(md, self._rejected_by(md))

    async def post_envelope(self, conn: Conn, params: dict[str, Any]) -> Any:
        e, (sender, sid, et, data, audience, causation, trace) = self._post_fields(conn, params)
        extra = self._post_sender(conn, e, sender, et, audience)
        if causation is not None and len(causation) > MAX_ID or trace is not None and len(trace) > MAX_ID:
            raise _bad(f"{'causation_id' if causation is not None and len(causation) > MAX_ID else 'trace_id'}: "
                       f"at most {MAX_ID} characters")
        live = self.hub.sessions.get(sid)
        md = live.metadata if live is not None else self._md(sid)
        if et == wire.AG2_ACK or et == wire.AG2_REJECT:
            self._from_participant(sid, md, sender)
        if et == wire.AG2_ACK:
            await self.hub.ack(sid, sender)
            return ""
        if et == wire.AG2_REJECT:
            reason = data.get("reason", "")
            await self.hub.reject(sid, sender, reason[:MAX_TEXT] if isinstance(reason, str) else "")
            return ""
        if md.state == SessionState.INVITED:
            await self._handshake_done(sid)
        self._post_allowed(sid, md, sender, et, audience)
        substantive = not et.startswith(_PROTOCOL_EVENTS)
        if substantive:
            self._authorize_inbox(md, sender, audience)
        env = Envelope(sid, sender, audience, wire.from_ag2_event(et, md.kind), data, causation_id=causation, trace_id=trace,
                       extra=extra)
        envelope_id = (await self.hub.post(env)).envelope_id
        if substantive and self.pending.get(sender, 0) > 0:  # the sender is working through its inbox
            self.pending[sender] -= 1
        return envelope_id

    async def _handshake_done(self, session_id: str) -> None:
        """A post to a session whose invitees have not all acked waits until its `create_channel`
        ends (opened, rejected, timed out), as AG2's hub holds it (its channel lock): then it is
        accepted, or refused because the session closed. Nothing to wait for on a session the hub
        was opening when it stopped (closed at its invite deadline): refused as invited."""
        waiter = self._opening.get(session_id)
        if waiter is not None and not waiter.done():
            await asyncio.wait((waiter,))  # (neither raises its outcome nor cancels it: create_channel's)

    def _post_fields(self, conn: Conn, params: dict[str, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """A posted envelope and its fields: the usual envelope (every field of its type) checked in
        one expression, any other one by one (`_posted`)."""
        e = params.get("envelope")
        if type(e) is dict:
            get = e.get
            fields = sender, sid, et, data, audience, causation, trace = (
                get("sender_id"), get("channel_id"), get("event_type"), get("event_data"), get("audience"),
                get("causation_id"), get("trace_id"))
            if (type(sender) is str and type(sid) is str and type(et) is str and type(data) is dict
                    and (audience is None or type(audience) is list) and (causation is None or type(causation) is str)
                    and (trace is None or type(trace) is str)):
                return e, fields
        return self._posted(conn, params)

    def _post_sender(self, conn: Conn, e: dict[str, Any], sender: str, et: str,
                     audience: Optional[list[Any]]) -> Optional[dict[str, Any]]:
        """The checks of a post that concern its sender (bound here, AG2's `outbound_to` and
        delegation depth) and its shape; returns its task fields (`_task_fields`)."""
        if sender not in conn.agents:
            self._bound(conn, sender)
        if len(et) > shapes.MAX_NAME:
            raise _bad(f"event_type: at most {shapes.MAX_NAME} characters")
        if audience is not None and not all(isinstance(a, str) for a in audience):
            raise _bad("audience must be a list of agent ids")
        extra = self._task_fields(e)
        depth = 0 if extra is None else extra.get("depth", 0)
        if audience or depth:
            self._authorize_send(sender, audience, depth)
        elif sender not in self.registry.by_id:  # (a broadcast at depth 0: only the sender's record is needed)
            self._agent(sender)
        return extra

    @staticmethod
    def _from_participant(sid: str, md: SessionMetadata, sender: str) -> None:
        """A bound agent that is not a participant of a live session posts nothing to it, an invite
        answer included (AG2's hub: after its checks of the event type and audience, before the
        session's own; an ended session refuses it as ended)."""
        if sender not in md.pset and not md.state.terminal:
            raise _bad(f"channel {sid!r} only accepts sends from participants, got {sender!r}")

    def _post_allowed(self, sid: str, md: SessionMetadata, sender: str, et: str, audience: Optional[list[str]]) -> None:
        """The checks of a post (not an ack or a reject) against its channel: an event type a client
        may send, an audience of participants, a sender among them (`_from_participant`), the live
        channel's byte quota."""
        if et.startswith("ag2.channel."):
            raise _bad(f"{et!r} is emitted only by the hub")
        if et.startswith("ag2.task.") or et in wire.NATIVE:
            raise _bad(f"event type {et!r} is not accepted by turnflow serve")
        if audience is not None and not set(audience) <= md.pset:
            raise _bad("audience must list only participants of the channel")
        if not md.state.terminal:
            if sender not in md.pset:
                self._from_participant(sid, md, sender)
            size = self._read(sid, md).size
            if size >= self.quotas.max_session_bytes:
                raise _bad(f"channel {sid!r} holds {size} bytes, this hub's limit for a live channel "
                           "(--max-session-bytes): nothing more can be posted to it")
            if self.held >= self.quotas.max_live_bytes:
                raise _bad(f"the hub's live channels hold {self.held} bytes, its limit for all of them "
                           "(--max-live-bytes): nothing more can be posted until some end")

    def _posted(self, conn: Conn, params: dict[str, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """A posted envelope and its fields, checked one by one in `post_envelope`'s order (the
        first refusal raised, as `post_envelope` would raise it)."""
        e = _get(params, "envelope", (dict,))
        sender, sid, et = _str(e, "sender_id"), _str(e, "channel_id"), _str(e, "event_type")
        self._bound(conn, sender)
        if len(et) > shapes.MAX_NAME:
            raise _bad(f"event_type: at most {shapes.MAX_NAME} characters")
        data = _get(e, "event_data", (dict,))
        audience = _get(e, "audience", (list, type(None)), None)
        if audience is not None and not all(isinstance(a, str) for a in audience):
            raise _bad("audience must be a list of agent ids")
        causation = _get(e, "causation_id", (str, type(None)), None)
        trace = _get(e, "trace_id", (str, type(None)), None)
        return e, (sender, sid, et, data, audience, causation, trace)

    def _authorize_send(self, sender_id: str, audience: Optional[list[str]], depth: int) -> None:
        """AG2's arbiter before an envelope is written: the sender's `outbound_to` for each agent
        it addresses explicitly, and `depth` against its `delegation_depth` (rules.py)."""
        by_id = self.registry.by_id
        recipients = [by_id[a] for a in audience or () if a != sender_id and a in by_id]
        why = rules.send(self._agent(sender_id), recipients, depth)
        if why is not None:
            raise _denied(why)

    def _authorize_inbox(self, md: SessionMetadata, sender_id: str, audience: Optional[list[str]]) -> None:
        """AG2's inbox gate: refused with AG2's `InboxFull` (code `error`) while a recipient has
        its rule's `limits.inbox.max_pending` notifications outstanding."""
        by_id = self.registry.by_id
        for rid in audience if audience is not None else md.participant_ids:
            agent = by_id.get(rid)
            if rid != sender_id and agent is not None:
                why = rules.inbox(agent, self.pending.get(rid, 0))
                if why is not None:
                    raise OpError(rules.INBOX_FULL, why)

    def _task_fields(self, e: dict[str, Any]) -> Optional[dict[str, Any]]:
        """AG2's task fields of a posted envelope, checked as AG2's hub checks them: a task id of
        AG2's shape (`depth` is checked against the sender's rule by `_authorize_send`). Kept only
        when one differs from AG2's default; none is acted on otherwise (AG2's hub does not either:
        no dedupe by `idempotency_key`, no per-envelope TTL)."""
        get = e.get
        if get("task_id") is None and get("priority", "normal") == "normal" and type(get("depth", 0)) is int \
                and get("depth", 0) == 0 and get("idempotency_key") is None and get("ttl_seconds") is None:
            return None  # AG2's client sends these defaults with nearly every envelope
        task_id = _get(e, "task_id", (str, type(None)), None)
        if task_id is not None and not _TASK_ID.match(task_id):
            raise _bad(f"invalid task_id: {task_id[:140]!r}")
        priority = _get(e, "priority", (str,), "normal")
        if priority not in PRIORITIES:
            raise _bad(f"priority must be one of {', '.join(PRIORITIES)}, got {priority[:40]!r}")
        depth = _get(e, "depth", (int,), 0)
        key = _get(e, "idempotency_key", (str, type(None)), None)
        ttl = _get(e, "ttl_seconds", (int, type(None)), None)
        if depth < 0 or ttl is not None and ttl < 0 or key is not None and len(key) > MAX_TEXT:
            raise _bad("depth and ttl_seconds must not be negative, an idempotency_key at most 500 characters")
        fields = {"task_id": task_id, "priority": priority, "depth": depth, "idempotency_key": key, "ttl_seconds": ttl}
        kept = {k: v for k, v in fields.items() if v != wire.TASK_DEFAULTS[k]}
        return kept or None

    async def read_wal(self, conn: Conn, params: dict[str, Any]) -> Any:
        get = params.get
        sid, since, until = get("channel_id"), get("since", 0), get("until")
        if not (type(sid) is str and type(since) is int and (until is None or type(until) is int)):
            sid = _str(params, "channel_id")
            since = _get(params, "since", (int,), 0)
            until = _get(params, "until", (int, type(None)), None)
        md = self._participant(conn, sid)
        texts = self._read(sid, md).texts[since:until]
        size = sum(map(len, texts))
        if size > self.max_reply:
            raise _bad(f"the log of {sid!r} from {since} is {size} bytes, over this hub's limit for one answer "
                       f"({self.max_reply}, --max-reply-bytes): read it in pages with since/until")
        return frames.Raw("[" + ",".join(texts) + "]")

    async def find_by_causation(self, conn: Conn, params: dict[str, Any]) -> Any:
        get = params.get
        sid, sender, cause = get("channel_id"), get("sender_id"), get("causation_id")
        if not (type(sid) is str and type(sender) is str and type(cause) is str):
            sid, sender, cause = _str(params, "channel_id"), _str(params, "sender_id"), _str(params, "causation_id")
        md = self._participant(conn, sid)
        log = self._read(sid, md)
        for i, by in (log.caused or {}).get(cause, ()):  # (kept as the log is read: no store read per call)
            if by == sender:
                return frames.Raw(log.texts[i])
        return None

    async def can_send(self, conn: Conn, params: dict[str, Any]) -> Any:
        get = params.get
        sid, sender, et = get("channel_id"), get("sender_id"), get("event_type")
        if not (type(sid) is str and type(sender) is str and (et is None or type(et) is str)):
            sid, sender = _str(params, "channel_id"), _str(params, "sender_id")
            _get(params, "event_type", (str, type(None)), None)
        self._bound(conn, sender)
        live = self.hub.sessions.get(sid)
        if live is None:
            return False  # (ended or unknown: AG2's hub answers False for a channel it does not know)
        md = live.metadata
        if md.state != SessionState.ACTIVE or sender not in md.pset:
            return False
        if et is not None and (et.startswith(("ag2.channel.", "ag2.task.")) or et in wire.NATIVE):
            return False  # (a post of it is refused whatever the turn: `_post_allowed`)
        # AG2's probe: the adapter's `validate_send` on an empty envelope of that type (a text by
        # default), so information (outside a workflow, a packet or a context set) is sendable out of turn
        probe = Envelope(sid, sender, None, EV_TEXT if et is None else wire.from_ag2_event(et, md.kind), {"text": ""})
        try:
            live.adapter.validate_send(md, probe, live.state)
        except ProtocolError:
            return False
        return True

    async def pending_turns_for(self, conn: Conn, params: dict[str, Any]) -> Any:
        agent_id = _str(params, "agent_id")
        self._bound(conn, agent_id)
        turns = []
        for sid, md in self._sessions():
            if md.state != SessionState.ACTIVE or agent_id not in md.pset or self.hub.expected_next(sid) != agent_id:
                continue
            last = self._read(sid, md).turn  # (kept as the log is read: not read again from the store)
            turns.append({"channel_id": sid, "triggering_envelope_id": last[0] if last else None,
                          "expected_at": wire.iso(last[1]) if last else wire.now_iso()})
        return turns

    async def report_turn_failure(self, conn: Conn, params: dict[str, Any]) -> Any:
        sid, agent_id = _str(params, "channel_id"), _str(params, "agent_id")
        envelope_id = _str(params, "envelope_id")
        error = _get(params, "error", (str,), "")
        self._bound(conn, agent_id)
        live = self.hub.sessions.get(sid)
        try:
            pset = live.metadata.pset if live is not None else self._md(sid).pset
        except OpError:  # (an unknown channel: answered as one the agent is not in, as AG2's hub answers)
            pset = frozenset()
        if agent_id not in pset:
            raise _denied(f"agent is not a participant of channel {sid[:64]!r}")
        self.hub.record_telemetry(sid, agent_id, {"event": "error", "reason": "turn_failure",
                                                  "payload": {"envelope_id": envelope_id, "error": error[:MAX_TEXT]}})
        return None
