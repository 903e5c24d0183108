"""Secrets kept out of everything turnflow prints or stores: one function, `mask`, used on every
error path (`cli_util.err`, every `StoreError` and `AdapterError`, an endpoint's error text) and on
every URL shown (`mask_url`: a store's name in `inspect` and in messages).

What is masked, each replaced by `***`:

- in a URL (any `scheme://...` inside the text): the password of `user:password@`, and the value
  of every query parameter whose name says it holds a secret (`password`, `sslpassword`, `api-key`,
  `token`, `secret`, `sig`, ...; libpq reads `?password=` as the password);
- in a libpq key=value connection string (`host=db password=s3cret` or `password='a b\\'c'`):
  the value of `password` and `sslpassword`;
- anywhere: a value shaped like an API key (`sk-...`, `sk-ant-...`, `sk-proj-...`, GitHub,
  Slack, AWS, Google and Hugging Face tokens), and a long high-entropy token (32 or more
  characters of letters, digits, `_-+/=` mixing upper case, lower case and digits, with at least
  4 bits of entropy per character), whatever field it came from;
- the secrets the caller knows (`values`, e.g. the password of the store's URL, which libpq quotes
  alone in its parse errors), and with `env=True` the values of the environment variables named
  in `names` and of every variable whose name says it holds a secret (`*KEY*`, `*TOKEN*`, ...);
  of those, also any run of 12 or more characters of the value or of its base64 and URL encodings
  (an endpoint echoing the key minus its last characters).

Every step is linear in the text (no regular expression here backtracks). Standard library only."""

from __future__ import annotations

import math
import re
from typing import Iterable
from urllib.parse import unquote

MASK = "***"

#: query parameters (and environment variables) whose name says they hold a secret
_SECRET_WORDS = ("PASSWORD", "PASSWD", "PWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL", "AUTH", "SIG", "SESSION")
_ENV_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SUBSTRING = 12  # a run of this many characters of a known secret (or of an encoding of it) is masked
_MIN_VALUE = 6  # shorter known values are left alone: they would mask ordinary words

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]*")
# libpq's key=value form: a value is a single-quoted string (backslash escapes) or runs to a blank
_CONNINFO = re.compile(r"\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'\"]+)", re.IGNORECASE)
_VENDOR_KEY = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-[A-Za-z0-9_\-]{20,}"  # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-api03-...)
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google
    r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r")")
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{32,}")


def mask(text: str, values: Iterable[str] = (), names: Iterable[str] = (), *, env: bool = False) -> str:
    """`text` with every secret it holds replaced by `***` (the module's docstring says which)."""
    if not text:
        return text
    known = [v for v in values if v]
    if env:
        import os

        known += [os.environ.get(n) or "" for n in names]
        known += [v for k, v in os.environ.items() if any(w in k.upper() for w in _ENV_WORDS)]
    text = _mask_known(text, known)
    parts, at = [], 0
    for m in _URL.finditer(text):  # URLs by their own rules; libpq's key=value form in the text between
        url = m.group(0).rstrip(".,:;!?)]}")  # `URL: message`, `(URL)`: the punctuation is the sentence's
        parts += [_CONNINFO.sub(_conninfo, text[at:m.start()]), mask_url(url)]
        at = m.start() + len(url)
    parts.append(_CONNINFO.sub(_conninfo, text[at:]))
    text = _VENDOR_KEY.sub(MASK, "".join(parts))
    return _TOKEN.sub(lambda m: MASK if looks_like_key(m.group(0)) else m.group(0), text)


def mask_url(url: str) -> str:
    """A URL as it may be shown: the password of its `user:password@`, the values of its query
    parameters named for secrets and any value shaped like a key replaced by `***`. A text that is
    not a URL is returned with key-shaped values masked."""
    head, sep, rest = url.partition("://")
    if not sep:
        return _VENDOR_KEY.sub(MASK, url)
    end = len(rest)
    for stop in "/?#":
        i = rest.find(stop)
        if i != -1:
            end = min(end, i)
    netloc, tail = rest[:end], rest[end:]
    if "@" in netloc:
        cred, _, host = netloc.rpartition("@")
        user, colon, _password = cred.partition(":")
        netloc = f"{user}:{MASK}@{host}" if colon else netloc
    path, qmark, query = tail.partition("?")
    if qmark:
        query, hash_, fragment = query.partition("#")
        query = "&".join(_mask_pair(p) for p in query.split("&")) + hash_ + fragment
    out = f"{head}{sep}{netloc}{path}{qmark}{query}"
    out = _VENDOR_KEY.sub(MASK, out)
    return _TOKEN.sub(lambda m: MASK if looks_like_key(m.group(0)) else m.group(0), out)


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets of a URL as written and percent-decoded (its password, the values of its
    secret-named query parameters): what a library's error may quote without the rest of the URL
    (libpq: `invalid percent-encoded token: "..."`), for `mask(..., values=...)`."""
    _, sep, rest = url.partition("://")
    if not sep:
        return ()
    found: list[str] = []
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in netloc:
        cred = netloc.rpartition("@")[0]
        if ":" in cred:
            found.append(cred.partition(":")[2])
    if "?" in rest:
        for pair in rest.partition("?")[2].partition("#")[0].split("&"):
            key, eq, value = pair.partition("=")
            if eq and _secret_name(unquote(key)):
                found.append(value)
    out = [v for f in found for v in (f, unquote(f)) if v]
    return tuple(dict.fromkeys(out))


def looks_like_key(token: str) -> bool:
    """A long high-entropy token: 32+ characters mixing upper case, lower case and digits with at
    least 4 bits of entropy per character (random base62/base64; not a word, a path or a hex id)."""
    if len(token) < 32:
        return False
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)):
        return False
    counts: dict[str, int] = {}
    for c in token:
        counts[c] = counts.get(c, 0) + 1
    n = len(token)
    entropy = -sum(k / n * math.log2(k / n) for k in counts.values())
    return entropy >= 4.0


def _conninfo(m: re.Match) -> str:
    return m.group(1) + MASK


def _secret_name(name: str) -> bool:
    upper = name.upper().replace("-", "").replace("_", "")
    return any(w in upper for w in _SECRET_WORDS)


def _mask_pair(pair: str) -> str:
    key, eq, value = pair.partition("=")
    return f"{key}={MASK}" if eq and value and _secret_name(unquote(key)) else pair


def _mask_known(text: str, known: list[str]) -> str:
    secrets = sorted({v for v in known if len(v) >= _MIN_VALUE}, key=len, reverse=True)
    if not secrets:
        return text
    for v in secrets:
        text = text.replace(v, MASK)
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
            out.append(MASK)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
