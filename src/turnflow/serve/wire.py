"""turnflow's sessions and envelopes in AG2 1.2.1's wire shapes, and back.

A turnflow session is an AG2 channel (`channel_id` = session id); envelope ids, sequence and
content are turnflow's (ids are zero-padded global sequence numbers, so they sort as AG2's do).
Event types are renamed (`text` ↔ `ag2.msg.text`, `session.invite` ↔ `ag2.channel.invite`, ...);
hub-written lifecycle envelopes are shown as AG2's hub writes them (sent by the creator, addressed
to every participant, `event_data` carrying `channel_id`). AG2's task fields of an envelope
(`task_id`, `priority`, `depth`, `idempotency_key`, `ttl_seconds`) are kept in `Envelope.extra` when
a client set one, and read back as AG2's defaults otherwise; a channel's `required_acks` likewise
in `SessionMetadata.extra`."""

from __future__ import annotations

import math
import operator
from datetime import datetime, timezone
from typing import Any, Optional, Sequence

from turnflow.runtime.envelope import (EV_CONTEXT_SET, EV_EXPECTATION_VIOLATED, EV_PACKET, EV_SESSION_ACK,
                                       EV_SESSION_CLOSED, EV_SESSION_EXPIRED, EV_SESSION_INVITE, EV_SESSION_OPENED,
                                       EV_SESSION_REJECT, EV_TELEMETRY, EV_TEXT, Envelope)
from turnflow.runtime.session import SessionMetadata, SessionState
from turnflow.serve import frames

AG2_TEXT = "ag2.msg.text"
AG2_PACKET = "ag2.packet"
AG2_CONTEXT_SET = "ag2.context.set"
AG2_INVITE = "ag2.channel.invite"
AG2_ACK = "ag2.channel.invite.ack"
AG2_REJECT = "ag2.channel.invite.reject"
AG2_OPENED = "ag2.channel.opened"
AG2_CLOSED = "ag2.channel.closed"
AG2_EXPIRED = "ag2.channel.expired"
AG2_VIOLATED = "ag2.expectation.violated"

TO_AG2 = {EV_TEXT: AG2_TEXT, EV_PACKET: AG2_PACKET, EV_CONTEXT_SET: AG2_CONTEXT_SET, EV_SESSION_INVITE: AG2_INVITE,
          EV_SESSION_ACK: AG2_ACK, EV_SESSION_REJECT: AG2_REJECT, EV_SESSION_OPENED: AG2_OPENED,
          EV_SESSION_CLOSED: AG2_CLOSED, EV_SESSION_EXPIRED: AG2_EXPIRED, EV_EXPECTATION_VIOLATED: AG2_VIOLATED}
FROM_AG2 = {v: k for k, v in TO_AG2.items()}
# outside a workflow, AG2's adapters take a round from a text only: a packet or a context set is
# information (accepted from any participant at any time, folded into nothing), kept under its AG2 name
_INFORMATIONAL = frozenset({AG2_PACKET, AG2_CONTEXT_SET})


def from_ag2_event(event_type: str, kind: str) -> str:
    """The turnflow event type of an AG2 event type posted to a session of `kind`: AG2's names of
    turnflow's events renamed, except a packet or context set outside a workflow, which stays an
    event of its AG2 name that the session's adapter accepts and does not fold, as AG2's does."""
    if event_type in _INFORMATIONAL and kind != "workflow":
        return event_type
    return FROM_AG2.get(event_type, event_type)


# turnflow's own names: a client posting one of them would alias an AG2 type, so they are refused
NATIVE = frozenset(TO_AG2) | {EV_TELEMETRY}
_TO_ALL = frozenset({EV_SESSION_OPENED, EV_SESSION_CLOSED, EV_SESSION_EXPIRED})  # addressed to every participant
# the event types whose AG2 record is not the envelope's own fields (sender, audience or data as AG2's hub shows them)
_SHOWN = _TO_ALL | {EV_SESSION_INVITE, EV_SESSION_ACK, EV_SESSION_REJECT}
TASK_DEFAULTS: dict[str, Any] = {"task_id": None, "priority": "normal", "depth": 0, "idempotency_key": None,
                                 "ttl_seconds": None}  # AG2's `Envelope` defaults
_STATE = {"invited": "pending"}  # turnflow state -> AG2 ChannelState (the others have the same names)
_STATE_JSON = {state: frames.dumps(_STATE.get(state.value, state.value)) for state in SessionState}


# whole second -> its text up to the seconds, for the last few seconds `iso` formatted (a channel
# record formats its creation and its expiry, hours apart, between envelopes of this second)
_seconds: dict[float, str] = {}
_SECONDS_KEPT = 64


