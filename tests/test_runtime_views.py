"""Views: what a participant sees of the log for its turn."""

from __future__ import annotations

import pytest

from turnflow.runtime.envelope import EV_CONTEXT_SET, EV_PACKET, EV_TEXT, Envelope, packet
from turnflow.runtime.views import (SUMMARY_SENDER, FullTranscript, NamedFullTranscript, NamedWindowedSummary,
                                    WindowedSummary)

SID = "0" * 32


def log():
    out = []
    for i, who in enumerate(["a", "b", "c", "a", "b"]):
        out.append(Envelope(SID, who, None, EV_TEXT, {"text": f"m{i}"}))
    out.insert(2, Envelope(SID, "a", None, EV_CONTEXT_SET, {"set": {"k": 1}}))  # not substantive
    out.append(Envelope(SID, "c", ["a"], EV_TEXT, {"text": "secret for a"}))
    out.append(Envelope(SID, "a", None, EV_PACKET, packet("over to you", kind="handoff", tool="to_b")))
    return out


def test_full_transcript_keeps_every_visible_substantive_envelope():
    got = FullTranscript().project(log(), "b")
    assert [m["text"] for m in got] == ["m0", "m1", "m2", "m3", "m4", "[Handed off via to_b]\nover to you"]
    assert "secret for a" in [m["text"] for m in FullTranscript().project(log(), "a")]


def test_windowed_summary_keeps_the_last_n_and_one_summary_line():
    got = WindowedSummary(2).project(log(), "b")
    assert got[0] == {"sender": SUMMARY_SENDER, "text": "[4 earlier messages not shown; from a (2), b (1), c (1)]"}
    assert [m["text"] for m in got[1:]] == ["m4", "[Handed off via to_b]\nover to you"]
    assert WindowedSummary(10).project(log(), "b") == FullTranscript().project(log(), "b")


def test_named_variants_label_senders():
    assert [m["text"] for m in NamedFullTranscript().project(log()[:2], "a")] == ["[a] m0", "[b] m1"]
    got = NamedWindowedSummary(1).project(log()[:3], "a")
    assert [m["text"] for m in got] == ["[1 earlier message not shown; from a (1)]", "[b] m1"]


def test_window_must_be_positive():
    with pytest.raises(ValueError):
        WindowedSummary(0)
