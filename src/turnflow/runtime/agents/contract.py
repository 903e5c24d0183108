"""The participant side (docs/agents.md): the agent contract, `Capabilities`, telemetry events and
`SessionTools`, the tool surface one turn gets. A turn's calls are collected into one round
(one packet).

The contract (every method async):
- `open_session(ctx, emit) -> Capabilities` — the handshake. `ctx` is an `AgentContext`;
  `emit(event)` stores a telemetry event at any time (returns False when it was dropped).
  Returning anything but a valid `Capabilities` (or a mapping of its fields) fails the session
  start with `AdapterError`.
- `on_message(msg, tools)` — one turn: `msg` is the projected transcript (list of
  `{"sender", "text", ...}`), `tools` a `SessionTools`. Raising fails the turn.
- `close_session(session_id)` — idempotent, never raises.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Awaitable, Callable, Optional, Protocol, TypedDict, Union

from turnflow.runtime.agents.platform_tools import (ADAPTER_EVENT_TYPES, MAX_PAGE_SIZE, OPEN_MEMBERSHIP,
                                                    PEER_PAGE_SIZE, PLATFORM_TOOLS, PeerPage, ToolList, ToolText,
                                                    argument_problem, platform_schema, schema_names)
from turnflow.runtime.envelope import EV_PARTICIPANT_ADDED, EV_PARTICIPANT_REMOVED, Envelope
from turnflow.runtime.errors import AdapterError, ProtocolError

CONTROL_LOOPS = ("hub", "self", "atlas")  # "atlas": the contract's name for the hub-driven loop (effective "hub")
BEHAVIORS = ("self", "atlas")  # the agents file's `behavior:` override
TELEMETRY_EVENTS = ("env_action", "tool_response", "progress", "error", "thought", "task", *ADAPTER_EVENT_TYPES)
#: what `send_event(content, message_type, metadata)` accepts (the telemetry events an agent reports by message)
MESSAGE_TYPES = TELEMETRY_EVENTS
TELEMETRY_KEYS = ("event", "payload", "reason", "step", "timestamp", "metadata")
SCHEMA_FORMATS = ("openai", "anthropic")
FIXED_MEMBERSHIP = ("workflow", "consulting")  # session kinds whose roster the flow fixes
MEMBER_ROLES = {"member": "participant"}  # the integration guide's role names -> turnflow's


class ToolError(AdapterError):
    """A tool call the agent made is not valid (unknown tool, bad arguments, not a participant).
    Model-driven agents feed it back to the model; anywhere else it fails the turn."""


@dataclass(frozen=True)
class Capabilities:
    """What an agent declares in its handshake.

    `control_loop`: `hub` — the hub drives one turn at a time (one `on_message` = one round);
    `self` — the agent runs its own inner loop (tools, retries, sub-steps) and returns one round.
    `supports_stepwise`: the agent can be driven one turn at a time; required for `hub`.
    `telemetry_stream`: the agent emits telemetry events while it works.
    """

    control_loop: str = "hub"
    supports_stepwise: bool = True
    telemetry_stream: bool = False

    def check(self, agent_id: str) -> "Capabilities":
        """The capabilities the hub uses (`atlas` becomes `hub`), or `AdapterError` (naming the
        loop as the agent wrote it)."""
        if self.control_loop not in CONTROL_LOOPS:
            raise AdapterError(f"agent {agent_id!r}: bad handshake: control_loop must be 'hub', 'self' or 'atlas', "
                               f"got {self.control_loop!r}")
        for name in ("supports_stepwise", "telemetry_stream"):
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise AdapterError(f"agent {agent_id!r}: bad handshake: {name} must be true or false, got {v!r}")
        if self.control_loop in ("hub", "atlas") and not self.supports_stepwise:
            how = "(the hub drives one turn at a time) needs supports_stepwise" if self.control_loop == "atlas" \
                else "needs supports_stepwise (the hub drives one turn at a time)"
            raise AdapterError(f"agent {agent_id!r}: bad handshake: control_loop {self.control_loop!r} {how}; "
                               "declare control_loop 'self' instead")
        if self.control_loop == "atlas":
            return Capabilities("hub", self.supports_stepwise, self.telemetry_stream)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"control_loop": self.control_loop, "supports_stepwise": self.supports_stepwise,
                "telemetry_stream": self.telemetry_stream}

    @classmethod
    def from_handshake(cls, raw: Any, agent_id: str) -> "Capabilities":
        """The effective capabilities of a handshake answer: a `Capabilities` or a mapping of its
        fields (missing fields take their defaults). Anything else is a bad handshake."""
        if isinstance(raw, Capabilities):
            return raw.check(agent_id)
        if isinstance(raw, dict):
            known = [f.name for f in fields(cls)]
            unknown = sorted(str(k) for k in raw if k not in known)
            if unknown:
                raise AdapterError(f"agent {agent_id!r}: bad handshake: unknown capability {unknown[0]!r} "
                                   f"(known: {', '.join(known)})")
            return cls(**raw).check(agent_id)
        raise AdapterError(f"agent {agent_id!r}: bad handshake: open_session must return Capabilities, "
                           f"got {type(raw).__name__} {raw!r}"[:300])


#: the stateful-adapter handshake's names: its `AdapterCapabilities` is `Capabilities`, its
#: `emit_event` an `AdapterEventEmitter` (an awaitable callable taking a mapping or an
#: `AdapterTelemetryEvent`, answering whether the event was stored)
AdapterCapabilities = Capabilities
AdapterEventEmitter = Callable[[Any], Awaitable[bool]]


def raw_capabilities(raw: Any) -> Any:
    """The handshake answer as logged (JSON-safe)."""
    if isinstance(raw, Capabilities):
        return raw.to_dict()
    try:
        return json.loads(json.dumps(raw))
    except (TypeError, ValueError):
        return repr(raw)[:300]


@dataclass(frozen=True)
class AdapterTelemetryEvent:
    """A telemetry event as an object; `emit` / `emit_event` accept it as well as a mapping of the
    same keys. `timestamp`: when it happened by the agent's clock (epoch seconds or ISO-8601 text)."""

    event: str
    payload: Any = None
    reason: Optional[str] = None
    step: Optional[int] = None
    timestamp: Any = None
    metadata: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in TELEMETRY_KEYS if k == "event" or getattr(self, k) is not None}


