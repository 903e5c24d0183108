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


_SUBSTRING = 12  # a run of this many characters of a secret (or of an encoding of it) is masked


def mask_secrets(text: str, names: tuple[Any, ...] = (), values: tuple[str, ...] = ()) -> str:
    """`text` with the value of every environment variable named in `names`, and of every
    variable whose name says it holds a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`),
    replaced by `***` (values shorter than 6 characters are left alone: they would mask
    ordinary words). Also masked: any run of 12 or more characters of such a value — an
    endpoint that echoes the key minus its last characters — and of its base64 (standard and
    URL-safe) and URL encodings. `values`: more secrets, given as they are (the credentials of an
    endpoint's URL), masked the same way. Used on text that comes back from endpoints before it
    is stored or printed."""
    import os

    found = {os.environ.get(n) for n in names} | set(values)
    found |= {v for k, v in os.environ.items() if any(w in k.upper() for w in _SECRET_NAMES)}
    secrets = sorted((v for v in found if v and len(v) >= 6), key=len, reverse=True)
    for v in secrets:
        text = text.replace(v, "***")
    forms = [f for v in secrets for f in _encodings(v) if len(f) >= _SUBSTRING]
    return _mask_runs(text, forms) if forms else text


def _encodings(value: str) -> list[str]:
    import base64
    from urllib.parse import quote, quote_plus

    raw = value.encode("utf-8", "surrogateescape")
    b64 = base64.b64encode(raw).decode("ascii")
    url = base64.urlsafe_b64encode(raw).decode("ascii")
    return list(dict.fromkeys([value, b64, b64.rstrip("="), url, url.rstrip("="), quote(value, safe=""),
                               quote_plus(value)]))


def _mask_runs(text: str, forms: list[str]) -> str:
    """Replace every run of `text` made of windows of `_SUBSTRING` characters found in one of
    `forms` by `***` (linear in the text: one set lookup per position)."""
    n = _SUBSTRING
    windows = {f[i:i + n] for f in forms for i in range(len(f) - n + 1)}
    covered = [False] * len(text)
    for i in range(len(text) - n + 1):
        if text[i:i + n] in windows:
            for k in range(i, i + n):
                covered[k] = True
    if not any(covered):
        return text
    out, i = [], 0
    while i < len(text):
        if covered[i]:
            while i < len(text) and covered[i]:
                i += 1
            out.append("***")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def endpoint_failure(agent_id: str, exc: BaseException, key_env: str,
                     url_secrets: tuple[str, ...] = ()) -> "AdapterError":
    """The `AdapterError` for a failed model call: the endpoint's error text with API key values
    and the credentials of the endpoint's URL (`url_secrets`: its query string, user:password)
    masked (`mask_secrets`) and its length bounded, since it is stored and printed."""
    detail = mask_secrets(str(exc), (key_env,), url_secrets)  # an endpoint may echo the key or the URL back
    if len(detail) > 2000:
        detail = detail[:2000] + f"... ({len(detail)} characters)"
    return AdapterError(f"agent {brief(agent_id)}: model call failed: {type(exc).__name__}: {detail}")
