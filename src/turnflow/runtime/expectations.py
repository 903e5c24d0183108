"""Expectation evaluators (docs/runtime.md, "Expectations"). Each returns a violation `(key, agent_id)` or None;
the key names the situation (expectation index + turn or silence epoch), so a violation
fires once: the hub records the key in the `expectation.violated` envelope and never fires
the same key again (also across a restart, since the key is in the log).

- `acks_within N`: the session is still INVITED N seconds after it was opened.
- `reply_within N`: a message is waiting for its reply (the expected speaker is not the
  last speaker) and N seconds passed since that message.
- `turn_within N`: the expected speaker has not spoken for N seconds since its turn began.
- `max_silence N`: no substantive envelope for N seconds (counted from activation).
A violation needs strictly more than N seconds to have passed.
"""

from __future__ import annotations

from typing import Optional

from turnflow.runtime.live import LiveSession
from turnflow.runtime.session import Expectation, SessionState

Violation = tuple[str, Optional[str]]  # (key, agent_id | None)


def evaluate(live: LiveSession, index: int, exp: Expectation, now: float) -> Optional[Violation]:
    md = live.metadata
    if exp.name == "acks_within":
        if md.state == SessionState.INVITED and now - md.created_at > exp.seconds:
            pending = sorted(md.pending_acks)
            return (f"{index}:acks", pending[0] if pending else None)
        return None
    if md.state != SessionState.ACTIVE:
        return None
    if exp.name == "max_silence":
        since = live.last_substantive_at if live.last_substantive_at is not None else md.activated_at
        if since is not None and now - since > exp.seconds:
            return (f"{index}:silence:{live.turn_count()}", None)
        return None
    started = live.turn_started_at
    if started is None or not now - started > exp.seconds:  # not late (yet): the adapter is not asked
        return None
    expected = live.expected_speaker()
    if expected is None:
        return None
    if exp.name == "reply_within":
        last = getattr(live.state, "last_speaker_id", None)
        if last is None or last == expected:
            return None
    return (f"{index}:turn:{live.turn_epoch}", expected)