def _json_safe(v: Any) -> bool:
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def telemetry_problem(event: Any) -> Optional[str]:
    """Why a telemetry event is malformed, or None when it is valid.

    A valid event is a mapping with `event` one of `TELEMETRY_EVENTS` (env_action, tool_response,
    progress, error, thought, task, tool_call, tool_result) and optional `payload` (any JSON
    value), `reason` (string or null), `step` (non-negative integer or null), `metadata` (an
    object of JSON values, or null); no other keys."""
    if isinstance(event, AdapterTelemetryEvent):
        event = event.to_dict()
    if not isinstance(event, dict):
        return f"a telemetry event is a mapping or an AdapterTelemetryEvent, got {type(event).__name__}"
    extra = sorted(str(k) for k in event if k not in TELEMETRY_KEYS)
    if extra:
        return f"unknown key {extra[0]!r} (known: {', '.join(TELEMETRY_KEYS)})"
    if event.get("event") not in TELEMETRY_EVENTS:
        return f"`event` must be one of {', '.join(TELEMETRY_EVENTS)}, got {event.get('event')!r}"
    r = event.get("reason")
    if r is not None and not isinstance(r, str):
        return f"`reason` must be a string, got {r!r}"
    s = event.get("step")
    if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 0):
        return f"`step` must be a non-negative integer, got {s!r}"
    return _extras_problem(event)


def _extras_problem(event: dict[str, Any]) -> Optional[str]:
    """`timestamp`, `payload` and `metadata` of a telemetry event (see `telemetry_problem`)."""
    ts = event.get("timestamp")
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float, str))):
        return f"`timestamp` must be epoch seconds or ISO-8601 text, got {ts!r}"
    if not _json_safe(event.get("payload")):
        return "`payload` must be a JSON value (no NaN, no objects that do not serialise)"
    meta = event.get("metadata")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(k, str) for k in meta)
                                 and _json_safe(meta)):
        return f"`metadata` must be an object of JSON values, got {meta!r}"[:300]
    return None


