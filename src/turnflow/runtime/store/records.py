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
from turnflow.runtime.session import check_session_id


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
Refusals = dict[str, BaseException]  # session_id -> why none of that session's part of a group was written


class CommitUnits:
    """The rows of one group commit, in log order: new sessions' creation records (each written
    before its envelopes) and envelope rows, with the envelopes they encode (a store may keep them
    as its copy of a session's log once committed); and telemetry records, stored beside the log
    (not part of it: a session's telemetry is never refused for its envelopes' sake)."""

    __slots__ = ("sessions", "rows", "envelopes", "telemetry")

    def __init__(self) -> None:
        self.sessions: list[SessionRow] = []
        self.rows: list[EnvelopeRow] = []
        self.envelopes: list[Envelope] = []  # parallel to `rows`
        self.telemetry: list[TelemetryRow] = []


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


def _compact_encoder() -> Optional[Callable[[Any, int], Iterable[str]]]:
    """`json.dumps(x, separators=(",", ":"))`, with the encoder built once instead of per call
    (the same text; half the cost per envelope). Circular data: see `_record_text`."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C encoder
        return None
    try:
        enc: Callable[[Any, int], Iterable[str]] = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ":", ",",
                   False, False, True)
    except TypeError:  # pragma: no cover - a Python whose C encoder takes other arguments
        return None
    sample = {"a": [1, 2.5, None, True, "\u00e9"], "b": {"c": float("inf")}}
    if "".join(enc(sample, 0)) != json.dumps(sample, separators=(",", ":")):  # pragma: no cover
        return None
    return enc


_ENCODE = _compact_encoder()


def _record_text(record: dict[str, Any]) -> str:
    """The stored JSON text of one envelope record (byte-identical to `json.dumps` with compact
    separators). Data that is not JSON raises TypeError/ValueError exactly as `json.dumps` does."""
    if _ENCODE is not None:
        try:
            return "".join(_ENCODE(record, 0))
        except RecursionError:  # circular (the cached encoder keeps no markers) or too deep: ask json
            pass
    return json.dumps(record, separators=(",", ":"))


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


# `json.dumps(x, sort_keys=True, separators=(",", ":"))` and `json.dumps(x, sort_keys=True)`, their encoders
# built once (`json.dumps` builds one per call when given any argument: the same text)
_SORTED_COMPACT = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
_SORTED = json.JSONEncoder(sort_keys=True).encode


def session_row(record: dict[str, Any]) -> SessionRow:
    """A new session's creation record as stored (every engine): its id, the batch task it belongs
    to (`labels.task_id`, or None), its JSON text (sorted keys) and checksum."""
    sid = check_session_id(record["session_id"])
    text = _SORTED_COMPACT(record)
    labels = record.get("labels") or {}
    task_id = labels.get("task_id") if isinstance(labels, dict) else None
    return (sid, None if task_id is None else str(task_id), text, checksum(sid, 0, text))


def envelope_row(envelope: Envelope, global_seq: int) -> EnvelopeRow:
    """A stamped envelope as stored (every engine). Raises TypeError/ValueError, as `json.dumps`
    does, when its data is not JSON."""
    text = _record_text(envelope.to_record())
    sid, seq = envelope.session_id, envelope.seq
    return (global_seq, sid, seq, envelope.event_type, text, zlib.crc32(f"{sid}\x00{seq}\x00{text}".encode("utf-8")))


def telemetry_row(session_id: str, record: dict[str, Any]) -> TelemetryRow:
    """A telemetry record as stored (every engine): its session and its JSON text (sorted keys).
    Raises TypeError/ValueError, as `json.dumps` does, when it is not JSON."""
    return (check_session_id(session_id), _SORTED(record))


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
