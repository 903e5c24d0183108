"""The framework-integration guide's adapter hooks (docs/contracts.md §5, docs/agents.md §1): an
agent written with

    async def on_started(self, agent_name, agent_description) -> None
    async def on_message(self, msg, tools, history, participants_msg, *, is_session_bootstrap, room_id) -> None
    async def on_cleanup(self, room_id) -> None

runs as it is. `protocol.as_agent` reads the shape once (`hooked`): `on_started` is called once
per agent, before its first handshake (an agent without `open_session` / `aopen_session` then
answers the default capabilities); `on_message` gets the message this turn answers as a
`PlatformMessage`, the history before it (converted by the agent's `history_converter`, raw
without one), `participants_msg`, `is_session_bootstrap` and the session id as `room_id`;
`on_cleanup(room_id)` is its `close_session` when it has none.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any, Callable, Generic, Optional, TypeVar

H = TypeVar("H")

#: the guide's `on_message` parameters after `msg, tools`: an `on_message` naming any of them is hooked
HOOK_PARAMS = ("history", "participants_msg", "is_session_bootstrap", "room_id")


@dataclass(frozen=True)
class PlatformMessage:
    """The message a turn answers, as the guide's `on_message(msg, ...)` gets it: `id` (its
    1-based position in this participant's view), `content`, `sender_name` (a participant,
    `<task>` for the run's task), `sender_type` (`User` for the task, `Agent`, `System`) and
    `message_type` (`text`). `format_for_llm()` is `[sender_name]: content`."""

    id: str = ""
    content: str = ""
    sender_name: str = ""
    sender_type: str = "User"
    message_type: str = "text"

    def format_for_llm(self) -> str:
        return f"[{self.sender_name}]: {self.content}" if self.sender_name else self.content


def hooked(on_message: Any) -> bool:
    """Whether `on_message` is written with the guide's signature (it names `history`,
    `participants_msg`, `is_session_bootstrap` or `room_id`)."""
    try:
        params = inspect.signature(on_message).parameters
    except (TypeError, ValueError):
        return False
    return any(p in params for p in HOOK_PARAMS)


def split_turn(msg: Any, agent_id: str) -> tuple[PlatformMessage, list[Any]]:
    """The message this turn answers (the latest in the view not sent by `agent_id`, never a
    windowed view's summary line; an empty message when there is none) and the view without it,
    in order."""
    from turnflow.runtime.agents.history import SUMMARY_SENDER, sender_type

    items = list(msg) if isinstance(msg, (list, tuple)) else []
    for i in range(len(items) - 1, -1, -1):
        m = items[i]
        if isinstance(m, dict) and isinstance(m.get("text"), str) and m.get("sender") not in (agent_id,
                                                                                              SUMMARY_SENDER):
            sender = str(m.get("sender") or "user")
            return (PlatformMessage(str(i + 1), m["text"], sender, sender_type(sender)),
                    items[:i] + items[i + 1:])
    return PlatformMessage(sender_type="System"), items


async def run_hooked(on_message: Callable[..., Any], converter: Optional[Any], msg: Any, tools: Any) -> None:
    """One turn of an agent with the guide's `on_message`."""
    from turnflow.runtime.agents.history import TASK_SENDER, convert, raw_history

    pm, before = split_turn(msg, tools.agent_id)
    said = tools.turn_input if pm.sender_name and pm.sender_name != TASK_SENDER else None
    if isinstance(said, str) and said:  # the session adapter's `extract_turn_input`, without the view's decoration
        pm = replace(pm, content=said)
    history = convert(converter, raw_history(before, tools.agent_id))
    answer = on_message(pm, tools, history, tools.participants_msg,
                        is_session_bootstrap=tools.is_session_bootstrap, room_id=tools.session_id)
    if inspect.isawaitable(answer):
        await answer


class SimpleAdapter(Generic[H]):
    """A base for an agent written as the guide's adapter (`turnflow.runtime.agents.SimpleAdapter`;
    not the session adapter base of `runtime/adapters/simple.py`): keeps `history_converter`
    (None: `history` is the raw history), records `agent_name` / `agent_description` in
    `on_started`, and `on_cleanup` does nothing. Subclasses write `on_message`."""

    def __init__(self, history_converter: Optional[Any] = None) -> None:
        self.history_converter = history_converter
        self.agent_name = ""
        self.agent_description = ""

    async def on_started(self, agent_name: str, agent_description: str) -> None:
        self.agent_name, self.agent_description = agent_name, agent_description

    async def on_message(self, msg: PlatformMessage, tools: Any, history: H, participants_msg: Optional[str], *,
                         is_session_bootstrap: bool, room_id: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement on_message")

    async def on_cleanup(self, room_id: str) -> None:
        return None
