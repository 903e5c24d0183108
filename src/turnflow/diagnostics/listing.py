"""Lists of names inside a message, bounded: a diagnostic about a 100,000-agent chat names the
first few and says how many more, so every message stays short whatever the input."""

from __future__ import annotations

from collections.abc import Iterable

MAX_LISTED = 20  # names shown in one message; the rest are counted


def bounded(items: Iterable[str], sep: str = ", ", limit: int = MAX_LISTED) -> str:
    """`items` joined by `sep`, at most `limit` of them, then `… and N more`."""
    shown: list[str] = []
    rest = 0
    for item in items:
        if len(shown) < limit:
            shown.append(item)
        else:
            rest += 1
    return sep.join(shown) + (f"{sep}… and {rest} more" if rest else "")
