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


class _Masked(RuntimeErrorBase):
    """An error whose message is stored or printed: whatever in it is shaped like a secret (a
    key pasted into any field of an agents file, a URL's password) is masked when it is made
    (`turnflow.masking.mask`)."""

    def __init__(self, *args: Any) -> None:
        if args and isinstance(args[0], str):
            from turnflow.masking import mask

            args = (mask(args[0]), *args[1:])
        super().__init__(*args)


class AdapterError(_Masked):
    """An agent adapter failed (bad handshake, script ran out, raised in its turn)."""


class EndpointUnavailable(AdapterError):
    """A model endpoint was unavailable (rate limited, overloaded, failing with a 5xx, timing out,
    refusing or dropping connections) for longer than its agent waits (`retry_seconds`, within
    `turn_timeout`): an outage, not the agent's failure. A single run ends `agent_error` with this
    message; a batch stops (exit 2) recording no task failed, its sessions left to be continued."""


class StoreError(_Masked):
    """The store cannot be opened or used."""


class StoreFailed(StoreError):
    """The store failed under a run that was using it — a full disk, an I/O error, a database
    server away longer than the reconnect window: the infrastructure's failure, never a task's.
    Nothing is recorded failed for it; the run stops (exit 2, naming the store) and what did not
    finish stays unfinished, so the same command continues it."""


class StoreDamaged(StoreFailed):
    """A row of the store does not decode (a checksum mismatch, malformed JSON, a NULL where a
    value must be): found before anything is written, and nothing is (exit 2, "damaged")."""


def brief(value: object, limit: int = 80) -> str:
    """`repr(value)` for a message, bounded: long strings, deep or long containers are
    abbreviated with `...`, so a hostile value can never make a message huge."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxtuple, r.maxset = 3, 4, 6, 6, 6
    r.maxstring, r.maxother, r.maxlong = limit, limit, 40
    text = r.repr(value)
    return text if len(text) <= limit + 20 else text[:limit] + "..."


def mask_secrets(text: str, names: tuple[Any, ...] = (), values: tuple[str, ...] = ()) -> str:
    """`text` with every secret masked (`turnflow.masking.mask`, the one masking function): the
    values of the environment variables named in `names` and of every variable whose name says
    it holds a secret, `values` (the credentials of an endpoint's URL), runs of 12 or more
    characters of any of them or of their encodings, and whatever is shaped like a key or a
    credential in a URL. Used on text that comes back from endpoints before it is stored or printed."""
    from turnflow.masking import mask

    return mask(text, values, names, env=True)


def endpoint_failure(agent_id: str, exc: BaseException, key_env: str,
                     url_secrets: tuple[str, ...] = ()) -> "AdapterError":
    """The `AdapterError` for a failed model call: the endpoint's error text with API key values
    and the credentials of the endpoint's URL (`url_secrets`: its query string, user:password)
    masked (`mask_secrets`) and its length bounded, since it is stored and printed."""
    import json

    detail = mask_secrets(str(exc), (key_env,), url_secrets)  # an endpoint may echo the key or the URL back
    if isinstance(exc, json.JSONDecodeError):  # the client's own reading of the body: say what it means
        return AdapterError(f"agent {brief(agent_id)}: model call failed: the endpoint's reply is not JSON "
                            f"({detail[:200]}; is `base_url` the API's address?)")
    if len(detail) > 2000:
        detail = detail[:2000] + f"... ({len(detail)} characters)"
    return AdapterError(f"agent {brief(agent_id)}: model call failed: {type(exc).__name__}: {detail}")


TRANSIENT_STATUS = (408, 409, 429)  # and every status from 500 on: what the openai / anthropic clients retry too
_TRANSIENT_NAMES = {"APITimeoutError", "APIConnectionError", "TimeoutException", "TransportError"}


def endpoint_transient(exc: BaseException) -> bool:
    """Whether a failed model call may succeed if tried again: a status 408, 409, 429 or 5xx (529
    "overloaded" included), or no answer at all — a timeout, a connection refused or dropped
    mid-answer (the openai / anthropic clients' `APITimeoutError` / `APIConnectionError`, httpx's
    transport errors). A refusal (400, 401, 403, 404, 422...) or a reply that does not parse is
    permanent."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return status in TRANSIENT_STATUS or status >= 500
    return any(c.__name__ in _TRANSIENT_NAMES for c in type(exc).__mro__)


def retry_after(exc: BaseException) -> float:
    """The wait a failed answer asks for (`retry-after-ms`, else `retry-after` in seconds), or 0."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return 0.0
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if 0 <= value < float("inf"):
            return value
    return 0.0
