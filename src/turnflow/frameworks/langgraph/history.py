"""The transcript as LangChain messages (for `kind: langgraph`): the session prompt as a
`SystemMessage`, this participant's own messages as `AIMessage`, everyone else's as
`HumanMessage` prefixed `sender: ` and carrying `name=sender`; a transcript with nothing to
answer gets `(the session has just started: begin)`."""

from __future__ import annotations

import re
from typing import Any

from turnflow.runtime.agents.model_prompt import BEGIN, chat_turns


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what chat APIs accept as a message's `name`


def to_langchain(msg: list[dict[str, Any]], agent_id: str, prompt: str) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    out: list[Any] = [SystemMessage(content=prompt)]
    for m in msg:
        for role, text in chat_turns([m], agent_id):
            if role == "assistant":
                out.append(AIMessage(content=text, name=agent_id))
            else:
                sender = str(m.get("sender") or "")
                out.append(HumanMessage(content=text, name=sender) if _NAME.match(sender) else HumanMessage(content=text))
    if len(out) == 1 or isinstance(out[-1], AIMessage):
        out.append(HumanMessage(content=BEGIN if len(out) == 1 else "(it is your turn)"))
    return out


class LangChainHistory:
    """The `HistoryConverter` of `kind: langgraph`: raw history -> LangChain messages. With
    `continuing` (the graph's checkpointer already holds this thread), only what came after this
    participant's own last message, without the system prompt: the graph remembers the rest."""

    def __init__(self, agent_id: str, prompt: str = "", continuing: bool = False) -> None:
        self.agent_id, self.prompt, self.continuing = agent_id, prompt, continuing

    def convert(self, raw: list[dict[str, Any]]) -> list[Any]:
        if not self.continuing:
            return to_langchain(raw, self.agent_id, self.prompt)
        last_own = max((i for i, m in enumerate(raw) if m.get("sender") == self.agent_id), default=-1)
        return to_langchain(raw[last_own + 1:], self.agent_id, self.prompt)[1:]


def text_of(message: Any) -> str:
    """The text of a LangChain message (a string, or the text blocks of a content list)."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b if isinstance(b, str) else str(b.get("text") or "") for b in content
                       if isinstance(b, (str, dict)) and (isinstance(b, str) or b.get("type") == "text"))
    return ""