def iso(t: Optional[float]) -> Optional[str]:
    """`datetime.fromtimestamp(t, timezone.utc).isoformat()`, the date and time of day formatted
    once per second: the microseconds are rounded as `fromtimestamp` rounds them (half to even of
    the fraction's millionths, a carry into the next second), the rest is the kept prefix."""
    if t is None:
        return None
    frac, whole = math.modf(t)
    if frac < 0 or not math.isfinite(t):  # (before 1970, or not a time: as datetime has it)
        return datetime.fromtimestamp(t, timezone.utc).isoformat()
    us = round(frac * 1e6)
    if us >= 1000000:
        whole += 1.0
        us -= 1000000
    prefix = _seconds.get(whole)
    if prefix is None:
        if len(_seconds) >= _SECONDS_KEPT:
            _seconds.clear()
        prefix = _seconds[whole] = datetime.fromtimestamp(whole, timezone.utc).isoformat()[:19]
    return f"{prefix}.{us:06d}+00:00" if us else prefix + "+00:00"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _shown(env: Envelope, md: SessionMetadata) -> tuple[str, Optional[list[str]], dict[str, Any]]:
    """A lifecycle envelope's sender, audience and data as AG2's shape shows them (an envelope
    whose type is in `_SHOWN`)."""
    et = env.event_type
    if et in _TO_ALL:
        return md.creator_id, md.participant_ids, {**env.event_data, "channel_id": md.session_id}
    if et == EV_SESSION_INVITE:
        return env.sender_id, env.audience, {
            "channel_id": md.session_id, "manifest_type": md.manifest.type, "manifest_version": md.manifest.version,
            "creator_id": md.creator_id, "knobs": md.knobs, "labels": md.labels}
    return env.sender_id, None, {**env.event_data, "channel_id": md.session_id}  # (an ack or a reject)


def envelope_to_ag2(env: Envelope, md: SessionMetadata) -> dict[str, Any]:
    et = env.event_type
    data: dict[str, Any] = env.event_data
    sender, audience = env.sender_id, env.audience
    if et in _SHOWN:
        sender, audience, data = _shown(env, md)
    task = env.extra or TASK_DEFAULTS
    return {"channel_id": env.session_id, "sender_id": sender, "audience": audience,
            "event_type": TO_AG2.get(et, et), "event_data": data, "envelope_id": env.envelope_id,
            "task_id": task.get("task_id"), "causation_id": env.causation_id, "trace_id": env.trace_id,
            "priority": task.get("priority", "normal"), "depth": task.get("depth", 0),
            "idempotency_key": task.get("idempotency_key"), "created_at": iso(env.created_at) or "",
            "ttl_seconds": task.get("ttl_seconds")}


# the values of `envelope_to_ag2`'s record other than `audience` and `event_data`: strings, integers
# and None as the hub writes them (an envelope an earlier version stored may hold other values)
_SCALARS = operator.itemgetter("channel_id", "sender_id", "event_type", "envelope_id", "task_id", "causation_id",
                               "trace_id", "priority", "depth", "idempotency_key", "created_at", "ttl_seconds")


def envelope_json(env: Envelope, md: SessionMetadata) -> str:
    """`envelope_to_ag2` as JSON (`frames.encode`'s text): the record's own keys are strings, so
    only its values are checked for `frames._plain`, and only `audience` and `event_data` walked.
    (An envelope without task fields, nearly every one, is written from its fields directly: the
    record `envelope_to_ag2` gives, its task fields AG2's defaults; plain unless an earlier
    version stored an id that is not a string.)"""
    if env.extra is not None:
        rec = envelope_to_ag2(env, md)
        plain = (set(map(type, _SCALARS(rec))) <= frames.PLAIN_SCALARS and frames.plain(rec["audience"])
                 and frames.plain(rec["event_data"]))
        return frames.encode_plain(rec, f"envelope {env.envelope_id}", plain)
    et = env.event_type
    data: dict[str, Any] = env.event_data
    sender, audience = env.sender_id, env.audience
    if et in _SHOWN:  # (as `envelope_to_ag2`)
        sender, audience, data = _shown(env, md)
    sid, eid, cause, trace = env.session_id, env.envelope_id, env.causation_id, env.trace_id
    shown = TO_AG2.get(et, et)
    rec = {"channel_id": sid, "sender_id": sender, "audience": audience, "event_type": shown, "event_data": data,
           "envelope_id": eid, "task_id": None, "causation_id": cause, "trace_id": trace, "priority": "normal",
           "depth": 0, "idempotency_key": None, "created_at": iso(env.created_at) or "", "ttl_seconds": None}
    return frames.encode_plain(rec, f"envelope {eid}", (
        type(sid) is str and type(sender) is str and type(shown) is str and type(eid) is str
        and (cause is None or type(cause) is str) and (trace is None or type(trace) is str)
        and frames.plain(audience) and frames.plain(data)))


