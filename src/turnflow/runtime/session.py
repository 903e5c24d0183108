"""Session data model (docs/runtime.md): states, participants, manifests, metadata, expectations."""

from __future__ import annotations

import enum
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Optional, Sequence, TypeVar

from turnflow.runtime.clock import STEADY
from turnflow.runtime.errors import ProtocolError


class SessionState(str, enum.Enum):
    INVITED = "invited"
    ACTIVE = "active"
    CLOSING = "closing"
    CLOSED = "closed"
    EXPIRED = "expired"

    terminal: bool  # CLOSED or EXPIRED: an attribute of each member (read ~40 times per served session; a
    # property is a Python call each time)

    def __init__(self, value: str) -> None:
        self.terminal = value in ("closed", "expired")


ACTIONS = ("warn", "hide", "audit", "auto_close")
EVALUATORS = ("acks_within", "reply_within", "turn_within", "max_silence")

_SESSION_ID = re.compile(r"[0-9a-f]{32}\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,127}\Z")
_AGENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,127}\Z")


def new_session_id() -> str:
    """A new session's id: a UUID version 7 (RFC 9562) as 32 lowercase hex digits — the time in
    milliseconds (the process's steady clock, `clock.STEADY`), then 74 random bits. Sessions opened
    later sort later, so the store's indexes by session id (the log's `(session_id, seq)`, the
    sessions' `session_id`) take a busy hub's new entries near their end: a commit rewrites a few of
    their pages instead of one page per session it writes to, anywhere in the index (uuid4 ids,
    until 2026-11-29: docs/benchmarks.md, "Serve hub CPU, session 11")."""
    ms = int(STEADY() * 1000) & 0xFFFFFFFFFFFF
    r = int.from_bytes(os.urandom(10), "big")  # 80 bits: 12 of them rand_a, 62 rand_b (6 unused)
    return "%012x7%03x%016x" % (ms, r >> 68, (r & _RAND_B) | _VARIANT)


_RAND_B = (1 << 62) - 1
_VARIANT = 1 << 63  # the RFC 4122 / 9562 variant: 0b10 in the top bits of the last 64


def check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise ProtocolError(f"invalid session id {session_id!r}: expected 32 lowercase hex digits")
    return session_id


def check_name(name: Any, what: str = "session name") -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProtocolError(f"invalid {what} {name!r}: use a letter or _, then letters, digits, _ . - "
                            "(at most 128 characters)")
    return name


def check_agent_id(agent_id: Any) -> str:
    if not isinstance(agent_id, str) or not _AGENT_ID.match(agent_id):
        raise ProtocolError(f"invalid agent id {agent_id!r}: use letters, digits, _ . : @ - "
                            "(at most 128 characters)")
    return agent_id


@dataclass(frozen=True, slots=True)
class Participant:
    agent_id: str
    role: str = "participant"
    order: int = 0
    description: str = ""
    tools: tuple[str, ...] = ()


# -- sharing immutable values among sessions -------------------------------------------------------
# Ten thousand sessions of one flow hold ten thousand equal participant lists, participant sets and
# knobs trees. Each is an object (or a tree of them) that the cyclic GC scans on every full
# collection, so equal values are shared: one instance, looked up in a small cache. Only values
# that cannot change are shared (frozen participants, frozensets) and knobs only as an equal copy
# made from their JSON text, so what is stored and what every session sees are the same.

_SHARED_LIMIT = 1024  # entries per cache; a full cache starts over (sharing is an optimisation only)
_PARTICIPANTS: dict[Participant, Participant] = {}
_PSETS: dict[frozenset[str], frozenset[str]] = {}
_KNOBS: dict[str, dict[str, Any]] = {}  # canonical JSON text of a knobs object -> one copy of it
_KNOBS_LIMIT = 256  # knobs trees may be large: fewer of them, and none over _KNOBS_TEXT_MAX characters
_KNOBS_TEXT_MAX = 1 << 18


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _remember(cache: dict[K, V], key: K, value: V, limit: int = _SHARED_LIMIT) -> V:
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def _ids_of(parts: Any) -> list[str]:
    """The participants' ids in their order, sorted once per participants tuple (sessions and their
    records share theirs)."""
    if type(parts) is not tuple:  # (assigned from outside as another sequence: not kept)
        return [p.agent_id for p in sorted(parts, key=_order)]
    known = _IDS.get(id(parts))
    if known is None or known[0] is not parts:
        known = _remember(_IDS, id(parts), (parts, tuple([p.agent_id for p in sorted(parts, key=_order)])))
    return list(known[1])


