"""The shapes of AG2 1.2.1's identity records as its client sends them (`Passport`, `Resume`,
`Rule` of `ag2/network/identity.py` and `rule.py`), checked before anything is stored.

`normalise(SHAPE, value, what)` returns the record with every field AG2 defines, in AG2's order,
defaults filled in where it left one out (what AG2's hub hands back: `Rule.from_dict(d).to_dict()`).
A field AG2 does not define is refused, as AG2's hub refuses it (its `from_dict` raises); so is a
value of the wrong type (AG2's hub stores it, and the first client that reads it back may fail).
Strings are bounded where they are names (an agent's name, a glob of a rule); the rest is
bounded by the frame size.

`repair(SHAPE, value, what)` reads a record an earlier version stored unchecked: an unknown field
is dropped and a value of the wrong type replaced by AG2's default, each with a warning, so one
bad record cannot break every client's `list_agents()` / `get_agent()`."""

from __future__ import annotations

import json
import logging
import math
from typing import Any, Callable, Optional, Union

log = logging.getLogger("turnflow.serve")

MAX_NAME = 128  # an agent's name, a capability, a label key, a rule's glob, an event type
MAX_GLOBS = 64  # patterns in one `inbound_from` / `outbound_to` / channel-type list
MAX_LABELS = 64
PASSPORT_KINDS = ("agent", "human", "remote_agent")


class ShapeError(ValueError):
    """A record not of AG2's shape: the message says which field and why."""


Check = Callable[[Any], Optional[str]]  # None when the value fits, else what it should be


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str(limit: Optional[int] = None, optional: bool = False) -> Check:
    def check(v: Any) -> Optional[str]:
        if v is None and optional:
            return None
        if not isinstance(v, str):
            return "a string or null" if optional else "a string"
        if limit is not None and len(v) > limit:
            return f"at most {limit} characters"
        return None
    return check


def _int(optional: bool = False, minimum: Optional[int] = 0) -> Check:
    def check(v: Any) -> Optional[str]:
        if v is None and optional:
            return None
        if not _is_int(v):
            return "an integer or null" if optional else "an integer"
        if minimum is not None and v < minimum:
            return f"an integer of at least {minimum}"
        return None
    return check


def _number(v: Any) -> Optional[str]:
    if v is None or _is_int(v) or isinstance(v, float) and math.isfinite(v):
        return None
    return "a finite number or null"


def _strings(limit: Optional[int] = None, count: Optional[int] = None) -> Check:
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            return "a list of strings"
        if count is not None and len(v) > count:
            return f"at most {count} entries"
        if limit is not None and any(len(s) > limit for s in v):
            return f"a list of strings of at most {limit} characters"
        return None
    return check


def _object(v: Any) -> Optional[str]:
    return None if isinstance(v, dict) else "an object"


def _kind(v: Any) -> Optional[str]:
    return None if v is None or v in PASSPORT_KINDS else f"one of {', '.join(PASSPORT_KINDS)} or null"


def _duration(v: Any) -> Optional[str]:
    """AG2's `parse_duration`: seconds as an integer, or digits with a unit s/m/h/d ("" is none)."""
    if _is_int(v) and v >= 0:
        return None
    if isinstance(v, str) and (v == "" or v[:-1].isdigit() and v[-1] in "smhd" or v.isdigit()) and len(v) <= 12:
        return None
    return "seconds or a duration like \"30s\", \"15m\", \"2h\", \"1d\""


class Shape:
    """An AG2 record: field -> (check, default) in AG2's field order. A default that is a Shape
    is that record with its own defaults; a list or dict default is copied."""

    def __init__(self, name: str, fields: dict[str, tuple[Union[Check, "Shape", "ListOf", "MapOf"], Any]]) -> None:
        self.name = name
        self.fields = fields


class ListOf:
    def __init__(self, shape: Shape) -> None:
        self.shape = shape


class MapOf:
    def __init__(self, shape: Shape) -> None:
        self.shape = shape


_REQUIRED = object()

COST = Shape("cost", {"input_per_mtok": (_number, None), "output_per_mtok": (_number, None),
                      "latency_tier": (_str(MAX_NAME, optional=True), None)})
AUTH = Shape("auth", {"scheme": (_str(MAX_NAME), "none"), "issuer": (_str(1024, optional=True), None),
                      "audience": (_str(1024, optional=True), None),
                      "key_fingerprint": (_str(1024, optional=True), None), "claim": (_object, {})})
PASSPORT = Shape("passport", {
    "name": (_str(MAX_NAME), _REQUIRED), "owner": (_str(1024), ""), "provider": (_str(MAX_NAME, optional=True), None),
    "model": (_str(1024, optional=True), None), "cost": (COST, None), "region": (_str(MAX_NAME, optional=True), None),
    "auth": (AUTH, AUTH), "kind": (_kind, None), "hub_id": (_str(1024, optional=True), None),
    "version": (_int(minimum=None), 1), "agent_id": (_str(MAX_NAME, optional=True), None),
    "created_at": (_str(MAX_NAME), "")})
