"""Pluggable history (docs/agents.md, "History converters"): the raw history an agent's turn is
given, and the `HistoryConverter` protocol that turns it into a framework's message types.

Raw history (`raw_history`) is the participant's view of the session, one mapping per message,
with the contract's fields beside turnflow's own (`sender`, `text`):
- `role`: `assistant` for this participant's own messages, `user` for everyone else's;
- `content`: the message text;
- `sender_name`: who sent it (a participant, `<task>` for the run's task, `<summary>` for a
  windowed view's summary line);
- `sender_type`: `User` for the task (what the person running the session asked), `Agent` for a
  participant, `System` for the view's summary line;
- `message_type`: `text` (the view shows messages; tool calls and results are telemetry, not
  history).

A converter is any object with `convert(raw) -> framework messages`. The three framework
participants use `LangChainHistory`, `AutoGenHistory` and `AG2History` unless the agents file
names another (`history_converter: "module:attribute"`, a class taking no arguments or an
object); any agent reads the result as `tools.history` (the raw history when it has none).
"""

from __future__ import annotations

from typing import Any, Generic, Optional, Protocol, TypeVar, runtime_checkable

T = TypeVar("T", covariant=True)
TASK_SENDER = "<task>"  # as runtime.runner names the task's message
SUMMARY_SENDER = "<summary>"  # as runtime.views names a window's summary line


@runtime_checkable
class HistoryConverter(Protocol, Generic[T]):
    """`convert(raw)`: the raw history of a turn (`raw_history`) as the framework's messages."""

    def convert(self, raw: list[dict[str, Any]]) -> T: ...


def sender_type(sender: str) -> str:
    return "User" if sender == TASK_SENDER else "System" if sender == SUMMARY_SENDER else "Agent"


def raw_history(msg: Any, agent_id: str) -> list[dict[str, Any]]:
    """The raw history of one turn: each message of `msg` with the contract's fields added (new
    mappings; the view's own are shared and never changed)."""
    out: list[dict[str, Any]] = []
    for m in msg:
        if not isinstance(m, dict) or not isinstance(m.get("text"), str):
            continue
        sender = str(m.get("sender") or "user")
        out.append({**m, "role": "assistant" if sender == agent_id else "user", "content": m["text"],
                    "sender_name": sender, "sender_type": sender_type(sender), "message_type": "text"})
    return out


def converter_of(obj: Any, where: str) -> Any:
    """A converter from what the agents file's `history_converter` names: an object with
    `convert`, or a class taking no arguments that makes one. `ValueError` saying why not."""
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:  # the user's constructor
            raise ValueError(f"{where}: cannot make a history converter from {obj.__name__}(): "
                             f"{type(exc).__name__}: {exc}") from None
    if not callable(getattr(obj, "convert", None)):
        raise ValueError(f"{where}: a history converter needs a `convert(raw)` method, got {type(obj).__name__}")
    return obj


def convert(converter: Optional[Any], raw: list[dict[str, Any]]) -> Any:
    return raw if converter is None else converter.convert(raw)
