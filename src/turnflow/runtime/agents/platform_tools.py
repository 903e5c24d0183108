"""The platform tool table (docs/agents.md §2, docs/contracts.md §2) and the answers the tools give.

One table, `PLATFORM_TOOLS`, names every platform tool with its description and JSON-schema
parameters: `SessionTools.get_tool_schemas` lists it (after the participant's routing tools)
and `SessionTools.execute_tool_call` dispatches on it, so a tool a model is shown is a tool it
can call by name, with the arguments it was shown.

Every tool answers with a value that is also awaitable (`ToolText`, `ToolList`, `PeerPage`):
a function agent calls `tools.send_message("hi")`, an async adapter written to the contract
calls `await tools.send_message("hi")`, and both run the same code once — awaiting only hands
back the value already computed.
"""

from __future__ import annotations

from typing import Any, Generator

#: the telemetry events an agent may report with `send_event` (the first six are also what a
#: model is offered: `tool_call` / `tool_result` are for adapters reporting their own tool loop)
MODEL_EVENT_TYPES = ("thought", "task", "error", "progress", "env_action", "tool_response")
ADAPTER_EVENT_TYPES = ("tool_call", "tool_result")
#: session kinds whose roster is open (add/remove participants, create a chatroom from them)
OPEN_MEMBERSHIP = ("conversation", "discussion")
CHATROOM_KIND = "discussion"  # what `create_chatroom` opens
PEER_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


async def _ready(value: Any) -> Any:
    return value


class ToolText(str):
    """A tool's answer as text, also awaitable (`await tools.send_message(...)` gives the same text)."""

    def __await__(self) -> Generator[Any, None, "ToolText"]:
        return _ready(self).__await__()


class ToolList(list):  # type: ignore[type-arg]
    """A tool's answer as a list, also awaitable."""

    def __await__(self) -> Generator[Any, None, "ToolList"]:
        return _ready(self).__await__()


class PeerPage(ToolList):
    """One page of `lookup_peers`: the peers (a list of `{agent_id, role, description, in_session}`)
    with `page` (1-based), `page_size`, `total` and `has_more`."""

    def __init__(self, peers: list[dict[str, Any]], page: int, page_size: int, total: int) -> None:
        super().__init__(peers)
        self.page, self.page_size, self.total = page, page_size, total
        self.has_more = page * page_size < total

    def to_dict(self) -> dict[str, Any]:
        return {"peers": list(self), "page": self.page, "page_size": self.page_size, "total": self.total,
                "has_more": self.has_more}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_STR = {"type": "string"}
_ANY = {"description": "any JSON value (string, number, boolean, null, array or object)"}
_NAMES = {"type": "array", "items": {"type": "string"}}

