"""The frame codec of AG2 1.2.1's `Link` protocol (`ag2/network/transport/frames.py`): every
WebSocket text message is one JSON object with a `kind`.

client → hub: `hello` {name, auth_scheme, auth_claim, since_envelope_id}, `request` {request_id,
op, params}, `receipt` {envelope_id, status, recipient_id, channel_id, reason}, `ping`, `pong`.
hub → client: `welcome` {endpoint_id, hub_time}, `response` {request_id, ok, result, error_code,
error_message}, `error` {code, message, envelope_id}, `notify` {envelope, recipient_id}, `pong`.

`decode` checks a client frame's kind and field types and raises `FrameError` (with the request
id when there is one, so the answer can be correlated) instead of letting a wrong type travel."""

from __future__ import annotations

import json
from typing import Any, Optional

# the field types of each frame a client may send: name -> (types, default); a default of
# `_REQUIRED` marks a required field
_REQUIRED = object()
_CLIENT_FRAMES: dict[str, dict[str, tuple[tuple[type, ...], Any]]] = {
    "hello": {"name": ((str,), _REQUIRED), "auth_scheme": ((str,), "none"), "auth_claim": ((dict,), None),
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


class FrameError(Exception):
    """A frame the hub cannot act on: answered with an error (a `response` when `request_id` is
    known, else an `error` frame)."""

    def __init__(self, message: str, request_id: Optional[str] = None, code: str = PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.code = code


def _load(message: Any) -> Any:
    if isinstance(message, (bytes, bytearray, memoryview)):
        try:
            message = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            raise FrameError("frame is not UTF-8 text") from None
    try:
        return json.loads(message)
    except (ValueError, RecursionError):
        raise FrameError("frame is not valid JSON") from None


def _fields(kind: str, data: dict, rid: Optional[str]) -> dict:
    fields = _CLIENT_FRAMES[kind]
    for name in data:
        if name != "kind" and name not in fields:
            raise FrameError(f"{kind} frame has an unknown field {name[:40]!r}", rid)
    frame: dict = {"kind": kind}
    for name, (types, default) in fields.items():
        value = data.get(name, default)
        if value is _REQUIRED:
            raise FrameError(f"{kind} frame is missing {name!r}", rid)
        if value is None and type(None) not in types:
            value = {} if dict in types else value
        if not isinstance(value, types):
            raise FrameError(f"{kind} frame field {name!r} must be {types[0].__name__}, got {type(value).__name__}",
                             rid)
        frame[name] = value
    return frame


def decode(message: Any) -> dict:
    """One WebSocket message → a frame dict with every field present and of its type."""
    data = _load(message)
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


def dumps(obj: Any) -> str:
    return _dumps(obj)


def welcome(endpoint_id: str, hub_time: str) -> str:
    return _dumps({"kind": "welcome", "endpoint_id": endpoint_id, "hub_time": hub_time})


class Raw(str):
    """A result already encoded as JSON text (an envelope list built from cached encodings)."""


def response(request_id: str, result: Any) -> str:
    """(Built as text around the encoded result: the same JSON as encoding the whole frame.)"""
    return ('{"kind":"response","request_id":' + _dumps(request_id) + ',"ok":true,"result":'
            + (result if isinstance(result, Raw) else _dumps(result)) + ',"error_code":"","error_message":""}')


def failure(request_id: str, code: str, message: str) -> str:
    return _dumps({"kind": "response", "request_id": request_id, "ok": False, "result": None,
                   "error_code": code, "error_message": message})


def error(code: str, message: str, envelope_id: Optional[str] = None) -> str:
    return _dumps({"kind": "error", "code": code, "message": message, "envelope_id": envelope_id})


def notify(envelope_json: str, recipient_id: str) -> str:
    """A notify frame around an envelope already encoded once (one encoding per envelope, not per
    recipient); `recipient_id` is an agent id the registry minted (hex: nothing to escape)."""
    return '{"kind":"notify","envelope":' + envelope_json + ',"recipient_id":"' + recipient_id + '"}'


PONG = '{"kind":"pong"}'
