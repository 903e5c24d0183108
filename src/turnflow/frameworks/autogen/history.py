"""The transcript as AutoGen AgentChat messages (for `kind: autogen`). An AgentChat agent keeps
its own model context between calls, so a turn delivers only what is new to it (`new_messages`:
what came after the last message delivered to it, found in the view even when its own last
message scrolled out of a window; the task and a window's summary line only on the first
delivery), each a `TextMessage(source=sender, content=text)`. The first delivery of a session
(`bootstrap`) starts with the session prompt (source `turnflow`); a turn with nothing new gets
`(the session has just started: begin)` or `(it is your turn)`."""

from __future__ import annotations

import re
from typing import Any

from turnflow.runtime.agents.model_prompt import BEGIN

_SOURCE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


PREFIX_SENDERS = ("<task>", "<summary>")


def new_messages(msg: Any, last: Any, bootstrap: bool) -> list[Any]:
    """The messages of `msg` after `last` (the last one delivered before: the same object, else an
    equal one, searched from the end); all of them when it is not there (a window scrolled past
    it: everything shown is newer). After the first delivery, never the task or a summary line."""
    items = list(msg)
    if bootstrap:
        return items
    start = next((i + 1 for i in range(len(items) - 1, -1, -1) if items[i] is last), None)
    if start is None:
        start = next((i + 1 for i in range(len(items) - 1, -1, -1) if items[i] == last), 0)
    return [m for m in items[start:] if not (isinstance(m, dict) and m.get("sender") in PREFIX_SENDERS)]


class AutoGenHistory:
    """The `HistoryConverter` of `kind: autogen`: the raw history of what is new to the agent ->
    `TextMessage`s (after the session prompt on the first delivery)."""

    def __init__(self, agent_id: str, prompt: str = "", bootstrap: bool = True) -> None:
        self.agent_id, self.prompt, self.bootstrap = agent_id, prompt, bootstrap

    def convert(self, raw: list[dict[str, Any]]) -> list[Any]:
        return to_autogen(raw, self.agent_id, self.prompt, self.bootstrap, only_new=False)


def to_autogen(msg: list[dict[str, Any]], agent_id: str, prompt: str, bootstrap: bool, only_new: bool = True) -> list[Any]:
    """`only_new`: keep what came after the agent's own last message (the caller has not chosen)."""
    from autogen_agentchat.messages import TextMessage

    items = [m for m in msg if isinstance(m, dict) and isinstance(m.get("text"), str) and m["text"]]
    last_own = max((i for i, m in enumerate(items) if m.get("sender") == agent_id), default=-1)
    new = items if bootstrap or not only_new else items[last_own + 1:]
    out: list[Any] = [TextMessage(content=prompt, source="turnflow")] if bootstrap else []
    for m in new:
        sender = str(m.get("sender") or "user")
        if sender == agent_id:
            continue
        out.append(TextMessage(content=m["text"] if _SOURCE.match(sender) else f"{sender}: {m['text']}",
                               source=sender if _SOURCE.match(sender) else "user"))
    if len(out) == (1 if bootstrap else 0):
        out.append(TextMessage(content=BEGIN if not items and (bootstrap or only_new) else "(it is your turn)",
                               source="turnflow"))
    return out
