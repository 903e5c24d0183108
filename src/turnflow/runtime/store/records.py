"""The log's records as every engine stores them: the row types a group commit carries
(`CommitUnits`), their encoders (`session_row`, `envelope_row`, `telemetry_row`: the same JSON
text and CRC-32 on SQLite and PostgreSQL) and decoders (`decode_session`, `decode_envelope`: a
record that fails its checksum, does not decode or is out of place is a `Corrupt`, never raised).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Union

from turnflow.runtime.envelope import Envelope
from turnflow.runtime.session import Expectation, Participant, SessionManifest, SessionMetadata, check_session_id


@dataclass(frozen=True)
class Corrupt:
    """A record that failed its checksum, did not decode, or broke the sequence."""

    session_id: str
    seq: int
    detail: str

    def __str__(self) -> str:
        return f"corrupt record: session {self.session_id} seq {self.seq}: {self.detail}"


SessionRow = tuple[str, Optional[str], str, int]  # (session_id, task_id or None, record JSON, crc)
EnvelopeRow = tuple[int, str, int, str, str, int]  # (gseq, session_id, seq, event_type, record JSON, crc)
TelemetryRow = tuple[str, str]  # (session_id, record JSON)
EndRow = tuple[str, str, int]  # (session_id, end record JSON, crc)
Refusals = dict[str, BaseException]  # session_id -> why none of that session's part of a group was written


class CommitUnits:
    """The rows of one group commit, in log order: new sessions' creation records (each written
    before its envelopes) and envelope rows, with the envelopes they encode (a store may keep them
    as its copy of a session's log once committed); and telemetry records, stored beside the log
    (not part of it: a session's telemetry is never refused for its envelopes' sake)."""

    __slots__ = ("sessions", "rows", "envelopes", "telemetry", "ends")

    def __init__(self) -> None:
        self.sessions: list[SessionRow] = []
        self.rows: list[EnvelopeRow] = []
        self.envelopes: list[Envelope] = []  # parallel to `rows`
        self.telemetry: list[TelemetryRow] = []
        # end records of sessions that ended (`end_row`), stored beside the log like telemetry
        # (what listing an ended channel reads instead of its log); one already stored is replaced
        self.ends: list[EndRow] = []


@dataclass(frozen=True)
class SessionEnds:
    """How many sessions' logs end alike: `ended_by`, the event type of the session's first
    `session.closed` or `session.expired` envelope (None: neither is logged), its `reason` ("" when
    it gave none; None when not ended), and whether `session.opened` is logged."""

    ended_by: Optional[str]
    reason: Optional[str]
    opened: bool
    sessions: int


@dataclass(frozen=True)
class LogSummary:
    """A whole store aggregated inside the database (`Store.summary()`, one pass over the log):
    what `turnflow inspect --summary` reports."""

    engine: str  # the store's dialect name, shown to users
    envelopes: int
    ends: list[SessionEnds]  # every session in exactly one
    turns: list[tuple[int, int]]  # (substantive envelopes, sessions with that many), ascending
    tasks: Optional[dict[str, int]]  # tasks per state of the task list (`run --tasks`); None: no task list


def checksum(session_id: str, seq: int, text: str) -> int:
    """The CRC-32 stored beside a record: over its session id, its seq (0: the creation record) and its text."""
    return zlib.crc32(f"{session_id}\x00{seq}\x00{text}".encode("utf-8", "surrogateescape"))


def _c_encoder(sort_keys: bool, reference: Callable[[Any], str]) -> Optional[Callable[[Any, int], Iterable[str]]]:
    """The C JSON encoder `reference` (`json.dumps` with compact separators, keys sorted or not)
    builds on each call, built once (the same text; half the cost per envelope), or None where it
    does not write `reference`'s text. It keeps no markers: circular data raises RecursionError
    (see `_compact`)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C encoder
        return None
    try:
        enc: Callable[[Any, int], Iterable[str]] = make(None, json.JSONEncoder().default, _ESCAPE, None, ":", ",",
                                                        sort_keys, False, True)
    except TypeError:  # pragma: no cover - a Python whose C encoder takes other arguments
        return None
    sample = {"b": [1, 2.5, None, True, "\u00e9", {"z": 1, "a": float("nan")}], "a": {"c": float("inf")}}
    if "".join(enc(sample, 0)) != reference(sample):  # pragma: no cover
        return None
    return enc


def _compact(x: Any, enc: Optional[Callable[[Any, int], Iterable[str]]], reference: Callable[[Any], str]) -> str:
    """`reference(x)` (the same text and errors) through the prebuilt encoder `enc`."""
    if enc is not None:
        try:
            return "".join(enc(x, 0))
        except RecursionError:  # circular (the cached encoder keeps no markers) or too deep: ask json
            pass
    return reference(x)


_ESCAPE = json.encoder.encode_basestring_ascii


def json_text(text: str) -> str:
    """A string as every record writes it (a JSON string, ASCII with escapes)."""
    return _ESCAPE(text)
# `json.dumps(x, separators=(",", ":"))` and `json.dumps(x, sort_keys=True, separators=(",", ":"))`, their
# encoders built once (`json.dumps` builds one per call when given any argument: the same text and errors)
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode
_SORTED_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_ENCODE = _c_encoder(False, _COMPACT)
_ENCODE_SORTED = _c_encoder(True, _SORTED_COMPACT)


def _record_text(record: Any) -> str:
    """The stored JSON text of one envelope record, or of one of its values (byte-identical to
    `json.dumps` with compact separators). Data that is not JSON raises TypeError/ValueError
    exactly as `json.dumps` does."""
    return _compact(record, _ENCODE, _COMPACT)


_ENVELOPE_FIELDS: dict[str, Any] = {"session_id": str, "sender_id": str, "event_type": str, "event_data": dict,
                    "envelope_id": str, "created_at": (int, float), "seq": int}


def _shape_problem(rec: Any) -> str:
    """Why an envelope record (checksum fine) cannot be an envelope, or ""."""
    if not isinstance(rec, dict):
        return "not an object"
    for key, kind in _ENVELOPE_FIELDS.items():
        if not isinstance(rec.get(key), kind) or isinstance(rec.get(key), bool):
            return f"`{key}` is missing or has the wrong type"
    audience = rec.get("audience")
    if audience is not None and not (isinstance(audience, list) and all(isinstance(a, str) for a in audience)):
        return "`audience` is not null or a list of agent ids"
    for key in ("causation_id", "trace_id"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return f"`{key}` has the wrong type"
    return ""


# `json.dumps(x, sort_keys=True)`, its encoder built once (as `_SORTED_COMPACT`'s)
_SORTED = json.JSONEncoder(sort_keys=True).encode


def session_row(record: dict[str, Any]) -> SessionRow:
    """A new session's creation record as stored (every engine): its id, the batch task it belongs
    to (`labels.task_id`, or None), its JSON text (sorted keys) and checksum."""
    sid = check_session_id(record["session_id"])
    text = _SORTED_COMPACT(record)
    labels = record.get("labels") or {}
    task_id = labels.get("task_id") if isinstance(labels, dict) else None
    return (sid, None if task_id is None else str(task_id), text, checksum(sid, 0, text))


def _sorted_value(x: Any) -> str:
    """`_SORTED_COMPACT(x)` (the same text, the same errors), cheaper for the scalars of a record."""
    t = type(x)
    if t is str:
        return _ESCAPE(x)
    if x is None:
        return "null"
    if t is int:
        return int.__repr__(x)
    if t is float and x - x == 0.0:  # finite (json writes the others NaN, Infinity, -Infinity)
        return float.__repr__(x)
    return _compact(x, _ENCODE_SORTED, _SORTED_COMPACT)


# The parts of a creation record that sessions share, as text: a participants tuple, an expectations
# tuple, a manifest (all but its `knobs_schema`, a dict, encoded each time). Each is kept with the object
# it was made from (the id is not reused while it is known) and only for values that cannot change:
# frozen dataclasses holding exactly str / int / float / tuple values.
_SHARED_TEXT: dict[int, tuple[Any, Any]] = {}
_SHARED_TEXT_LIMIT = 1024


def _keep(obj: Any, text: Any) -> Any:
    if len(_SHARED_TEXT) >= _SHARED_TEXT_LIMIT:
        _SHARED_TEXT.clear()
    _SHARED_TEXT[id(obj)] = (obj, text)
    return text


def _fixed_expectations(exps: Any) -> bool:
    return type(exps) is tuple and all(type(e) is Expectation and type(e.name) is str and type(e.on_violation) is str
                                       and type(e.seconds) in (float, int) for e in exps)


def _expectations_text(exps: Any) -> str:
    known = _SHARED_TEXT.get(id(exps))
    if known is not None and known[0] is exps:
        return str(known[1])
    text = _sorted_value([e.to_dict() for e in exps])
    return str(_keep(exps, text)) if _fixed_expectations(exps) else text


def _participants_text(parts: Any) -> str:
    known = _SHARED_TEXT.get(id(parts))
    if known is not None and known[0] is parts:
        return str(known[1])
    text = _sorted_value([{"agent_id": p.agent_id, "role": p.role, "order": p.order, "description": p.description,
                           "tools": list(p.tools)} for p in parts])
    fixed = type(parts) is tuple and all(
        type(p) is Participant and type(p.agent_id) is str and type(p.role) is str and type(p.order) is int
        and type(p.description) is str and type(p.tools) is tuple and all(type(t) is str for t in p.tools)
        for p in parts)
    return str(_keep(parts, text)) if fixed else text


def _manifest_text(m: Any) -> str:
    """`_SORTED_COMPACT(m.to_dict())`: its keys in order are default_expectations, default_view,
    knobs_schema, participants, type, version."""
    known = _SHARED_TEXT.get(id(m))
    if known is not None and known[0] is m:
        head, tail = known[1]
    elif type(m) is not SessionManifest:  # (its own `to_dict`, maybe)
        return _sorted_value(m.to_dict())
    else:
        head = (f'{{"default_expectations":{_sorted_value([e.to_dict() for e in m.default_expectations])},'
                f'"default_view":{_sorted_value(m.default_view)},"knobs_schema":')
        tail = (f',"participants":{_sorted_value({"min": m.min_participants, "max": m.max_participants, "roles": list(m.roles)})},'
                f'"type":{_sorted_value(m.type)},"version":{_sorted_value(m.version)}}}')
        if (type(m.type) is str and type(m.version) is int
                and type(m.min_participants) is int and type(m.max_participants) in (int, type(None))
                and type(m.roles) is tuple and all(type(r) is str for r in m.roles) and type(m.default_view) is str
                and _fixed_expectations(m.default_expectations)):
            _keep(m, (head, tail))
    return f"{head}{_sorted_value(m.knobs_schema)}{tail}"


def session_row_of(md: SessionMetadata) -> SessionRow:
    """`session_row(md.creation_record())`, the same row, its text built from the parts sessions share
    (the manifest, participants and expectations of a kind are encoded once, not per session)."""
    if type(md) is not SessionMetadata:  # (its own `creation_record`, maybe)
        return session_row(md.creation_record())
    sid = check_session_id(md.session_id)
    extra = md.extra
    text = "".join((
        '{"created_at":', _sorted_value(md.created_at), ',"creator_id":', _sorted_value(md.creator_id),
        ',"expectations":', _expectations_text(md.expectations),
        "" if extra is None else ',"extra":', "" if extra is None else _sorted_value(extra),
        ',"knobs":', _sorted_value(md.knobs), ',"labels":', _sorted_value(md.labels),
        ',"manifest":', _manifest_text(md.manifest), ',"name":', _sorted_value(md.name),
        ',"participants":', _participants_text(md.participants), ',"session_id":', _ESCAPE(sid),
        ',"tools":', _sorted_value(list(md.tools)), ',"ttl_seconds":', _sorted_value(md.ttl_seconds), "}"))
    labels = md.labels or {}
    task_id = labels.get("task_id") if isinstance(labels, dict) else None
    return (sid, None if task_id is None else str(task_id), text, checksum(sid, 0, text))


def _envelope_text(env: Envelope) -> str:
    """`_record_text(env.to_record())`, the same text: the fields a stamped envelope always has in
    their usual types written directly, the others (audience, data, extra) by the encoder."""
    sid, sender, et, eid, at, seq = env.session_id, env.sender_id, env.event_type, env.envelope_id, env.created_at, env.seq
    if type(at) is float and at - at == 0.0:  # finite: json writes float.__repr__
        at_text = float.__repr__(at)
    elif type(at) is int:
        at_text = int.__repr__(at)
    else:
        return _record_text(env.to_record())
    if type(sid) is not str or type(sender) is not str or type(et) is not str or type(eid) is not str \
            or type(seq) is not int:
        return _record_text(env.to_record())
    audience, cause, trace, extra = env.audience, env.causation_id, env.trace_id, env.extra
    return "".join((
        '{"session_id":', _ESCAPE(sid), ',"sender_id":', _ESCAPE(sender),
        ',"audience":', "null" if audience is None else _record_text(audience), ',"event_type":', _ESCAPE(et),
        ',"event_data":', _record_text(env.event_data), ',"envelope_id":', _ESCAPE(eid), ',"created_at":', at_text,
        ',"seq":', int.__repr__(seq), ',"causation_id":', "null" if cause is None else _record_text(cause),
        ',"trace_id":', "null" if trace is None else _record_text(trace),
        "}" if extra is None else ',"extra":', "" if extra is None else _record_text(extra), "" if extra is None else "}"))


def envelope_row(envelope: Envelope, global_seq: int) -> EnvelopeRow:
    """A stamped envelope as stored (every engine). Raises TypeError/ValueError, as `json.dumps`
    does, when its data is not JSON."""
    text = _envelope_text(envelope)
    sid, seq = envelope.session_id, envelope.seq
    return (global_seq, sid, seq, envelope.event_type, text, zlib.crc32(f"{sid}\x00{seq}\x00{text}".encode("utf-8")))


def telemetry_row(session_id: str, record: dict[str, Any]) -> TelemetryRow:
    """A telemetry record as stored (every engine): its session and its JSON text (sorted keys).
    Raises TypeError/ValueError, as `json.dumps` does, when it is not JSON."""
    return (check_session_id(session_id), _SORTED(record))


def end_row(session_id: str, record: str) -> EndRow:
    """An ended session's end record (hub/hydrate.py `end_record`) as a row: (session id, record,
    checksum over the id, seq -1 and the record)."""
    return session_id, record, checksum(session_id, -1, record)


def decode_session(sid: str, text: Any, crc: int) -> Union[dict[str, Any], Corrupt]:
    """A stored session record (checksum, JSON, shape), or what is wrong with it; every engine uses this."""
    if not isinstance(text, str) or checksum(sid, 0, text) != crc:
        return Corrupt(sid, 0, "session record checksum mismatch")
    try:
        rec = json.loads(text)
    except ValueError as exc:
        return Corrupt(sid, 0, f"session record does not decode: {exc}")
    if not isinstance(rec, dict) or rec.get("session_id") != sid:
        return Corrupt(sid, 0, "session record has the wrong shape")
    return rec


def decode_envelope(sid: str, seq: int, text: Any, crc: int) -> Union[Envelope, Corrupt]:
    """A stored envelope record at (sid, seq) (checksum, JSON, shape, position), or what is wrong
    with it; every engine uses this."""
    if not isinstance(text, str) or checksum(sid, seq, text) != crc:
        return Corrupt(sid, seq, "checksum mismatch")
    try:
        rec = json.loads(text)
        shape = _shape_problem(rec)
        if shape:
            return Corrupt(sid, seq, f"record has the wrong shape: {shape}")
        env = Envelope.from_record(rec)
    except (ValueError, KeyError, TypeError) as exc:
        return Corrupt(sid, seq, f"record does not decode: {exc}")
    if env.session_id != sid or env.seq != seq:
        return Corrupt(sid, seq, "record does not match its position")
    return env