def check_telemetry(event: Any, agent_id: str) -> Optional[dict[str, Any]]:
    """The event normalised (`payload`, `reason`, `step` present), or None after a warning."""
    problem = telemetry_problem(event)
    if problem is not None:
        warnings.warn(f"dropped malformed telemetry event from {agent_id!r}: {problem}", stacklevel=3)
        return None
    if isinstance(event, AdapterTelemetryEvent):
        event = event.to_dict()
    ev = {"event": event["event"], "payload": event.get("payload"), "reason": event.get("reason"),
          "step": event.get("step")}
    for key in ("timestamp", "metadata"):
        if event.get(key) is not None:
            ev[key] = event[key]
    return ev


class RosterEntry(TypedDict):
    """One participant as agents are told about it (`AgentContext.roster`, `lookup_peers`)."""

    agent_id: str
    role: str
    description: str


@dataclass(frozen=True)
class AgentContext:
    """What an agent is told about its session at the handshake. The first five fields are
    always given; the rest come from the compiled spec (`session_context.agent_context`) and
    default to "unknown" for contexts built by hand."""

    session_id: str
    agent_id: str
    kind: str
    participants: tuple[str, ...]
    tools: tuple[dict[str, Any], ...]  # this agent's routing tools: dicts {name, description, target}
    name: str = ""  # the block name
    title: str = ""  # the block's human title
    description: str = ""  # this participant's description
    task: Optional[str] = None  # the `--task` text
    roster: tuple[RosterEntry, ...] = ()  # every participant, in spec order
    context_vars: tuple[tuple[str, Any], ...] = ()  # (key, initial value) pairs of the workflow's context variables
    dynamic_handoffs: bool = False  # the session accepts `handoff(to)` to a named participant


class Agent(Protocol):
    """The agent contract in its one canonical shape, the one the hub side calls (`agents.driver`,
    `runtime.runner`). An agent written in another of the contract's forms — the handshake as
    `aopen_session(task=, metadata=, emit_event=)`, a turn as the phases `aplan` / `aexecute` /
    `asynthesize`, no `close_session`, no optional attributes — is adapted to it once, when the
    run is set up (`agents.protocol.as_agent`).

    `open_session(ctx, emit)` answers the handshake: a `Capabilities` or a mapping of its fields
    (checked by the hub). `behavior_override`: the agents file's `behavior:` (None: the
    handshake's own control loop). `history_converter`: turns `tools.history` into the agent's
    framework's messages (None: the raw list). `description`: what `lookup_peers` says of it."""

    @property
    def behavior_override(self) -> Optional[str]: ...
    @property
    def history_converter(self) -> Any: ...
    @property
    def description(self) -> str: ...

    def open_session(self, ctx: AgentContext, emit: Callable[[Any], Awaitable[bool]]) -> Awaitable[Any]: ...
    def on_message(self, msg: Any, tools: "SessionTools") -> Awaitable[None]: ...
    def close_session(self, session_id: str) -> Awaitable[None]: ...