def shared_participant(p: "Participant") -> "Participant":
    """An equal participant already held by another session, or `p` (now shared). Only plainly
    typed ones are shared (an `order` of True is not the participant of order 1: stored as `true`)."""
    if type(p.agent_id) is not str or type(p.role) is not str or type(p.order) is not int \
            or type(p.description) is not str or type(p.tools) is not tuple:
        return p
    try:
        same = _PARTICIPANTS.get(p)
    except TypeError:  # a tool name that is not hashable: not shared
        return p
    return same if same is not None else _remember(_PARTICIPANTS, p, p)


_GROUPS: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # tuples of participants, of expectations
# id of a participants tuple -> (the tuple, kept so the id is not reused while known; its ids in order)
_IDS: dict[int, tuple[Any, tuple[str, ...]]] = {}


def _order(p: "Participant") -> int:
    return p.order


def shared_tuple(items: Iterable[V], canonical: Optional[dict[V, V]] = None) -> tuple[V, ...]:
    """`tuple(items)`, shared with every session that holds an equal tuple. With `canonical`, only
    when every item is the shared instance of its value (so equal means equal in type too)."""
    t = tuple(items)
    if not t:
        return ()
    try:
        if canonical is not None:
            for x in t:
                if canonical.get(x) is not x:
                    return t
        same = _GROUPS.get(t)
    except TypeError:  # an unhashable part: not shared
        return t
    return same if same is not None else _remember(_GROUPS, t, t)


def shared_pset(ids: frozenset[str]) -> frozenset[str]:
    same = _PSETS.get(ids)
    return same if same is not None else _remember(_PSETS, ids, ids)


_knobs_text = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode


def shared_knobs(knobs: Any) -> Any:
    """One copy for equal knobs (sessions of one flow): a copy of `knobs` made from its JSON text,
    shared with every session opened with equal knobs; `knobs` itself when it is not plain JSON
    (tuples, non-string keys, NaN...: kept exactly as given) or is empty."""
    if type(knobs) is not dict or not knobs:
        return knobs
    try:
        text = _knobs_text(knobs)
    except (TypeError, ValueError, RecursionError):
        return knobs
    same = _KNOBS.get(text)
    if same is None:
        same = json.loads(text)
        if same != knobs:  # the JSON text does not say everything (a tuple, a key 1 for "1", ...)
            return knobs
        if len(text) <= _KNOBS_TEXT_MAX:
            _remember(_KNOBS, text, same, _KNOBS_LIMIT)
    return same if same == knobs else knobs  # (a shared copy that somebody changed is not reused)


@dataclass(frozen=True, slots=True)
class Expectation:
    name: str
    seconds: float
    on_violation: str

    def to_dict(self) -> dict[str, Any]:
        secs = int(self.seconds) if float(self.seconds).is_integer() else self.seconds
        return {"name": self.name, "params": {"seconds": secs}, "on_violation": self.on_violation}

    @classmethod
    def from_dict(cls, d: Any) -> "Expectation":
        if not isinstance(d, dict):
            raise ProtocolError(f"an expectation must be an object, got {d!r}")
        name, action = d.get("name"), d.get("on_violation")
        params = d.get("params") or {}
        secs = params.get("seconds") if isinstance(params, dict) else None
        if name not in EVALUATORS:
            raise ProtocolError(f"unknown expectation {name!r} (known: {', '.join(EVALUATORS)})")
        if action not in ACTIONS:
            raise ProtocolError(f"unknown expectation action {action!r} (known: {', '.join(ACTIONS)})")
        if isinstance(secs, bool) or not isinstance(secs, (int, float)) or secs <= 0:
            raise ProtocolError(f"expectation {name}: params.seconds must be a positive number, got {secs!r}")
        return cls(name, float(secs), action)


