"""The transcript as AG2 1.2.1 (`ag2`) stream history (for `kind: ag2`): everything up to and
including this participant's last message is preloaded into a fresh `MemoryStream` — the
others' messages as `ModelRequest([TextInput("sender: text")])`, this participant's own as
`ModelResponse(ModelMessage(text))` — and what came after it is the turn's input (`ask`'s
messages); a transcript with nothing new gets `(the session has just started: begin)` or
`(it is your turn)`."""

from __future__ import annotations

from typing import Any

from turnflow.runtime.agents.model_prompt import BEGIN, chat_turns


async def to_ag2(msg: list[dict[str, Any]], agent_id: str) -> tuple[Any, list[str]]:
    """`(stream, inputs)`: the preloaded `MemoryStream` and the texts to `ask` with."""
    from ag2.events import ModelMessage, ModelRequest, ModelResponse, TextInput
    from ag2.stream import MemoryStream

    turns = chat_turns(msg, agent_id)
    last_own = max((i for i, (role, _) in enumerate(turns) if role == "assistant"), default=-1)
    past, new = turns[:last_own + 1], turns[last_own + 1:]
    events: list[Any] = [ModelResponse(ModelMessage(text)) if role == "assistant" else ModelRequest([TextInput(text)])
                         for role, text in past]
    stream = MemoryStream()
    if events:
        await stream.history.replace(events)
    inputs = [text for _, text in new] or [BEGIN if not turns else "(it is your turn)"]
    return stream, inputs
