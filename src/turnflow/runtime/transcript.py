"""What views need of a live session, kept as the session runs, so a view costs O(1) per turn
(amortised) instead of re-reading and re-decoding the whole log.

`Transcript` holds the session's substantive envelopes in log order (append-only). For each
(viewer, rendering) a `ViewerLog` is extended lazily, only with what was appended since it was
last asked for: the messages the viewer may see (audience none or naming it) and how many
each sender contributed. `FullTranscript` hands the message list out as `Messages`, a
read-only window of fixed length onto it (no copy); `WindowedSummary` slices its last
`recent_n` and derives the summary line from the per-sender counts.

A live session gets its transcript on the first view (built once from the store, up to the
last folded envelope); from then on `LiveSession.apply` appends to it, and drops it when the
session ends. Hydrate therefore keeps its bounded memory: a session nobody views holds no
transcript, and neither does a closed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Iterator, Optional

from turnflow.runtime.envelope import Envelope


def message(e: Envelope, render: Callable[[Envelope], Optional[str]], named: bool) -> Optional[dict[str, Any]]:
    """The message a viewer sees for `e`, or None when the adapter's `render_envelope` skips it."""
    text = render(e)
    if text is None:
        return None
    return {"sender": e.sender_id, "text": f"[{e.sender_id}] {text}" if named else text}


class Messages(Sequence[dict[str, Any]]):
    """A read-only sequence of `{"sender", "text"}` messages: an optional prefix, then the first
    `n` items of an append-only list shared with the session (the list is never copied, and
    later appends do not show through). Compares equal to any sequence with equal items.
    Treat the message mappings as read-only: they are shared by every later view."""

    __slots__ = ("_items", "_n", "_prefix")

    def __init__(self, items: list[Any], n: Optional[int] = None, prefix: tuple[Any, ...] = ()) -> None:
        self._items = items
        self._n = len(items) if n is None else n
        self._prefix = tuple(prefix)

    def __len__(self) -> int:
        return len(self._prefix) + self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("message index out of range")
        p = len(self._prefix)
        return self._prefix[i] if i < p else self._items[i - p]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self._prefix
        items = self._items
        for k in range(self._n):
            yield items[k]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> list[Any]:
        return list(self) + list(other)

    def __radd__(self, other: Any) -> list[Any]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return repr(list(self))

    def with_prefix(self, prefix: Sequence[Any]) -> "Messages":
        return Messages(self._items, self._n, tuple(prefix) + self._prefix)


class ViewerLog:
    """One viewer's projection of the transcript for one rendering, extended incrementally."""

    __slots__ = ("viewer", "pos", "messages", "counts")

    def __init__(self, viewer: Optional[str]) -> None:
        self.viewer = viewer
        self.pos = 0  # how many transcript entries have been looked at
        self.messages: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}  # sender -> visible messages


class Transcript:
    __slots__ = ("entries", "_rendered", "_logs")

    def __init__(self, entries: Optional[list[Any]] = None) -> None:
        self.entries: list[Envelope] = entries if entries is not None else []
        self._rendered: dict[tuple[Any, ...], list[Any]] = {}  # (render, named) -> message per entry (shared by viewers)
        self._logs: dict[tuple[Any, ...], ViewerLog] = {}

    def add(self, env: Envelope) -> None:
        self.entries.append(env)

    def log_for(self, viewer: Optional[str], render: Callable[[Envelope], Optional[str]], named: bool) -> ViewerLog:
        flavour = (render, named)
        rendered = self._rendered.get(flavour)
        if rendered is None:
            rendered = self._rendered[flavour] = []
        entries = self.entries
        for k in range(len(rendered), len(entries)):
            rendered.append(message(entries[k], render, named))
        key = (viewer, render, named)
        vl = self._logs.get(key)
        if vl is None:
            vl = self._logs[key] = ViewerLog(viewer)
        msgs, counts = vl.messages, vl.counts
        for k in range(vl.pos, len(entries)):
            e = entries[k]
            if (viewer is None or e.audience is None or viewer in e.audience or viewer == e.sender_id) \
                    and rendered[k] is not None:
                msgs.append(rendered[k])
                counts[e.sender_id] = counts.get(e.sender_id, 0) + 1
        vl.pos = len(entries)
        return vl