@dataclass(frozen=True, slots=True)
class SessionManifest:
    type: str
    version: int
    min_participants: int
    max_participants: Optional[int]
    roles: tuple[str, ...]
    knobs_schema: dict[str, Any]
    default_view: str
    default_expectations: tuple[Expectation, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "version": self.version, "participants": {
            "min": self.min_participants, "max": self.max_participants, "roles": list(self.roles)},
            "knobs_schema": self.knobs_schema, "default_view": self.default_view,
            "default_expectations": [e.to_dict() for e in self.default_expectations]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SessionManifest":
        p = d["participants"]
        return cls(d["type"], d["version"], p["min"], p["max"], tuple(p["roles"]), d["knobs_schema"],
                   d["default_view"], tuple(Expectation.from_dict(e) for e in d["default_expectations"]))


# `pending_acks` once every invite is acked (shared: one object fewer per session). Typed Any on purpose: an
# empty frozenset standing in for the empty set[str]; nobody changes it (readers test `if acks:` first).
NO_ACKS: Any = frozenset()


@dataclass(slots=True)
class SessionMetadata:
    """A session's metadata. `participants`, `expectations` and `tools` are tuples (given as any
    sequence), shared among sessions that hold equal ones, like `pset`; `pending_acks` is a set
    while invites wait for acks, then the shared empty `NO_ACKS`."""

    session_id: str
    manifest: SessionManifest
    creator_id: str
    participants: Sequence[Participant]
    knobs: dict[str, Any]
    created_at: float
    name: str = ""
    expectations: Sequence[Expectation] = ()
    ttl_seconds: Optional[float] = None
    labels: dict[str, Any] = field(default_factory=dict)
    tools: Sequence[dict[str, Any]] = ()
    state: SessionState = SessionState.INVITED
    expires_at: Optional[float] = None
    closed_at: Optional[float] = None
    close_reason: str = ""
    pending_acks: set[str] = field(default_factory=set)
    activated_at: Optional[float] = None
    # what a client's create request carried that the hub keeps and hands back without acting on it
    # (AG2's `required_acks`: docs/serve.md); None for nearly every session, then absent from the record
    extra: Optional[dict[str, Any]] = None
    pset: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        self.participants = shared_tuple(self.participants, _PARTICIPANTS)
        self.expectations = shared_tuple(self.expectations)
        self.tools = tuple(self.tools)
        self.pset = shared_pset(frozenset([p.agent_id for p in self.participants]))

    @property
    def kind(self) -> str:
        return self.manifest.type

    @property
    def participant_ids(self) -> list[str]:
        """The participants' ids in their order (sorted once per participants tuple: sessions share theirs)."""
        return _ids_of(self.participants)

    def is_participant(self, agent_id: str) -> bool:
        return agent_id in self.pset

    def change_roster(self, added: bool, data: dict[str, Any]) -> None:
        """A `participant.added` / `participant.removed` envelope folded (the adapter validated it):
        the new participant comes last in order; the creation record is not rewritten (hydrate
        replays the envelope)."""
        who = data["agent_id"]
        if added:
            after = max((p.order for p in self.participants), default=-1) + 1
            parts = (*self.participants, shared_participant(Participant(who, data.get("role", "participant"), after,
                                                                        data.get("description", "") or "")))
        else:
            parts = tuple(p for p in self.participants if p.agent_id != who)
        self.participants = shared_tuple(parts, _PARTICIPANTS)
        self.pset = shared_pset(frozenset([p.agent_id for p in self.participants]))

    def creation_record(self) -> dict[str, Any]:
        """What the store keeps at creation (the lifecycle itself lives in the log)."""
        rec = {"session_id": self.session_id, "name": self.name, "manifest": self.manifest.to_dict(),
               "creator_id": self.creator_id,
               "participants": [{"agent_id": p.agent_id, "role": p.role, "order": p.order,
                                 "description": p.description, "tools": list(p.tools)}
                                for p in self.participants],
               "knobs": self.knobs, "created_at": self.created_at,
               "expectations": [e.to_dict() for e in self.expectations], "ttl_seconds": self.ttl_seconds,
               "labels": self.labels, "tools": list(self.tools)}
        if self.extra is not None:
            rec["extra"] = self.extra
        return rec

    @classmethod
    def from_creation_record(cls, r: dict[str, Any], manifest: Optional[SessionManifest] = None) -> "SessionMetadata":
        """(`manifest`: one equal to the record's, given by a caller that has it.)"""
        md = cls(session_id=r["session_id"], manifest=manifest or SessionManifest.from_dict(r["manifest"]),
                 creator_id=r["creator_id"],
                 participants=[shared_participant(Participant(p["agent_id"], p["role"], p["order"],
                                                              p.get("description", ""), tuple(p.get("tools", ()))))
                               for p in r["participants"]],
                 knobs=r["knobs"], created_at=r["created_at"], name=r.get("name", ""),
                 expectations=[Expectation.from_dict(e) for e in r.get("expectations", [])],
                 ttl_seconds=r.get("ttl_seconds"), labels=r.get("labels") or {}, tools=r.get("tools") or [],
                 extra=r["extra"] if isinstance(r.get("extra"), dict) else None)
        md.pending_acks = set(md.participant_ids) - {md.creator_id}
        return md

    def summary(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "kind": self.kind, "name": self.name, "state": self.state.value,
                "close_reason": self.close_reason}


def iso_z(t: Any) -> Any:
    """Epoch seconds as ISO-8601 UTC text ending in `Z` (milliseconds); None and text as they are."""
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        import datetime

        return (datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"))
    return t


def adapter_capabilities(telemetry: Sequence[Any]) -> dict[str, Any]:
    """Each agent's last handshake as `{agent: {raw, effective, behavior?, error?}}`, from the
    `handshake` telemetry records stored beside the session."""
    out: dict[str, Any] = {}
    for t in telemetry:
        if isinstance(t, dict) and t.get("event") == "handshake":
            out[str(t.get("agent_id"))] = {k: t[k] for k in ("raw", "effective", "behavior", "error") if k in t}
    return out


@dataclass(frozen=True)
class SessionRecord:
    """What `await hub.get_session(id)` returns: the session as users see it. Times are ISO-8601
    UTC text ending in `Z` (the hub keeps epoch seconds in `SessionMetadata`, and so do the stores:
    TTL, the sweeper and the batch summaries compute with them); `participants` is the roster now
    (after any `participant.added` / `.removed`); `adapter_capabilities` is each agent's handshake.
    `to_dict()` gives it as JSON values."""

    session_id: str
    name: str
    kind: str
    manifest: SessionManifest
    creator_id: str
    participants: tuple[Participant, ...]
    knobs: Any
    labels: dict[str, Any]
    state: SessionState
    close_reason: str
    created_at: str
    expires_at: Optional[str]
    closed_at: Optional[str]
    ttl_seconds: Optional[float]
    turn_count: int
    expected_next: Optional[str]
    adapter_capabilities: dict[str, Any]
    pending_acks: tuple[str, ...] = ()  # the invited participants that have not acked yet, sorted

    @classmethod
    def of(cls, md: SessionMetadata, info: dict[str, Any], capabilities: dict[str, Any]) -> "SessionRecord":
        return cls(md.session_id, md.name, md.kind, md.manifest, md.creator_id, tuple(md.participants), md.knobs,
                   dict(md.labels) if isinstance(md.labels, dict) else {}, md.state, md.close_reason,
                   iso_z(md.created_at), iso_z(md.expires_at), iso_z(md.closed_at), md.ttl_seconds,
                   info["turn_count"], info["expected_next"], capabilities, tuple(sorted(md.pending_acks)))

    @property
    def participant_ids(self) -> list[str]:
        """The participants' ids in their order (sorted once per participants tuple: sessions share theirs)."""
        return _ids_of(self.participants)

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "name": self.name, "kind": self.kind,
                "manifest": self.manifest.to_dict(), "creator_id": self.creator_id,
                "participants": [{"agent_id": p.agent_id, "role": p.role, "order": p.order,
                                  "description": p.description, "tools": list(p.tools)} for p in self.participants],
                "knobs": self.knobs, "labels": self.labels, "state": self.state.value,
                "close_reason": self.close_reason or None, "created_at": self.created_at,
                "expires_at": self.expires_at, "closed_at": self.closed_at, "ttl_seconds": self.ttl_seconds,
                "turn_count": self.turn_count, "expected_next": self.expected_next,
                "adapter_capabilities": self.adapter_capabilities, "pending_acks": list(self.pending_acks)}
