"""The transcript as AG2 1.2.1 (`ag2`) stream history (for `kind: ag2`): everything up to and
including this participant's last message is preloaded into a fresh `MemoryStream` — the
others' messages as `ModelRequest([TextInput("sender: text")])`, this participant's own as
`ModelResponse(ModelMessage(text))` — and what came after it is the turn's input (`ask`'s
messages); a transcript with nothing new gets `(the session has just started: begin)` or
`(it is your turn)`."""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.model_prompt import BEGIN, chat_turns


class AG2History:
    """The `HistoryConverter` of `kind: ag2`: raw history -> `(events, inputs)`, the stream's
    history events and the texts to `ask` with (a converter of your own returns the same pair)."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id

    def convert(self, raw: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
        return ag2_events(raw, self.agent_id)


async def to_ag2(msg: list[dict[str, Any]], agent_id: str, converter: Any = None) -> tuple[Any, list[str]]:
    """`(stream, inputs)`: the preloaded `MemoryStream` and the texts to `ask` with."""
    from ag2.stream import MemoryStream

    from turnflow.runtime.agents.history import raw_history

    events, inputs = (converter or AG2History(agent_id)).convert(raw_history(msg, agent_id))
    stream = MemoryStream()
    if events:
        await stream.history.replace(list(events))
    return stream, list(inputs)


def ag2_events(msg: list[dict[str, Any]], agent_id: str) -> tuple[list[Any], list[str]]:
    from ag2.events import ModelMessage, ModelRequest, ModelResponse, TextInput

    turns = chat_turns(msg, agent_id)
    last_own = max((i for i, (role, _) in enumerate(turns) if role == "assistant"), default=-1)
    past, new = turns[:last_own + 1], turns[last_own + 1:]
    events: list[Any] = [ModelResponse(ModelMessage(text)) if role == "assistant" else ModelRequest([TextInput(text)])
                         for role, text in past]
    inputs = [text for _, text in new] or [BEGIN if not turns else "(it is your turn)"]
    return events, inputs
