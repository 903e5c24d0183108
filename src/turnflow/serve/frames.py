"""The frame codec of AG2 1.2.1's `Link` protocol (`ag2/network/transport/frames.py`): every
WebSocket text message is one JSON object with a `kind`.

client → hub: `hello` {name, auth_scheme, auth_claim, since_envelope_id}, `request` {request_id,
op, params}, `receipt` {envelope_id, status, recipient_id, channel_id, reason}, `ping`, `pong`.
hub → client: `welcome` {endpoint_id, hub_time}, `response` {request_id, ok, result, error_code,
error_message}, `error` {code, message, envelope_id}, `notify` {envelope, recipient_id}, `pong`.

`decode` checks a client frame's kind and field types and raises `FrameError` (with the request
id when there is one, so the answer can be correlated) instead of letting a wrong type travel.
Every frame is also JSON turnflow can send back, checked before anything in it is acted on:
no `NaN` / `Infinity` / out-of-range number (`1e400`), no lone surrogate (`"\\ud800"`), nested at
most `MAX_DEPTH` deep; otherwise it is refused with `protocol_error` and nothing is stored.
`encode` is the hub's own side of the same promise for records an earlier version stored
unchecked: what cannot be sent is escaped (a lone surrogate as U+FFFD, a non-finite number as
`null`) with a logged warning, never a dropped connection."""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any, Callable, Optional

# the field types of each frame a client may send: name -> (types, default); a default of
# `_REQUIRED` marks a required field
_REQUIRED = object()
_EMPTY_OBJECT = object()  # a default of `{}` (a new one per frame); a `null` sent is kept as it is
_CLIENT_FRAMES: dict[str, dict[str, tuple[tuple[type, ...], Any]]] = {
    "hello": {"name": ((str,), _REQUIRED), "auth_scheme": ((str,), "none"), "auth_claim": ((object,), _EMPTY_OBJECT),
              "since_envelope_id": ((str, type(None)), None)},
    "request": {"request_id": ((str,), _REQUIRED), "op": ((str,), _REQUIRED), "params": ((dict,), None)},
    "receipt": {"envelope_id": ((str,), _REQUIRED), "status": ((str,), _REQUIRED), "recipient_id": ((str,), ""),
                "channel_id": ((str,), ""), "reason": ((str,), "")},
    "ping": {},
    "pong": {},
}

_RECEIPT = ("envelope_id", "status", "recipient_id", "channel_id", "reason")
PROTOCOL_ERROR = "protocol_error"
NOT_FOUND = "not_found"
ACCESS_DENIED = "access_denied"
AUTH_FAILED = "auth_failed"


MAX_DEPTH = 64  # arrays and objects nested in one frame (its own envelope object included)
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
log = logging.getLogger("turnflow.serve")