#: name -> (description, parameters, required): the platform tools, in the order they are listed
PLATFORM_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "send_message": ("Add a message to your turn's reply (several calls are joined by new lines); `mentions` "
                     "names the participants it addresses. Does not end your turn.",
                     _obj({"content": {**_STR, "description": "the message text"},
                           "mentions": {**_NAMES, "description": "participants addressed"}}, ["content"])),
    "send_event": ("Record an event beside the conversation (not a message to the others): `thought` (your "
                   "reasoning), `task` (progress on a long task), `error` (a failure). Does not end your turn.",
                   _obj({"content": {**_ANY, "description": "what happened"},
                         "message_type": {"type": "string", "enum": list(MODEL_EVENT_TYPES),
                                          "description": "the kind of event (default thought)"},
                         "metadata": {"type": "object", "description": "extra facts about the event"}},
                        ["content"])),
    "set_context": ("Set a shared context variable of the session (the flow's rules read them). Takes effect "
                    "when your turn ends; does not end your turn.",
                    _obj({"key": {**_STR, "description": "the variable's name"}, "value": _ANY}, ["key", "value"])),
    "delete_context": ("Remove a shared context variable of the session. Does not end your turn.",
                       _obj({"key": {**_STR, "description": "the variable's name"}}, ["key"])),
    "handoff": ("Give the next turn to another participant. Ends your turn.",
                _obj({"target": {**_STR, "description": "the participant who speaks next"},
                      "reason": {**_STR, "description": "why"}}, ["target"])),
    "finish": ("End the whole session now, with a short close reason; `summary` is your last message.",
               _obj({"reason": {**_STR, "description": "the close reason"},
                     "summary": {**_STR, "description": "a last message"}}, [])),
    "get_participants": ("The names of the session's participants, in order.", _obj({}, [])),
    "lookup_peers": ("Agents that could take part: every agent this hub knows (participants or not), one page "
                     "at a time, as {peers, page, page_size, total, has_more}.",
                     _obj({"page": {"type": "integer", "minimum": 1, "description": "1-based page (default 1)"},
                           "page_size": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE,
                                         "description": f"peers per page (default {PEER_PAGE_SIZE})"}}, [])),
    "add_participant": ("Bring an agent into this session; it takes part from the next turn.",
                        _obj({"name": {**_STR, "description": "the agent's name (see lookup_peers)"},
                              "role": {**_STR, "description": "its role: member (the default) or respondent"},
                              "description": {**_STR, "description": "what it is for"}}, ["name"])),
    "remove_participant": ("Remove a participant from this session; it takes no further turns.",
                           _obj({"name": {**_STR, "description": "the participant's name"}}, ["name"])),
    "create_chatroom": ("Open a new discussion session named `name`, with you and `participants` (default: this "
                        "session's other participants); it opens when your turn ends.",
                        _obj({"name": {**_STR, "description": "the new session's name"},
                              "participants": {**_NAMES, "description": "who takes part besides you"}}, ["name"])),
}
#: tools whose use changes the roster or opens sessions: listed only where the session's kind allows them
MEMBERSHIP_TOOLS = ("add_participant", "remove_participant", "create_chatroom")
#: context variables exist in a workflow only
CONTEXT_TOOLS = ("set_context", "delete_context")


#: arguments a tool also takes under another name (turnflow's before the integration guide's)
ALIASES = {"add_participant": {"agent_id": "name"}, "remove_participant": {"agent_id": "name"}}


def argument_problem(name: str, args: dict[str, Any]) -> "str | None":
    """Why `args` do not fit tool `name`'s parameters (unknown or missing argument), or None.
    An alias (`ALIASES`) stands for its argument."""
    aliases = ALIASES.get(name, {})
    if any(a in args and to in args for a, to in aliases.items()):
        return f"{name}: give the participant's name once (`name` or `agent_id`, not both)"
    args = {aliases.get(k, k): v for k, v in args.items()}
    params = PLATFORM_TOOLS[name][1]
    props, required = params["properties"], params["required"]
    extra = sorted(str(k) for k in args if k not in props)
    if extra:
        return f"{name}: unknown argument {extra[0]!r} (it takes {', '.join(props) or 'none'})"
    missing = [k for k in required if k not in args]
    if missing:
        return f"{name}: missing argument {missing[0]!r}"
    return None


def schema_names(session_kind: str) -> list[str]:
    """The platform tools `get_tool_schemas` lists in a session of `session_kind` ("" unknown: all):
    the membership tools only where the roster is open (conversation, discussion), the context
    tools only in a workflow. `execute_tool_call` still runs the others by name, and refuses them
    with the session's reason."""
    if not session_kind:
        return list(PLATFORM_TOOLS)
    left_out = (() if session_kind in OPEN_MEMBERSHIP else MEMBERSHIP_TOOLS) + \
        (() if session_kind == "workflow" else CONTEXT_TOOLS)
    return [n for n in PLATFORM_TOOLS if n not in left_out]


def platform_schema(name: str, fmt: str) -> dict[str, Any]:
    desc, params = PLATFORM_TOOLS[name]
    if fmt == "openai":
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": params}}
    return {"name": name, "description": desc, "input_schema": params}