def shown_sender(env: Envelope, md: SessionMetadata) -> str:
    """The sender of an envelope as AG2's shape shows it (lifecycle broadcasts: the creator)."""
    return md.creator_id if env.event_type in _TO_ALL else env.sender_id


def substantive(env: Envelope) -> bool:
    """Not a channel or task protocol event in AG2's naming (what AG2's inbox limits count)."""
    return not TO_AG2.get(env.event_type, env.event_type).startswith(("ag2.channel.", "ag2.task."))


def recipients(env: Envelope, md: SessionMetadata) -> list[str]:
    """Who is notified of an envelope, as AG2's hub dispatches: lifecycle broadcasts reach every
    participant, a broadcast (no audience) every participant but its sender, else its audience.
    Acks and rejects are absorbed by the hub; telemetry is never sent."""
    et = env.event_type
    if et in _TO_ALL:
        return md.participant_ids
    if et in (EV_SESSION_ACK, EV_SESSION_REJECT, EV_TELEMETRY):
        return []
    if env.audience is None:
        return [p for p in md.participant_ids if p != env.sender_id]
    return list(env.audience)


def manifest_to_ag2(md: SessionMetadata) -> dict[str, Any]:
    """A session's manifest in its AG2 channel record (its kind's manifest with the session's expectations)."""
    return _manifest(md)


# AG2 1.2.1's built-in adapters' manifests (`ag2/network/adapters/*.py`): participants' schema, knobs
# schema and view policy name, as AG2's hub returns them in a channel record; turnflow's own adapters
# name these differently (their roles, `ordering: round_robin`, `windowed_summary:10`).
_TWO: dict[str, Any] = {"min": 2, "max": 2, "roles": ["initiator", "respondent"]}
_MANY: dict[str, Any] = {"min": 2, "max": None, "roles": []}
_AG2_MANIFESTS: dict[str, tuple[dict[str, Any], dict[str, str], str]] = {
    "consulting": (_TWO, {}, "full_transcript"),
    "conversation": (_TWO, {}, "windowed_summary"),
    "discussion": (_MANY, {"ordering": "str"}, "named_windowed_summary"),
    "workflow": (_MANY, {"graph": "TransitionGraph"}, "named_windowed_summary"),
}


def _manifest(md: SessionMetadata) -> dict[str, Any]:
    m = md.manifest
    ag2 = _AG2_MANIFESTS.get(m.type) if m.version == 1 else None
    if ag2 is not None:
        schema, knobs_schema, view = ag2
        participants: dict[str, Any] = {**schema, "roles": list(schema["roles"])}
    else:
        participants = {"min": m.min_participants, "max": m.max_participants, "roles": list(m.roles)}
        knobs_schema, view = m.knobs_schema, m.default_view
    return {"type": m.type, "version": m.version, "participants": participants,
            "knobs_schema": dict(knobs_schema), "default_view_policy": view,
            "expectations": [{"name": e.name, "on_violation": e.on_violation, "params": e.to_dict()["params"],
                              "applies_to": None} for e in md.expectations]}


def state_json(state: SessionState) -> str:
    """A channel record's `state` as JSON text (AG2's ChannelState)."""
    return _STATE_JSON[state]


def channel_to_ag2(md: SessionMetadata, rejected_by: Sequence[str] = ()) -> dict[str, Any]:
    return {"channel_id": md.session_id, "manifest": _manifest(md), **channel_rest(md, rejected_by)}


def channel_rest(md: SessionMetadata, rejected_by: Sequence[str] = ()) -> dict[str, Any]:
    """The fields of a session's AG2 channel record after `manifest`, in order; `rejected_by`: the
    invitees whose reject closed it (read from its log), no longer among its `pending_acks`."""
    created = iso(md.created_at) or ""
    return {"creator_id": md.creator_id,
            "participants": [{"agent_id": p.agent_id, "role": p.role, "order": p.order, "joined_at": created}
                             for p in sorted(md.participants, key=lambda p: p.order)],
            "state": _STATE.get(md.state.value, md.state.value), "created_at": created,
            "expires_at": iso(md.expires_at), "closed_at": iso(md.closed_at), "close_reason": md.close_reason,
            "parent_channel_id": None, "knobs": dict(md.knobs), "labels": dict(md.labels),
            "required_acks": (md.extra or {}).get("required_acks"),
            "pending_acks": sorted(md.pending_acks.difference(rejected_by)), "rejected_by": list(rejected_by)}
