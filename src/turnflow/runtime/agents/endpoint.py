"""A model endpoint's URL (`base_url` in an agents file) split so that no credential in it is
stored or printed: its query string (`?api-key=...`, as Azure-style endpoints take the key) is
sent with every request as the client's default query instead of being part of the URL, and
the query, its values and the URL's `user:password@` are masked in every error that could
echo them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import parse_qsl, urlsplit, urlunsplit


@dataclass(frozen=True)
class Endpoint:
    url: Optional[str]  # what the client is given: the URL without its query string and fragment
    query: dict[str, str] = field(default_factory=dict)  # sent with every request (the client's default_query)
    secrets: tuple[str, ...] = ()  # masked wherever an error could echo them


def endpoint(base_url: Optional[str]) -> Endpoint:
    if not base_url:
        return Endpoint(base_url)
    try:
        parts = urlsplit(base_url)
        username, password = parts.username, parts.password
    except ValueError:  # not a URL the client could use either: it is masked whole
        return Endpoint(base_url, {}, (base_url,))
    secrets: list[str] = []
    query: dict[str, str] = {}
    if parts.query:
        secrets.append(parts.query)
        secrets += [pair for pair in parts.query.split("&") if pair]
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            query[key] = value
            if value:
                secrets.append(value)
    if username is not None or password is not None:
        secrets.append(parts.netloc.rpartition("@")[0])
        if password:
            secrets.append(password)
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return Endpoint(url, query, tuple(dict.fromkeys(secrets)))
