"""The runtime's errors: one policy, decided once.

`ProtocolError` — a caller broke the session protocol (bad knobs, out-of-turn
send, send after close, unknown session id…). Raised *before* anything is
written or folded, so the session state is unchanged.
`AdapterError` — an agent (participant side) failed its handshake or its turn.
`StoreError` — the write-ahead log cannot be opened or is not a turnflow log.
"""

from __future__ import annotations

from typing import Any


class RuntimeErrorBase(Exception):
    """Base of every error the runtime raises on purpose."""


class ProtocolError(RuntimeErrorBase):
    """A send, create or close that breaks the session protocol; nothing was changed."""


class AdapterError(RuntimeErrorBase):
    """An agent adapter failed (bad handshake, script ran out, raised in its turn)."""


class StoreError(RuntimeErrorBase):
    """The store cannot be opened or used."""


def brief(value: object, limit: int = 80) -> str:
    """`repr(value)` for a message, bounded: long strings, deep or long containers are
    abbreviated with `...`, so a hostile value can never make a message huge."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 3, 4, 6, 6, 6
    r.maxstring, r.maxother, r.maxlong = limit, limit, 40
    text = r.repr(value)
    return text if len(text) <= limit + 20 else text[:limit] + "..."


_SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def mask_secrets(text: str, names: tuple[Any, ...] = ()) -> str:
    """`text` with the value of every environment variable named in `names`, and of every
    variable whose name says it holds a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`),
    replaced by `***` (values shorter than 6 characters are left alone: they would mask
    ordinary words). Used on text that comes back from endpoints before it is stored or printed."""
    import os

    values = {os.environ.get(n) for n in names}
    values |= {v for k, v in os.environ.items() if any(w in k.upper() for w in _SECRET_NAMES)}
    for v in sorted((v for v in values if v and len(v) >= 6), key=len, reverse=True):
        text = text.replace(v, "***")
    return text


def endpoint_failure(agent_id: str, exc: BaseException, key_env: str) -> "AdapterError":
    """The `AdapterError` for a failed model call: the endpoint's error text with API key values
    masked (`mask_secrets`) and its length bounded, since it is stored and printed."""
    detail = mask_secrets(str(exc), (key_env,))  # an endpoint may echo the key back
    if len(detail) > 2000:
        detail = detail[:2000] + f"... ({len(detail)} characters)"
    return AdapterError(f"agent {brief(agent_id)}: model call failed: {type(exc).__name__}: {detail}")