EXAMPLE = Shape("example", {
    "title": (_str(), _REQUIRED), "outcome": (_str(), ""), "task_id": (_str(optional=True), None),
    "channel_id": (_str(optional=True), None), "when": (_str(optional=True), None), "note": (_str(), "")})
OBSERVED = Shape("observed", {"n": (_int(), 0), "completed": (_int(), 0), "failed": (_int(), 0),
                              "expired": (_int(), 0), "p50_latency_ms": (_int(optional=True), None)})
RESUME = Shape("resume", {
    "claimed_capabilities": (_strings(MAX_NAME), []), "domains": (_strings(), []), "summary": (_str(), ""),
    "examples": (ListOf(EXAMPLE), []), "observed": (MapOf(OBSERVED), {}), "version": (_int(minimum=None), 1),
    "last_updated": (_str(MAX_NAME), "")})
CHANNEL_TYPES = Shape("channel_types", {"initiate": (_strings(MAX_NAME, MAX_GLOBS), ["*"]),
                                        "accept": (_strings(MAX_NAME, MAX_GLOBS), ["*"])})
ACCESS = Shape("access", {"inbound_from": (_strings(MAX_NAME, MAX_GLOBS), ["*"]),
                          "outbound_to": (_strings(MAX_NAME, MAX_GLOBS), ["*"]),
                          "channel_types": (CHANNEL_TYPES, CHANNEL_TYPES)})
RATE = Shape("rate", {"per_minute": (_int(), 0), "burst": (_int(), 0)})
INBOX = Shape("inbox", {"max_pending": (_int(), 1000), "overflow": (_str(MAX_NAME), "reject"),
                        "high_water": (_int(optional=True), None)})
LIMITS = Shape("limits", {
    "max_concurrent_channels": (_int(), 0), "max_concurrent_tasks": (_int(), 0),
    "channel_ttl_default": (_duration, "2h"), "task_ttl_default": (_duration, "15m"), "rate": (RATE, RATE),
    "delegation_depth": (_int(), 5), "inbox": (INBOX, INBOX)})
RULE = Shape("rule", {"version": (_int(minimum=None), 1), "access": (ACCESS, ACCESS), "limits": (LIMITS, LIMITS)})


def _default(default: Any) -> Any:
    if isinstance(default, Shape):
        return _fill(default, {}, default.name, None)
    if isinstance(default, (list, dict)):
        return type(default)(default)
    return default


def _fill(shape: Shape, value: Any, where: str, notes: Optional[list[str]]) -> dict[str, Any]:
    """`value` as `shape`; `notes` None: refuse what does not fit (ShapeError), else repair it
    and say what was repaired in `notes`."""
    if not isinstance(value, dict):
        if notes is None:
            raise ShapeError(f"{where} must be an object, got {type(value).__name__}")
        notes.append(f"{where} was not an object")
        value = {}
    for key in value:
        if key not in shape.fields:
            if notes is None:
                raise ShapeError(f"{where} has an unknown field {str(key)[:40]!r}")
            notes.append(f"unknown field {where}.{str(key)[:40]} dropped")
    out: dict[str, Any] = {}
    for key, (check, default) in shape.fields.items():
        path = f"{where}.{key}"
        if key not in value:
            if default is _REQUIRED:
                if notes is None:
                    raise ShapeError(f"{where} is missing {key!r}")
                raise _Unrepairable(f"{path} missing")
            out[key] = _default(default)
            continue
        out[key] = _field(check, default, value[key], path, notes)
    return out


class _Unrepairable(Exception):
    pass


def _many(check: Union[ListOf, MapOf], v: Any, path: str, notes: Optional[list[str]]) -> Any:
    """A list of records, or records by name; `_Unrepairable` when one cannot be read."""
    if isinstance(check, ListOf):
        if isinstance(v, list):
            return [_fill(check.shape, item, f"{path}[{i}]", notes) for i, item in enumerate(v)]
    elif isinstance(v, dict) and all(isinstance(k, str) and len(k) <= MAX_NAME for k in v):
        return {k: _fill(check.shape, item, f"{path}.{k}", notes) for k, item in v.items()}
    raise _Unrepairable(path)


