"""Envelopes and the documented event-type constants (docs/runtime.md, "Event types").

Payload shapes:
- `EV_TEXT`: `{"text": str}`
- `EV_PACKET` (one agent round): `{"routing": {"kind": "text"|"handoff"|"finish", "tool"?, "reason"?,
  "target"?}, "context_updates": {"set": {...}, "delete": [...]}, "body": str}`
- `EV_CONTEXT_SET`: `{"set": {...}, "delete": [...]}`
- `EV_SESSION_INVITE` / `ACK` / `REJECT` / `OPENED`: `{}` or `{"reason"}`
- `EV_SESSION_CLOSED` / `EV_SESSION_EXPIRED`: `{"reason": str}`
- `EV_EXPECTATION_VIOLATED`: `{"name", "action", "agent_id", "seconds", "key"}`
- `EV_TELEMETRY`: `{"event", "payload", "reason", "step"}`
- `EV_PARTICIPANT_ADDED`: `{"agent_id", "role", "description"}`; `EV_PARTICIPANT_REMOVED`: `{"agent_id"}` —
  a participant changed the roster of a running conversation or discussion (posted like a round,
  validated and folded by the adapter; hydrate replays it, so the stored session record never changes)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

EV_TEXT = "text"
EV_PACKET = "packet"
EV_CONTEXT_SET = "context.set"
EV_SESSION_INVITE = "session.invite"
EV_SESSION_ACK = "session.ack"
EV_SESSION_REJECT = "session.reject"
EV_SESSION_OPENED = "session.opened"
EV_SESSION_CLOSED = "session.closed"
EV_SESSION_EXPIRED = "session.expired"
EV_EXPECTATION_VIOLATED = "expectation.violated"
EV_TELEMETRY = "telemetry"
EV_PARTICIPANT_ADDED = "participant.added"
EV_PARTICIPANT_REMOVED = "participant.removed"

SUBSTANTIVE = frozenset({EV_TEXT, EV_PACKET})
LIFECYCLE = frozenset({EV_SESSION_INVITE, EV_SESSION_ACK, EV_SESSION_REJECT, EV_SESSION_OPENED,
                       EV_SESSION_CLOSED, EV_SESSION_EXPIRED})
MEMBERSHIP = frozenset({EV_PARTICIPANT_ADDED, EV_PARTICIPANT_REMOVED})


@dataclass(slots=True)
class Envelope:
    """One entry of a session's log. `envelope_id`, `seq` and `created_at` are stamped by the hub."""

    session_id: str
    sender_id: str
    audience: Optional[list[str]]  # None = everyone
    event_type: str
    event_data: dict[str, Any] = field(default_factory=dict)
    envelope_id: str = ""
    created_at: float = 0.0
    seq: int = 0  # position in the session's log, 1-based
    causation_id: Optional[str] = None
    trace_id: Optional[str] = None
    # fields a client's wire envelope carried that the hub keeps and hands back without acting on
    # them (AG2's `task_id`, `priority`, `depth`, `idempotency_key`, `ttl_seconds`: docs/serve.md);
    # None for nearly every envelope, and then absent from the stored record
    extra: Optional[dict[str, Any]] = None

    def to_record(self) -> dict[str, Any]:
        rec = {"session_id": self.session_id, "sender_id": self.sender_id, "audience": self.audience,
               "event_type": self.event_type, "event_data": self.event_data,
               "envelope_id": self.envelope_id, "created_at": self.created_at, "seq": self.seq,
               "causation_id": self.causation_id, "trace_id": self.trace_id}
        if self.extra is not None:
            rec["extra"] = self.extra
        return rec

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> "Envelope":
        extra = r.get("extra")
        return cls(r["session_id"], r["sender_id"], r["audience"], r["event_type"], r["event_data"],
                   r["envelope_id"], r["created_at"], r["seq"], r.get("causation_id"), r.get("trace_id"),
                   extra if isinstance(extra, dict) else None)

    def visible_to(self, agent_id: str) -> bool:
        """Its sender always sees it; others when the audience is None or names them (as AG2's)."""
        return self.audience is None or agent_id == self.sender_id or agent_id in self.audience


TELEMETRY_EVENTS = frozenset({"env_action", "tool_response", "progress", "error", "thought", "task", "tool_call",
                              "tool_result"})
_TELEMETRY_FIELDS = frozenset({"event", "payload", "reason", "step", "timestamp", "metadata"})


def telemetry_event_ok(event: Any) -> bool:
    """Whether an agent's telemetry event is one a hub stores (a known `event`, known fields only)."""
    return isinstance(event, dict) and event.get("event") in TELEMETRY_EVENTS and set(event) <= _TELEMETRY_FIELDS


def envelope_id_for(global_seq: int) -> str:
    """Hub-stamped ids: monotonic and sortable as strings (zero-padded)."""
    return f"{global_seq:016d}"


def packet(body: str = "", *, kind: str = "text", tool: Optional[str] = None, reason: Optional[str] = None,
           target: Optional[str] = None, set: Optional[dict[str, Any]] = None, delete: Optional[list[Any]] = None) -> dict[str, Any]:
    """Build EV_PACKET event data."""
    routing: dict[str, Any] = {"kind": kind}
    if tool is not None:
        routing["tool"] = tool
    if reason is not None:
        routing["reason"] = reason
    if target is not None:
        routing["target"] = target
    return {"routing": routing, "context_updates": {"set": dict(set or {}), "delete": list(delete or [])},
            "body": body}
