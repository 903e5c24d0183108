"""The transcript as AutoGen AgentChat messages (for `kind: autogen`). An AgentChat agent keeps
its own model context between calls, so a turn delivers only what is new to it: the messages
after its own last one, each a `TextMessage(source=sender, content=text)`. The first delivery
of a session (`bootstrap`) starts with the session prompt (source `turnflow`); a turn with
nothing new gets `(the session has just started: begin)` or `(it is your turn)`."""

from __future__ import annotations

import re
from typing import Any

from turnflow.runtime.agents.model_prompt import BEGIN

_SOURCE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def to_autogen(msg: list[dict[str, Any]], agent_id: str, prompt: str, bootstrap: bool) -> list[Any]:
    from autogen_agentchat.messages import TextMessage

    items = [m for m in msg if isinstance(m, dict) and isinstance(m.get("text"), str) and m["text"]]
    last_own = max((i for i, m in enumerate(items) if m.get("sender") == agent_id), default=-1)
    new = items if bootstrap else items[last_own + 1:]
    out: list[Any] = [TextMessage(content=prompt, source="turnflow")] if bootstrap else []
    for m in new:
        sender = str(m.get("sender") or "user")
        if sender == agent_id:
            continue
        out.append(TextMessage(content=m["text"] if _SOURCE.match(sender) else f"{sender}: {m['text']}",
                               source=sender if _SOURCE.match(sender) else "user"))
    if len(out) == (1 if bootstrap else 0):
        out.append(TextMessage(content=BEGIN if not items else "(it is your turn)", source="turnflow"))
    return out