def _field(check: Any, default: Any, v: Any, path: str, notes: Optional[list[str]]) -> Any:
    if isinstance(check, Shape):
        return None if v is None and default is None else _fill(check, v, path, notes)
    if isinstance(check, (ListOf, MapOf)):
        try:
            return _many(check, v, path, notes)
        except _Unrepairable:
            why = f"a list of {check.shape.name} objects" if isinstance(check, ListOf) else \
                f"an object of {check.shape.name} records by name"
    else:
        why = check(v)
        if why is None:
            return v
    if notes is None:
        raise ShapeError(f"{path} must be {why}, got {_show(v)}")
    notes.append(f"{path} was not {why}: AG2's default kept")
    return _default(default)


def _show(v: Any) -> str:
    if isinstance(v, str):
        return f"a string of {len(v)} characters" if len(v) > 40 else repr(v)
    return type(v).__name__ if isinstance(v, (list, dict)) else repr(v)[:40]


def normalise(shape: Shape, value: Any, what: Optional[str] = None) -> dict[str, Any]:
    """`value` checked against `shape` and completed with AG2's defaults; ShapeError if it is
    not of that shape."""
    return _fill(shape, value, what or shape.name, None)


def repair(shape: Shape, value: Any, what: str) -> Optional[dict[str, Any]]:
    """A stored record read leniently (see the module's docstring); None when a required field
    is missing, so the record cannot be served at all."""
    notes: list[str] = []
    try:
        out = _fill(shape, value, shape.name, notes)
    except _Unrepairable as exc:
        log.warning("%s: %s; skipped", what, exc)
        return None
    for note in notes[:10]:
        log.warning("%s: %s", what, note)
    return out


_SHARED: dict[str, dict[str, Any]] = {}
_SHARED_MAX = 1024
# Only records this small are shared or remembered (AG2's defaults and the like, a few hundred bytes):
# the caches outlive the agents, and a client registering agents with distinct résumés of a frame's
# size (1 MiB) would otherwise leave the hub holding up to _SHARED_MAX of them after they are gone.
_SHARED_BYTES = 8192


def shared(record: dict[str, Any]) -> dict[str, Any]:
    """One object for equal records (most agents keep AG2's default rule and an empty résumé):
    complete records cost a few KiB each, which an idle connection's agent would otherwise pay
    for. The record returned must never be changed in place (set_rule / set_resume build new
    ones)."""
    key = json.dumps(record, sort_keys=True)
    if len(key) > _SHARED_BYTES:
        return record
    found = _SHARED.get(key)
    if found is not None:
        return found
    if len(_SHARED) < _SHARED_MAX:
        _SHARED[key] = record
    return record


_CHECKED: dict[tuple[str, bytes], dict[str, Any]] = {}  # (shape, the value's JSON) -> its shared record
_TEXTS: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (a record of _CHECKED, its `json.dumps` text)


def checked_shared(shape: Shape, value: Any) -> dict[str, Any]:
    """`shared(normalise(shape, value))`, remembered by the value's JSON text (most agents
    register with the same résumé and rule: AG2's defaults), so an equal value is not checked and
    completed again; `text(record)` is then its `json.dumps`, kept. Only a value of plain JSON
    without floats (`frames.plain`) is remembered: its msgspec text names it exactly (a NaN would
    be written as `null`). ShapeError as `normalise`."""
    from turnflow.serve import frames  # (frames imports nothing of serve's)

    key = None
    if frames._fast_dumps is not None and frames.plain(value):
        try:
            key = (shape.name, frames._fast_dumps(value))
        except Exception:  # (a lone surrogate: checked below, not remembered)
            key = None
        else:
            if len(key[1]) > _SHARED_BYTES:  # (large: checked every time, not remembered)
                key = None
        if key is not None:
            found = _CHECKED.get(key)
            if found is not None:
                return found
    record = shared(normalise(shape, value))
    if key is not None:
        kept = json.dumps(record)
        if len(kept) <= _SHARED_BYTES:  # (the text kept, escapes and defaults included, is what is bounded)
            if len(_CHECKED) >= _SHARED_MAX:  # full: started again, so the common records come back
                _CHECKED.clear()
                _TEXTS.clear()
            _CHECKED[key] = record
            _TEXTS[id(record)] = (record, kept)
    return record


def text(record: dict[str, Any]) -> str:
    """`json.dumps(record)`, kept for the records `checked_shared` remembered (never changed in
    place: see `shared`)."""
    kept = _TEXTS.get(id(record))
    if kept is not None and kept[0] is record:
        return kept[1]
    return json.dumps(record)


def labels(value: Any) -> dict[str, str]:
    """A channel's `labels` (AG2's `dict[str, str]`): at most MAX_LABELS, keys of at most
    MAX_NAME characters."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ShapeError("labels must be an object of strings")
    if len(value) > MAX_LABELS:
        raise ShapeError(f"labels: at most {MAX_LABELS}, got {len(value)}")
    if any(len(k) > MAX_NAME for k in value):
        raise ShapeError(f"labels: a key of at most {MAX_NAME} characters")
    return dict(value)