class FrameError(Exception):
    """A frame the hub cannot act on: answered with an error (a `response` when `request_id` is
    known, else an `error` frame)."""

    def __init__(self, message: str, request_id: Optional[str] = None, code: str = PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.code = code


class _Unsendable(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Unsendable(name)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Unsendable(text)
    return value


_strict = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite).decode

try:  # msgspec (serve's extra): the wire's codec where it gives what the standard library gives
    from msgspec.json import Decoder as _FastDecoder
    from msgspec.json import Encoder as _FastEncoder
except ImportError:  # pragma: no cover - (without it: the standard library's codec alone, same frames)
    _fast_loads: Optional[Callable[[str], Any]] = None
    _fast_dumps: Optional[Callable[[Any], bytes]] = None
else:
    _fast_loads = _FastDecoder().decode
    _fast_dumps = _FastEncoder().encode


def _of_kind(items: list[Any], types: set[type], kind: type) -> list[Any]:
    """The values of `items` (one level of a parsed frame, whose types are `types`) of `kind`:
    `items` itself when they are all of it, none when none is, else those that are (a bool is no
    number)."""
    plain = types <= _PLAIN_TYPES
    if plain and kind not in types:
        return []
    if plain and len(types) == 1:
        return items
    return [v for v in items if isinstance(v, kind) and not isinstance(v, bool)]


def _sendable(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """`unsendable(value) is None`, found without a path: the values are checked a level at a
    time, each kind in one comprehension, so a frame of many small values costs about what
    reading it cost (a walk value by value, building a path for each, cost ~7 times that: ~400 ms
    for a 1 MiB frame of 350,000 empty arrays)."""
    items = [value]
    depth = 0
    while items:
        types = set(map(type, items))
        strings = _of_kind(items, types, str)
        if strings and _SURROGATE.search("".join(strings)):
            return False
        floats = _of_kind(items, types, float)
        if floats and not all(map(math.isfinite, floats)):
            return False
        dicts = _of_kind(items, types, dict)
        lists = _of_kind(items, types, list)
        if not dicts and not lists:
            return True
        if depth >= max_depth:
            return False
        if dicts and _SURROGATE.search("".join(k for d in dicts for k in d if isinstance(k, str))):
            return False
        items = [v for d in dicts for v in d.values()]
        items += [v for seq in lists for v in seq]
        depth += 1
    return True


_PLAIN_TYPES = frozenset({str, float, int, bool, type(None), dict, list})  # what parsed JSON holds


def unsendable(value: Any, max_depth: int = MAX_DEPTH) -> Optional[str]:
    """Why `value` (parsed JSON) is not JSON turnflow can send back, with where (`$.params.x`),
    or None: a non-finite number, a lone surrogate (in a string or a key), nesting deeper than
    `max_depth`. The first such value in document order, looked for by halves (`_sendable` of
    each half of a container's values): a few passes over the frame's values in all, never one
    Python step per value."""
    if _sendable(value, max_depth):
        return None
    path, depth = "$", 0
    while True:
        if isinstance(value, str):
            return f"a lone surrogate in the string at {path[:200]}"
        if isinstance(value, float):
            return f"{value!r} at {path[:200]} (JSON has no NaN or Infinity; numbers must be finite)"
        if depth >= max_depth:
            return f"nesting deeper than {max_depth} at {path[:200]}"
        if isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"a lone surrogate in a key at {path[:200]}"
            keys: list[Any] = list(value)
            values = list(value.values())
        else:
            values = value
            keys = []
        lo, hi = 0, len(values)  # the first value that is not sendable is in values[lo:hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _sendable(values[lo:mid], max_depth - depth):  # (the slice stands where its container is)
                lo = mid
            else:
                hi = mid
        if len(path) < 200:
            path += f".{keys[lo]}" if keys else f"[{lo}]"
        value, depth = values[lo], depth + 1


def _request_id(data: Any) -> Optional[str]:
    if isinstance(data, dict) and data.get("kind") == "request" and isinstance(data.get("request_id"), str):
        rid: str = data["request_id"]
        return rid
    return None


_UNREAD = object()


def _passes(message: str, data: Any) -> bool:
    """Whether `data`, read from `message`, is JSON turnflow can send back: at once when the text
    could fail no check (no more brackets than `MAX_DEPTH`, no surrogate escape), else checked."""
    return ((message.count("[") + message.count("{") <= MAX_DEPTH
             and ("\\u" not in message or not _SURROGATE_ESCAPE.search(message))) or _sendable(data))


def _load(message: Any, data: Any = _UNREAD) -> Any:
    """The frame's JSON (`data` when msgspec has read it already), refused unless turnflow can
    send every value in it back (the nesting, number and surrogate checks run only when the text
    could fail one: more brackets than `MAX_DEPTH`, or a surrogate escape; a number msgspec reads
    as infinite is found by them too). Read once by msgspec where it can."""
    if isinstance(message, (bytes, bytearray, memoryview)):
        try:
            message = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("frame is not UTF-8 text") from None
    if data is _UNREAD and _fast_loads is not None:  # the same values as `_strict`, or an error where `_strict`
        try:  # has one (or the overflowing number, the lone surrogate escape it lets through, which the
            data = _fast_loads(message)  # checks refuse as they refuse `_strict`'s reading)
        except (ValueError, RecursionError):  # (msgspec's DecodeError is a ValueError)
            pass
    if data is not _UNREAD:
        if _passes(message, data):
            return data
        raise FrameError(f"frame is not JSON turnflow can send back: {unsendable(data)}", _request_id(data))
    try:
        data = _strict(message)
    except _Unsendable:
        data = None
    except (ValueError, RecursionError):
        raise FrameError("frame is not valid JSON") from None
    else:
        if _passes(message, data):
            return data
    if data is None:  # a NaN / Infinity / 1e400: read again to say where, and answer on the request
        try:
            data = json.loads(message)
        except (ValueError, RecursionError):
            raise FrameError("frame is not valid JSON") from None
    why = unsendable(data)
    if why is None:
        return data
    raise FrameError(f"frame is not JSON turnflow can send back: {why}", _request_id(data))


def _fields(kind: str, data: dict[str, Any], rid: Optional[str]) -> dict[str, Any]:
    fields = _CLIENT_FRAMES[kind]
    for name in data:
        if name != "kind" and name not in fields:
            raise FrameError(f"{kind} frame has an unknown field {name[:40]!r}", rid)
    frame: dict[str, Any] = {"kind": kind}
    for name, (types, default) in fields.items():
        value = data.get(name, default)
        if value is _REQUIRED:
            raise FrameError(f"{kind} frame is missing {name!r}", rid)
        if value is _EMPTY_OBJECT:
            value = {}
        if value is None and type(None) not in types:
            value = {} if dict in types else value
        if not isinstance(value, types):
            raise FrameError(f"{kind} frame field {name!r} must be {types[0].__name__}, got {type(value).__name__}",
                             rid)
        frame[name] = value
    return frame


def decode(message: Any) -> dict[str, Any]:
    """One WebSocket message → a frame dict with every field present and of its type. (The common
    frames — a text message msgspec reads, a receipt or a request of the usual shape, every field
    of its type — are checked at once by `_usual`, as `_load` and `_frame` check them.)"""
    if type(message) is str and _fast_loads is not None:
        try:
            data = _fast_loads(message)
        except (ValueError, RecursionError):
            pass
        else:
            if type(data) is dict and _usual(data, message):
                return data
            if (message.count("[") + message.count("{") <= MAX_DEPTH
                    and ("\\u" not in message or not _SURROGATE_ESCAPE.search(message))):  # (as `_load`)
                return _frame(data)
            return _frame(_load(message, data))  # (not read again)
    return _frame(_load(message))


def _usual(data: dict[str, Any], message: str) -> bool:
    """Is `data`, read from `message`, a request or a receipt of the usual shape, every field of
    its type, within `_load`'s nesting bound and without a lone surrogate escape? (A receipt of
    the usual shape holds only strings, so it needs no count of its brackets.)"""
    kind = data.get("kind")
    if kind == "request":
        return (len(data) == 4 and type(data.get("request_id")) is str and type(data.get("op")) is str
                and type(data.get("params")) is dict
                and message.count("[") + message.count("{") <= MAX_DEPTH
                and ("\\u" not in message or not _SURROGATE_ESCAPE.search(message)))
    return (kind == "receipt" and len(data) == 6 and type(data.get("envelope_id")) is str
            and type(data.get("status")) is str and type(data.get("recipient_id")) is str
            and type(data.get("channel_id")) is str and type(data.get("reason")) is str
            and ("\\u" not in message or not _SURROGATE_ESCAPE.search(message)))


def _frame(data: Any) -> dict[str, Any]:
    """`decode` of the frame's JSON value."""
    if not isinstance(data, dict):
        raise FrameError(f"frame must be a JSON object, got {type(data).__name__}")
    kind = data.get("kind")
    if kind == "request" and len(data) == 4:  # the common cases, checked directly
        rid, op, params = data.get("request_id"), data.get("op"), data.get("params")
        if type(rid) is str and type(op) is str and type(params) is dict:
            return data
    elif kind == "receipt" and len(data) == 6 and all(type(data.get(k)) is str for k in _RECEIPT):
        return data
    if not isinstance(kind, str) or kind not in _CLIENT_FRAMES:
        raise FrameError(f"unknown or unexpected frame kind {str(kind)[:40]!r}")
    rid = data.get("request_id") if kind == "request" and isinstance(data.get("request_id"), str) else None
    return _fields(kind, data, rid)


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
# `_dumps` of a string, without the encoder's method around it (the same text: `JSONEncoder.encode`
# of a str is this function's)
_string: Callable[[str], str] = json.encoder.encode_basestring


def dumps(obj: Any) -> str:
    return _dumps(obj)


def _finite_only(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_only(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_only(v) for v in value]
    return value


_PLAIN = frozenset({str, int, bool, type(None)})
PLAIN_SCALARS = _PLAIN  # (the value types `_plain` takes as they are)
_NESTED = _PLAIN | {dict, list}
_STR_KEYS = {str}


def _plain(obj: Any) -> bool:
    """Only strings, integers, booleans, None, lists and objects with string keys: JSON that
    msgspec's encoder writes exactly as `_dumps` does (floats are not: their text differs, `1e-05`
    against `1e-5`, and a NaN would be written as `null` without the warning `encode` gives).
    (Each container's item types are gathered as a set, in C; the walk goes down only into
    containers that hold containers.)"""
    kind = type(obj)
    if kind is dict:
        if obj and set(map(type, obj)) != _STR_KEYS:
            return False
        items: Any = obj.values()
    elif kind is list:
        items = obj
    else:
        return kind in _PLAIN
    kinds = set(map(type, items))
    if kinds <= _PLAIN:
        return True
    if not kinds <= _NESTED:
        return False
    try:
        return all(_plain(item) for item in items if type(item) is dict or type(item) is list)
    except RecursionError:  # (deeper than the stack: the standard library's encoder says what it says)
        return False


plain = _plain


def clean(obj: Any) -> bool:
    """Whether `encode(obj, ...)` writes `obj` without a repair (and so without a warning): plain
    JSON with finite numbers and no lone surrogate."""
    try:
        return not _SURROGATE.search(_dumps(obj))
    except (TypeError, ValueError, RecursionError):
        return False


def encode(obj: Any, what: str) -> str:
    """`obj` as JSON text a client can read, whatever an earlier version stored: a non-finite
    number becomes `null` and a lone surrogate U+FFFD, each with a warning naming `what` (the
    record). A record written by this version needs neither (its values were checked on the way
    in), so this costs one scan of the text. Plain JSON (`_plain`) is written by msgspec when it
    is installed (the same text; a lone surrogate makes it raise, and the text is made below)."""
    text = fast_text(obj)
    if text is not None:
        return text
    try:
        text = _dumps(obj)
    except ValueError:
        _warn_once(what, "holds a number JSON cannot carry (NaN or Infinity): sent as null")
        text = _dumps(_finite_only(obj))
    if _SURROGATE.search(text):
        _warn_once(what, "holds a lone surrogate: sent as U+FFFD")
        text = _SURROGATE.sub("\ufffd", text)
    return text


def encode_plain(obj: Any, what: str, plain: bool) -> str:
    """`encode(obj, what)`, where the caller has checked what `_plain` checks (`plain`: strings,
    integers, booleans, None, lists and string-keyed objects only): no walk of `obj` here."""
    text = fast_text(obj, plain)
    return encode(obj, what) if text is None else text


def fast_text(obj: Any, plain: Optional[bool] = None) -> Optional[str]:
    """msgspec's JSON text of `obj`, the text `encode` writes, when msgspec is installed, `obj` is
    plain JSON (`_plain`, or `plain`: the caller's own check of it) and msgspec can write it (a
    lone surrogate or a nesting too deep makes it raise); else None."""
    if _fast_dumps is None or not (_plain(obj) if plain is None else plain):
        return None
    try:
        return _fast_dumps(obj).decode()
    except Exception:  # (msgspec's own EncodeError and the like: `encode` makes the text)
        return None


_warned: set[tuple[str, str]] = set()


def _warn_once(what: str, problem: str) -> None:
    """A repaired record is named once per process (a closed session's log is encoded again at
    every read), up to a bound."""
    if (what, problem) not in _warned and len(_warned) < 10000:
        _warned.add((what, problem))
        log.warning("%s %s", what, problem)


def welcome(endpoint_id: str, hub_time: str) -> str:
    return _dumps({"kind": "welcome", "endpoint_id": endpoint_id, "hub_time": hub_time})


class Raw(str):
    """A result already encoded as JSON text (an envelope list built from cached encodings)."""


def response(request_id: str, result: Any) -> str:
    """(Built as text around the encoded result: the same JSON as encoding the whole frame.)"""
    return ('{"kind":"response","request_id":' + _string(request_id) + ',"ok":true,"result":'
            + (result if isinstance(result, Raw) else encode(result, "a reply")) + ',"error_code":"","error_message":""}')


def failure(request_id: str, code: str, message: str) -> str:
    return encode({"kind": "response", "request_id": request_id, "ok": False, "result": None,
                   "error_code": code, "error_message": message}, "an error message")


def error(code: str, message: str, envelope_id: Optional[str] = None) -> str:
    return encode({"kind": "error", "code": code, "message": message, "envelope_id": envelope_id}, "an error message")


def notify(envelope_json: str, recipient_id: str) -> str:
    """A notify frame around an envelope already encoded once (one encoding per envelope, not per
    recipient); `recipient_id` is an agent id the registry minted (hex: nothing to escape)."""
    return '{"kind":"notify","envelope":' + envelope_json + ',"recipient_id":"' + recipient_id + '"}'


PONG = '{"kind":"pong"}'
