"""Views project a session's log for one participant's turn (docs/runtime.md, "Views").

A view returns a list of messages `{"sender": agent_id, "text": str}` built from the
substantive envelopes (text and packets) that the viewer may see (audience None or
naming it). `FullTranscript` keeps them all; `WindowedSummary(recent_n)` keeps the last
`recent_n` plus, when older ones exist, one static summary line first; the `Named*`
variants prefix each text with `[sender] `.

`project(envelopes, viewer, render)` projects any stream of envelopes (reads them all);
`project_log(viewer_log)` answers from a live session's `transcript.ViewerLog` in O(1)
amortised per turn (O(recent_n) for a window) with the same output — what `Hub.view` uses.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from turnflow.runtime.adapters.protocol import render_substantive
from turnflow.runtime.envelope import SUBSTANTIVE, Envelope
from turnflow.runtime.transcript import Messages, ViewerLog, message as _message

SUMMARY_SENDER = "<summary>"
Render = Callable[[Envelope], Optional[str]]


def _visible(envelopes: Iterable[Envelope], viewer: Optional[str], render: Render, named: bool) -> Iterable[tuple[Any, ...]]:
    """(envelope, message) for each substantive envelope `viewer` sees and `render` does not skip."""
    for e in envelopes:
        if e.event_type in SUBSTANTIVE and (viewer is None or e.visible_to(viewer)):
            m = _message(e, render, named)
            if m is not None:
                yield e, m


@dataclass(frozen=True)
class FullTranscript:
    named: bool = False
    name = "full_transcript"

    def project(self, envelopes: Iterable[Envelope], viewer: Optional[str] = None,
                render: Render = render_substantive) -> list[dict[str, Any]]:
        return [m for _, m in _visible(envelopes, viewer, render, self.named)]

    def project_log(self, vl: ViewerLog) -> Messages:
        return Messages(vl.messages)


@dataclass(frozen=True)
class WindowedSummary:
    recent_n: int = 10
    named: bool = False
    name = "windowed_summary"

    def __post_init__(self) -> None:
        if isinstance(self.recent_n, bool) or not isinstance(self.recent_n, int) or self.recent_n < 1:
            raise ValueError(f"recent_n must be a positive integer, got {self.recent_n!r}")

    def project(self, envelopes: Iterable[Envelope], viewer: Optional[str] = None,
                render: Render = render_substantive) -> list[dict[str, Any]]:
        window: deque[Any] = deque(maxlen=self.recent_n)
        earlier = 0
        senders: dict[str, int] = {}
        for e, m in _visible(envelopes, viewer, render, self.named):
            if len(window) == self.recent_n:
                old = window[0][0]
                earlier += 1
                senders[old.sender_id] = senders.get(old.sender_id, 0) + 1
            window.append((e, m))
        out = []
        if earlier:
            who = ", ".join(f"{s} ({n})" for s, n in sorted(senders.items()))
            plural = "s" if earlier > 1 else ""
            out.append({"sender": SUMMARY_SENDER,
                        "text": f"[{earlier} earlier message{plural} not shown; from {who}]"})
        out.extend(m for _, m in window)
        return out

    def project_log(self, vl: ViewerLog) -> list[dict[str, Any]]:
        msgs = vl.messages
        window = msgs[-self.recent_n:]
        earlier = len(msgs) - len(window)
        if not earlier:
            return window
        counts = dict(vl.counts)
        for m in window:
            counts[m["sender"]] -= 1
        who = ", ".join(f"{s} ({n})" for s, n in sorted(counts.items()) if n)
        plural = "s" if earlier > 1 else ""
        return [{"sender": SUMMARY_SENDER, "text": f"[{earlier} earlier message{plural} not shown; from {who}]"}] + window


def NamedFullTranscript() -> FullTranscript:
    return FullTranscript(named=True)


def NamedWindowedSummary(recent_n: int = 10) -> WindowedSummary:
    return WindowedSummary(recent_n=recent_n, named=True)