def tool_arguments(name: str, args: Union[dict[str, Any], str, None]) -> dict[str, Any]:
    """The arguments of a tool call as a mapping: `args` itself, or its JSON text (an empty text
    or None: no arguments). Raises `ToolError` for text that is not JSON or for anything but an object."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ToolError(f"{name}: arguments are not valid JSON: {exc}") from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"{name}: arguments must be an object, got {args!r}"[:300])
    return args


def tool_schema(tool: dict[str, Any], fmt: str) -> dict[str, Any]:
    params = {"type": "object", "properties": {"reason": {"type": "string"}}, "required": []}
    name, desc = tool["name"], tool.get("description") or ""
    if fmt == "openai":
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": params}}
    if fmt == "anthropic":
        return {"name": name, "description": desc, "input_schema": params}
    raise AdapterError(f"unknown tool schema format {fmt!r} (known: {', '.join(SCHEMA_FORMATS)})")


@dataclass
class SessionTools:
    """Collects one round. `round()` returns `{body, kind, tool, reason, target, set, delete}`.

    Telemetry events given to `emit_event` are validated at once (a malformed one is dropped
    with a warning and `emit_event` returns False) and stored by the hub when the turn ends.
    """

    agent_id: str
    participants: tuple[str, ...]
    routing_tools: tuple[dict[str, Any], ...] = ()  # dicts {name, description, target} owned by this agent
    any_tool: bool = False  # the session declares no tools at all: any routing tool name is allowed
    emit: Optional[Callable[[dict[str, Any]], Awaitable[bool]]] = None  # unused (telemetry is collected); for callers
    step: Optional[int] = None  # the turn number, stamped on telemetry events that carry none
    sink: Optional[Callable[[dict[str, Any]], None]] = None  # set by the hub: accepted events are stored at once
    session_id: Optional[str] = None  # the session this turn belongs to (model agents find their context by it)
    _body: list[str] = field(default_factory=list)
    _routing: dict[str, Any] = field(default_factory=dict)
    _set: dict[str, Any] = field(default_factory=dict)
    _delete: list[str] = field(default_factory=list)
    _mentions: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    session_kind: str = ""  # the session's kind (workflow, consulting, conversation, discussion); "" unknown
    roster: tuple[RosterEntry, ...] = ()  # every participant, in order (set by the hub)
    is_session_bootstrap: bool = False  # this is the session's first delivery to this participant
    participants_msg: Optional[str] = None  # the roster as text, only when it changed since this participant's last turn
    input_source: Optional[Callable[[], Optional[str]]] = None  # set by the hub: reads `turn_input`
    roster_port: Optional[Callable[[str, dict[str, Any]], None]] = None  # set by the hub: checks and queues a roster change
    roster_changes: list[Envelope] = field(default_factory=list)  # membership envelopes, posted when the turn is delivered

    directory: Optional[Callable[[], Any]] = None  # set by the runner: every agent the hub knows, as RosterEntry
    room_port: Optional[Callable[[str, list[str]], str]] = None  # set by the hub: queues a new chatroom
    rooms: list[tuple[str, list[str]]] = field(default_factory=list)  # chatrooms opened when the turn is delivered
    history_source: Optional[Callable[[], Any]] = None  # set by the hub: computes `history`

    # -- the round ------------------------------------------------------------------------------
    # Every tool answers with a value that is also awaitable (platform_tools.ToolText / ToolList):
    # `tools.send_message(...)` and `await tools.send_message(...)` are the same call.
    def send_message(self, content: str, mentions: Optional[Any] = None) -> ToolText:
        """Append `content` to the round's body. `mentions` (participant names) are checked and
        kept as the round's `mentions`; an unknown name raises `ToolError`."""
        text = content
        if not isinstance(text, str):
            raise ToolError(f"{self.agent_id}: send_message needs text, got {text!r}"[:300])
        if mentions is not None:
            if isinstance(mentions, str) or not all(isinstance(m, str) for m in mentions):
                raise ToolError(f"{self.agent_id}: send_message mentions must be a list of participant names, "
                                f"got {mentions!r}"[:300])
            unknown = [m for m in mentions if m not in self.participants]
            if unknown:
                raise ToolError(f"{self.agent_id}: send_message mentions {unknown[0]!r}, not a participant "
                                f"({', '.join(self.participants)})")
            self._mentions.extend(m for m in mentions if m not in self._mentions)
        self._body.append(text)
        return ToolText("message added to your turn's reply")

    def send_event(self, content: Any, message_type: str = "thought", metadata: Optional[dict[str, Any]] = None) -> ToolText:
        """A telemetry event of type `message_type` (thought, task, error, progress, env_action,
        tool_response, tool_call, tool_result) whose payload is `{"content": content}` and whose
        `metadata` is `metadata` (an object of JSON values); stored, never part of the round.
        An unknown type or bad metadata raises `ToolError` (a tool call the model may correct).
        Answers `"<type> event recorded"` (truthy) or `""` when the event was dropped."""
        if message_type not in MESSAGE_TYPES:
            raise ToolError(f"{self.agent_id}: send_event message_type must be one of {', '.join(MESSAGE_TYPES)}, "
                            f"got {message_type!r}"[:300])
        if not _json_safe(content):
            raise ToolError(f"{self.agent_id}: send_event content must be a JSON value, got {content!r}"[:300])
        ev: dict[str, Any] = {"event": message_type, "payload": {"content": content}}
        if metadata is not None:
            if not (isinstance(metadata, dict) and all(isinstance(k, str) for k in metadata) and _json_safe(metadata)):
                raise ToolError(f"{self.agent_id}: send_event metadata must be an object of JSON values, "
                                f"got {metadata!r}"[:300])
            ev["metadata"] = metadata
        return ToolText(f"{message_type} event recorded" if self.emit_event(ev) else "")

    def handoff(self, target: str, reason: str = "") -> ToolText:
        if target not in self.participants:
            raise ToolError(f"{self.agent_id}: cannot hand off to {target!r}: not a participant "
                            f"({', '.join(self.participants)})")
        if self._routing.get("kind") != "finish":
            self._routing.update({"kind": "handoff", "target": target, "reason": reason or None})
        return ToolText(f"handed off to {target}")

    def finish(self, reason: str = "", summary: str = "") -> ToolText:
        self._routing = {"kind": "finish", "reason": reason or None, "tool": self._routing.get("tool")}
        if summary:
            self._body.append(summary)
        return ToolText("finished")

    def set_context(self, key: str, value: Any) -> ToolText:
        if not isinstance(key, str):
            raise ToolError(f"{self.agent_id}: context keys are strings, got {key!r}"[:300])
        if not _json_safe(value):
            raise ToolError(f"{self.agent_id}: context value for {key!r} must be a JSON value, got {value!r}"[:300])
        self._set[key] = value
        if key in self._delete:  # the last call for a key wins
            self._delete = [k for k in self._delete if k != key]
        return ToolText(f"context {key} set (applied when your turn ends)")

    def delete_context(self, key: str) -> ToolText:
        if not isinstance(key, str):
            raise ToolError(f"{self.agent_id}: context keys are strings, got {key!r}"[:300])
        self._set.pop(key, None)  # the last call for a key wins
        if key not in self._delete:
            self._delete.append(key)
        return ToolText(f"context {key} deleted (applied when your turn ends)")

    # -- telemetry ------------------------------------------------------------------------------
    def emit_event(self, event: Any) -> bool:
        ev = check_telemetry(event, self.agent_id)
        if ev is None:
            return False
        if ev["step"] is None:
            ev["step"] = self.step
        if self.sink is not None:
            self.sink(ev)
        else:
            self.events.append(ev)
        return True

    @property
    def turn_input(self) -> Optional[str]:
        """What this turn answers: the session adapter's `extract_turn_input` of the latest message
        from another participant (None at the start, or without a hub)."""
        return self.input_source() if self.input_source is not None else None

    @property
    def history(self) -> Any:
        """This turn's history as the contract gives it: converted by the agent's `HistoryConverter`
        (the agents file's `history_converter`, or the agent's own `history_converter` attribute),
        else the raw history — the view's messages with `role`, `content`, `sender_name`,
        `sender_type` and `message_type` (runtime/agents/history.py). Computed when read."""
        return self.history_source() if self.history_source is not None else []

    # -- discovery and membership ---------------------------------------------------------------
    def get_participants(self) -> ToolList:
        return ToolList(self.participants)

    def lookup_peers(self, page: int = 1, page_size: int = PEER_PAGE_SIZE) -> PeerPage:
        """One page of the agents that could take part, as `{agent_id, role, description,
        in_session}`: the session's other participants (in order), then every other agent the hub
        knows (`directory`: under `turnflow run` the agents file's agents, under `run --hub` the
        served hub's registered agents). `page` is 1-based; the answer's `total` and `has_more` tell
        whether to ask for the next page."""
        for what, v, hi in (("page", page, None), ("page_size", page_size, MAX_PAGE_SIZE)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (hi is not None and v > hi):
                raise ToolError(f"{self.agent_id}: lookup_peers {what} must be an integer from 1"
                                + (f" to {hi}" if hi else "") + f", got {v!r}"[:200])
        roster = self.roster or tuple({"agent_id": p, "role": "participant", "description": ""}
                                      for p in self.participants)
        peers = [{**r, "in_session": True} for r in roster if r["agent_id"] != self.agent_id]
        seen = {r["agent_id"] for r in roster} | {self.agent_id}
        for r in (self.directory() if self.directory is not None else ()):
            if r["agent_id"] not in seen:
                seen.add(r["agent_id"])
                peers.append({"agent_id": r["agent_id"], "role": r.get("role") or "participant",
                              "description": r.get("description") or "", "in_session": False})
        start = (page - 1) * page_size
        return PeerPage(peers[start:start + page_size], page, page_size, len(peers))

    def add_participant(self, name: Optional[str] = None, role: str = "participant", description: str = "", *,
                        agent_id: Optional[str] = None) -> ToolText:
        """Add the agent `name` to a running conversation or discussion (a `participant.added`
        envelope, posted with this turn's round); `ToolError` with the session's reason when
        refused. `agent_id=` is the same argument under turnflow's name; role `member` (the
        integration guide's default) is turnflow's `participant`."""
        who = _one_name("add_participant", name, agent_id)
        if not isinstance(role, str):
            raise ToolError(f"add_participant: role must be text, got {role!r}"[:300])
        role = MEMBER_ROLES.get(role, role)
        self._change_roster("add_participant", who, {"agent_id": who, "role": role, "description": description})
        return ToolText(f"added {who} ({role}): it takes part from the next turn")

    def remove_participant(self, name: Optional[str] = None, *, agent_id: Optional[str] = None) -> ToolText:
        """Remove the participant `name` from a running conversation or discussion
        (`participant.removed`); `agent_id=` is the same argument under turnflow's name."""
        who = _one_name("remove_participant", name, agent_id)
        self._change_roster("remove_participant", who, {"agent_id": who})
        return ToolText(f"removed {who}: it takes no further turns")

    def create_chatroom(self, name: str, participants: Optional[list[str]] = None) -> ToolText:
        """Open a new discussion session named `name` with this agent as its initiator and
        `participants` (default: this session's other participants), when the turn is delivered.
        Allowed from a conversation or a discussion; a workflow's and a consulting session's
        agents are fixed by the flow, so there it raises `ToolError` saying so."""
        if self.session_kind and self.session_kind not in OPEN_MEMBERSHIP:
            raise ToolError(f"{self.agent_id}: create_chatroom({name!r}) refused: a {self.session_kind} session's "
                            "participants are fixed by its flow, so its agents cannot open other sessions "
                            f"(allowed from: {', '.join(OPEN_MEMBERSHIP)})")
        if not isinstance(name, str) or not name.strip():
            raise ToolError(f"{self.agent_id}: create_chatroom needs a non-empty name, got {name!r}"[:300])
        others = [p for p in self.participants if p != self.agent_id] if participants is None else participants
        if isinstance(others, str) or not all(isinstance(p, str) for p in others):
            raise ToolError(f"{self.agent_id}: create_chatroom participants must be a list of names, got {others!r}"[:300])
        if self.room_port is None:
            raise ToolError(f"{self.agent_id}: create_chatroom({name!r}) refused: this turn is not part of a "
                            "running session on a hub")
        try:
            return ToolText(self.room_port(name, [p for p in others if p != self.agent_id]))
        except ProtocolError as exc:
            raise ToolError(f"{self.agent_id}: create_chatroom({name!r}) refused: {exc}") from None

    def _change_roster(self, what: str, agent_id: Any, data: dict[str, Any]) -> None:
        """A workflow's and a consulting session's roster is fixed by the flow; otherwise the hub's
        adapter checks the change against the roster (and the changes made earlier in this turn)."""
        if self.session_kind in FIXED_MEMBERSHIP:
            raise ToolError(f"{self.agent_id}: {what}({agent_id!r}) refused: the participants of a "
                            f"{self.session_kind} session are fixed by its flow")
        if self.roster_port is None:
            raise ToolError(f"{self.agent_id}: {what}({agent_id!r}) refused: this turn is not part of a "
                            "running session on a hub")
        try:
            self.roster_port(EV_PARTICIPANT_ADDED if what == "add_participant" else EV_PARTICIPANT_REMOVED, data)
        except ProtocolError as exc:
            raise ToolError(f"{self.agent_id}: {exc}") from None

    def get_tool_schemas(self, format: str = "openai") -> list[dict[str, Any]]:  # noqa: A002 (the guide's name)
        """Every tool `execute_tool_call` runs, as model tool definitions (`format`: `openai` or
        `anthropic`): the agent's routing tools (spec order, each with an optional `reason` argument),
        then the platform tools of `platform_tools.PLATFORM_TOOLS` (the membership tools and
        `create_chatroom` only where the session's kind allows them). A synchronous call; an
        unknown format is a `ToolError`."""
        fmt = format
        if fmt not in SCHEMA_FORMATS:
            raise ToolError(f"unknown tool schema format {fmt!r} (known: {', '.join(SCHEMA_FORMATS)})"[:300])
        routing = [t["name"] for t in self.routing_tools]
        return ([tool_schema(t, fmt) for t in self.routing_tools]
                + [platform_schema(n, fmt) for n in schema_names(self.session_kind) if n not in routing])

    def execute_tool_call(self, name: str, args: Union[dict[str, Any], str, None] = None) -> ToolText:
        """Call any tool `get_tool_schemas` lists, by name. A platform tool runs with its arguments
        (checked against its parameters). A routing tool makes this round a handoff through that
        tool (the graph decides the next speaker, as AG2's `tool_called` condition does), with an
        optional string `reason`. `args` is a mapping or its JSON text. Raises `ToolError` for an
        unknown tool, malformed arguments or a second, different routing tool in the same round."""
        names = [t["name"] for t in self.routing_tools]
        if isinstance(name, str) and name not in names and name in PLATFORM_TOOLS:
            return self._platform_call(name, tool_arguments(name, args))
        if not isinstance(name, str) or (name not in names and not self.any_tool):
            import difflib

            close = difflib.get_close_matches(name, names + list(PLATFORM_TOOLS), n=1, cutoff=0.8) \
                if isinstance(name, str) else []
            raise ToolError(f"{self.agent_id} has no routing tool {name!r}"
                            + (f"; did you mean {close[0]!r}?" if close else "")
                            + (f" (its tools: {', '.join(names)})" if names else " (it has none)"))
        args = tool_arguments(name, args)
        extra = sorted(str(k) for k in args if k != "reason")
        if extra:
            raise ToolError(f"{name}: unknown argument {extra[0]!r} (it takes only an optional `reason`)")
        reason = args.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ToolError(f"{name}: `reason` must be a string, got {reason!r}")
        prev = self._routing.get("tool")
        if prev is not None and prev != name:
            raise ToolError(f"{name}: this round is already routed via {prev}; one routing tool per round")
        if self._routing.get("kind") == "finish":
            self._routing["tool"] = name
        else:
            self._routing.update({"kind": "handoff", "tool": name})
            if reason:
                self._routing["reason"] = reason
        return ToolText(f"routed via {name}")

    def _platform_call(self, name: str, args: dict[str, Any]) -> ToolText:
        """A platform tool called by name (`execute_tool_call`): its arguments checked against
        its parameters in `PLATFORM_TOOLS`, then the method of the same name. A list answer comes
        back as JSON text (`lookup_peers`: `{peers, page, page_size, total, has_more}`)."""
        problem = argument_problem(name, args)
        if problem is not None:
            raise ToolError(problem)
        try:
            result = getattr(self, name)(**args)
        except ToolError:
            raise
        except AdapterError as exc:
            raise ToolError(f"{name}: {exc}") from None
        except TypeError as exc:  # a value of the wrong kind for the method
            raise ToolError(f"{name}: {exc}") from None
        if isinstance(result, PeerPage):
            return ToolText(json.dumps(result.to_dict()))
        if isinstance(result, list):
            return ToolText(json.dumps(result))
        return ToolText(result) if result else ToolText(f"{name}: done")

    # -- result ---------------------------------------------------------------------------------
    @property
    def routed(self) -> bool:
        return bool(self._routing)

    def round(self) -> dict[str, Any]:
        r = {k: v for k, v in self._routing.items() if v is not None}
        out = {"body": "\n".join(self._body), "kind": r.get("kind", "text"), "tool": r.get("tool"),
               "reason": r.get("reason"), "target": r.get("target"), "set": dict(self._set),
               "delete": list(self._delete)}
        if self._mentions:
            out["mentions"] = list(self._mentions)
        return out


def _one_name(tool: str, name: Any, agent_id: Any) -> Any:
    """The participant a membership tool names, as `name` (the integration guide's argument) or
    `agent_id` (turnflow's): exactly one of them."""
    if name is not None and agent_id is not None:
        raise ToolError(f"{tool}: give the participant's name once (`name` or `agent_id`, not both)")
    if name is None and agent_id is None:
        raise ToolError(f"{tool}: missing argument 'name'")
    return name if name is not None else agent_id


class FakeSessionTools(SessionTools):
    """A `SessionTools` for unit-testing your own agents without a hub.

        tools = FakeSessionTools("triage", participants=["user", "triage", "billing"],
                                 tools=[{"name": "transfer_to_billing", "description": "money"}])
        await my_agent.on_message([{"sender": "user", "text": "refund please"}], tools)
        assert tools.tool_calls == ["transfer_to_billing"]
        assert tools.round()["kind"] == "handoff"

    Every call is also recorded in `calls` as `(method, args...)`; `events` holds the
    telemetry events that passed validation, `dropped` the ones that did not.
    """

    def __init__(self, agent_id: str = "agent", participants: Any = None, tools: Any = (), *,
                 any_tool: bool = False, step: Optional[int] = None, session_id: Optional[str] = None) -> None:
        parts = tuple(participants) if participants is not None else (agent_id,)
        norm = tuple({"name": t, "description": ""} if isinstance(t, str) else dict(t) for t in tools)
        super().__init__(agent_id, parts, norm, any_tool, None, step, session_id=session_id)
        self.calls: list[tuple[Any, ...]] = []  # (method name, its arguments...)
        self.dropped: list[Any] = []

    @property
    def messages(self) -> list[str]:
        return list(self._body)

    @property
    def sent_messages(self) -> list[str]:
        """What `send_message` added to the round (the integration guide's `FakeAgentTools.sent_messages`)."""
        return list(self._body)

    @property
    def tool_calls(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "execute_tool_call"]

    def send_message(self, content: str, mentions: Optional[Any] = None) -> ToolText:
        self.calls.append(("send_message", content) if mentions is None else ("send_message", content, mentions))
        return super().send_message(content, mentions)

    def handoff(self, target: str, reason: str = "") -> ToolText:
        self.calls.append(("handoff", target, reason))
        return super().handoff(target, reason)

    def finish(self, reason: str = "", summary: str = "") -> ToolText:
        self.calls.append(("finish", reason, summary))
        return super().finish(reason, summary)

    def set_context(self, key: str, value: Any) -> ToolText:
        self.calls.append(("set_context", key, value))
        return super().set_context(key, value)

    def delete_context(self, key: str) -> ToolText:
        self.calls.append(("delete_context", key))
        return super().delete_context(key)

    def emit_event(self, event: Any) -> bool:
        self.calls.append(("emit_event", event))
        ok = super().emit_event(event)
        if not ok:
            self.dropped.append(event)
        return ok

    def execute_tool_call(self, name: str, args: Union[dict[str, Any], str, None] = None) -> ToolText:
        self.calls.append(("execute_tool_call", name, args))
        return super().execute_tool_call(name, args)
