"""`turnflow compile --target ag2-groupchat`: a workflow as classic AG2 GroupChat Python.

The code people migrate from, written back (AG2 0.9 `autogen`): one `ConversableAgent` per
participant, a `speaker_selection_method` function that routes each turn as turnflow's hub
does (the per-speaker dispatch table of `compiler/emit/pyroute.py`, read from the typed spec model),
`allowed_or_disallowed_speaker_transitions` holding the speaker graph it can take, an
`is_termination_msg` that ends the chat when the flow's rules terminate (the flow's close
reason kept in `OUTCOME`), and `max_round` = `max_turns` (AG2 counts the opening message, the
start speaker's first turn, as a round). Same input, same bytes.

Classic GroupChat has no shared context: a flow that reads or sets context is refused (TF303),
as are `expect` and `ttl` (see `TABLE`, docs/targets.md).
"""

from __future__ import annotations

from typing import Any

from turnflow.compiler.emit.pyroute import COMPARE_SOURCE, doc_text, Next, Routing, literal, routing, table
import builtins
import keyword

NAME = "ag2-groupchat"
FRAMEWORK = "AG2 GroupChat (classic)"

#: construct key (`emit/constructs.py`) → (what it becomes, True), or (why it is refused, False)
TABLE: dict[str, tuple[str, bool]] = {
    "workflow": ("a module building `groupchat` (a `GroupChat`) and `manager` (a `GroupChatManager`)", True),
    "other_kind": ("only a workflow block has a speaker graph to compile", False),
    "participant": ("a `ConversableAgent(name=NAME, description=...)` in the variable NAME (`agent_I` when NAME is a "
                    "Python keyword or builtin, or a name the module uses)", True),
    "reserved_name": ("an ordinary agent name", True),
    "non_identifier": ("the agent's name; its Python variable is `agent_I`", True),
    "tools": ("`TOOLS[NAME]`: the tool names whose call routes the turn (its other calls are its own work tools)", True),
    "initiator": ("`INITIATOR` (without one, the start speaker): the target of `initiator`", True),
    "start": ("`run(message)`: the start speaker opens the chat, its message is its first turn", True),
    "max_turns": ("`MAX_TURNS`: `is_termination_msg` ends the chat after N turns (`OUTCOME[\"reason\"]` is "
                  "`max_turns`) and `max_round` is N (AG2 counts the opening message, the start speaker's first turn); "
                  "no `max_turns`: `max_round` 100000, which migrates back as `max_turns 100000`", True),
    "context": ("classic GroupChat has no shared context variables", False),
    "handoff": ("a test `tool == \"TOOL\"` on the last message's routing tool (the first of its tool calls that "
                "is one of its speaker's `TOOLS`)", True),
    "rule": ("an `if last_speaker is A:` branch of the selection function", True),
    "rule_any": ("a test in every speaker's branch", True),
    "when_tool": ("`tool == \"T\"` (the first of the last message's tool calls that is one of its speaker's "
                  "`TOOLS`; any call when the flow declares none)", True),
    "when_context": ("classic GroupChat has no shared context variables", False),
    "when_compare": ("classic GroupChat has no shared context variables", False),
    "when_text": ("`\"...\" in content` (the last message's content; a reply without one, a tool call alone, "
                  "is sent with the text `\"\"`, where `GroupChat` would read `None`)", True),
    "when_logic": ("Python `and` / `or` / `not`", True),
    "priority": ("the order of the tests in a branch", True),
    "to_participant": ("`return AGENT`", True),
    "to_terminate": ("`is_termination_msg` ends the chat; the reason is `OUTCOME[\"reason\"]`", True),
    "to_stay": ("`return last_speaker`", True),
    "to_next": ("the next agent in declaration order", True),
    "to_previous": ("the speaker of the message before the last (round robin on the first turn)", True),
    "to_initiator": ("`return INITIATOR`", True),
    "otherwise": ("the last `return` of every branch", True),
    "expect": ("classic GroupChat has no turn deadlines", False),
    "ttl": ("classic GroupChat has no session lifetime", False),
    "dynamic_handoff": ("a classic agent's reply cannot name the next speaker", False),
    "finish": ("a classic agent's reply cannot end the chat with a reason", False),
}


#: names the generated module defines itself, and Python's builtins (`_compare` calls `isinstance`,
#: `str`, `float`, ...): an agent is never given one of them
_TAKEN = frozenset({"annotations", "Any", "Optional", "Union", "Agent", "name", "ANY_TOOL", "owned", "ROUTING_TOOLS",
                    "ConversableAgent", "GroupChat", "GroupChatManager", "LLM_CONFIG", "AGENTS", "TOOLS", "CONTEXT", "ctx",
                    "INITIATOR", "MAX_TURNS", "OUTCOME", "ALLOWED", "groupchat", "manager", "select_speaker",
                    "is_termination_msg", "message", "messages", "content", "tool", "text", "before",
                    "last_speaker", "last", "reason", "run", "calls", "call"}) | frozenset(dir(builtins))


def _variables(order: tuple[str, ...]) -> dict[str, str]:
    """Each participant's Python variable: its own name when that is a plain identifier the
    module does not use, else `agent_I`."""

    out: dict[str, str] = {}
    for i, s in enumerate(order):
        plain = s.isidentifier() and s.isascii() and not keyword.iskeyword(s) and not s.startswith("_")
        out[s] = s if plain and s not in _TAKEN and s != f"agent_{i}" else f"agent_{i}"
    if len(set(out.values())) != len(out):  # `agent_1` as a name meets participant 1's fallback
        out = {s: f"agent_{i}" for i, s in enumerate(order)}
    return out


def write(spec: Any, source: str = "<string>") -> str:
    """The module for `spec` (a `turnflow.spec.WorkflowSpec`); `source` names the .flow file."""
    r = routing(spec, text="content")
    names = _variables(r.order)
    parts = sorted(spec.participants, key=lambda p: p.order)
    title = f" ({doc_text(spec.title)})" if spec.title else ""
    source = doc_text(source)
    out = [f'"""The workflow `{spec.name}`{title} of {source}, as a classic AG2 GroupChat.\n\n'
           "Generated by `turnflow compile --target ag2-groupchat`; do not edit (compile the .flow again).\n"
           "Needs only `ag2` 0.9 (`autogen`) at run time. Give the agents their replies (an `llm_config`, or\n"
           "`register_reply`), then start the chat:\n\n"
           "    run(\"the start speaker's opening message\")   # its first turn\n"
           "    OUTCOME[\"reason\"]                            # the flow's close reason\n\n"
           "The flow's start speaker opens the chat (`run`): its opening message is its first turn. A\n"
           "message routes the turn by its content (`text contains`) and by the name of its first tool\n"
           "call (the flow's handoff and routing tools).\n"
           '"""\n']
    out.append("from __future__ import annotations\n\n"
               "from typing import Any, Optional, Union\n\n"
               "from autogen import Agent, ConversableAgent, GroupChat, GroupChatManager\n\n")
    out.append("LLM_CONFIG = False  # your model configuration, or register reply functions on the agents\n\n")
    for p in parts:
        head = f"{names[p.agent_id]} = ConversableAgent("
        out.append(f"{head}name={literal(p.agent_id)}, description={literal(p.description or p.agent_id)},\n"
                   f"{' ' * len(head)}llm_config=LLM_CONFIG, human_input_mode=\"NEVER\")\n")
    out.append("\nAGENTS = [" + ", ".join(names[s] for s in r.order) + "]\n")
    out.append(_FLOW_ENDS)
    routing_tools = sorted({t for ts in r.tools.values() for t in ts} if any(r.tools.values()) else
                           {c.args.tool_name for c in spec.knobs.graph.conditions() if c.name == "tool_called"})
    if routing_tools:
        out.append(f"#: the flow's routing tools: a call of one routes the turn and is consumed by the flow\n"
                   f"ROUTING_TOOLS = frozenset({{{', '.join(literal(t) for t in routing_tools)}}})\n"
                   + _CONSUMED)
    if any("text" in row.reads for rows in r.rows.values() for row in rows):
        out.append(_NO_TEXT)
    out.append("TOOLS = " + table([(literal(s), _tuple(r.tools[s])) for s in r.order]) + "\n")
    out.append(f"ANY_TOOL = {not any(r.tools.values())!r}  # True when the flow declares no tools: any tool name routes\n")
    out.append(f"INITIATOR = {names[r.initiator]}\n")
    out.append(f"MAX_TURNS: Optional[int] = {r.max_turns!r}\n")
    out.append(f"#: the flow's initial context, read-only here (a classic GroupChat has no shared context: TF303)\n"
               f"CONTEXT: dict[str, Any] = {literal(r.context)}\n")
    out.append("#: why the last chat ended, in the flow's words (None while it runs)\n")
    out.append("OUTCOME: dict[str, Optional[str]] = {\"reason\": None}\n")
    if r.compare:
        out.append("\n\n" + COMPARE_SOURCE)
    out.append(_SHARED)
    out.append("\n\n" + _selection(r, names))
    out.append("\n\n" + _termination(r, names))
    out.append("\n\n" + _chat(r, names))
    return "".join(out)


def _tuple(names: tuple[str, ...]) -> str:
    return "(" + ", ".join(literal(n) for n in names) + ("," if len(names) == 1 else "") + ")"


#: only the flow ends the chat: an AG2 agent picked to reply ends it itself (its reply None) after a
#: message that is exactly TERMINATE (its default `is_termination_msg`) or after 100 automatic
#: replies (`max_consecutive_auto_reply`); the hub knows neither. Set before each reply (a hook, not
#: constructor arguments: `turnflow migrate` reads those as the agent's own termination)
_FLOW_ENDS = '''

def _never_ends(message: Any) -> bool:
    """A participant's `is_termination_msg`: no message ends the chat by itself."""
    return False


def _flow_ends_the_chat(agent: Any, messages: Any) -> None:
    """Before `agent` replies: it never ends the chat itself; the flow does (`is_termination_msg`)."""
    agent._is_termination_msg = _never_ends
    agent.reset_consecutive_auto_reply_counter()


for _agent in AGENTS:
    _agent.register_hook("update_agent_state", _flow_ends_the_chat)

'''

#: a call of a routing tool is the flow's (it routes the turn, as on the hub, where no agent runs it): the
#: agents' replies read the chat without those calls (and without answers to them), so the next speaker
#: replies instead of running the call as a tool of its own ("Error: Function ... not found")
_CONSUMED = '''

def _without_routing_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat as an agent's reply reads it: the flow's routing tool (or function) calls taken out of
    each message, and the answers to them."""
    out: list[dict[str, Any]] = []
    consumed: set[Any] = set()
    for message in messages:
        calls = message.get("tool_calls") or []
        kept = [call for call in calls if (call.get("function") or {}).get("name") not in ROUTING_TOOLS]
        if len(kept) < len(calls):
            consumed.update(call.get("id") for call in calls if call not in kept)
            message = {key: value for key, value in message.items() if key != "tool_calls"}
            if kept:
                message["tool_calls"] = kept
        if (message.get("function_call") or {}).get("name") in ROUTING_TOOLS:  # a legacy function call
            message = {key: value for key, value in message.items() if key != "function_call"}
        answers = message.get("tool_responses") or []
        if message.get("role") == "tool" and answers and all(a.get("tool_call_id") in consumed for a in answers):
            continue
        if message.get("role") == "function" and message.get("name") in ROUTING_TOOLS:
            continue
        out.append(message)
    return out


for _agent in AGENTS:
    _agent.register_hook("process_all_messages_before_reply", _without_routing_calls)

'''

#: a reply without text (an LLM's tool call: `content` None) reads as the empty text, as on the hub;
#: `GroupChat.append` would cast None to the text "None", which `text contains "on"` matches
_NO_TEXT = '''
def _no_text_is_empty(sender: Any, message: Union[str, dict[str, Any]], recipient: Any,
                      silent: bool) -> Union[str, dict[str, Any]]:
    """A message without text (a tool call alone) is sent with the text "" (GroupChat would read "None")."""
    if isinstance(message, dict) and message.get("content") is None:
        return {**message, "content": ""}
    return message


for _agent in AGENTS:
    _agent.register_hook("process_message_before_send", _no_text_is_empty)

'''

_SHARED = '''

def _tool(message: dict[str, Any]) -> Optional[str]:
    """The routing tool of a message: the first of its tool calls (or its function call) naming one of
    its speaker's `TOOLS` (any, when the flow declares none). Its other calls are the agent's own
    work tools, which do not route (as on turnflow's hub, where they never reach the turn)."""
    calls = [call.get("function") or {} for call in message.get("tool_calls") or []]
    owned = TOOLS.get(message.get("name", ""), ())
    for call in calls or [message.get("function_call") or {}]:
        name = call.get("name")
        if isinstance(name, str) and (ANY_TOOL or name in owned):
            return name
    return None
'''


def _target(t: Next, names: dict[str, str], indent: str, reasons: bool) -> list[str]:
    if reasons:  # `_end_reason`: the close reason of an end, None for a next speaker
        return [f"{indent}return {literal(t.reason or 'workflow_terminated') if t.kind == 'end' else None}"]
    if t.kind == "agent":
        return [f"{indent}return {names[str(t.name)]}"]
    if t.kind == "end":
        return [f"{indent}return None  # terminate {literal(t.reason or 'workflow_terminated')}"]
    # `previous`: the speaker of the message before the last; on the first turn (the opening message
    # alone) the round-robin successor, as the flow's `previous` (what migrate reads back as `previous`)
    return [f"{indent}return groupchat.agent_by_name(messages[-2][\"name\"]) if len(messages) > 1 else "
            f"{names[str(t.name)]}"]


def _branches(r: Routing, names: dict[str, str], reasons: bool) -> list[str]:
    """The flow's rows per speaker as `if last_speaker is X:` branches (the same rows twice:
    `select_speaker` returns the next agent, `_end_reason` the close reason). Only the parts of
    the last message the rows read are taken (no unused local: the module is lint-clean)."""
    read = frozenset().union(*(row.reads for rows in r.rows.values() for row in rows))
    previous = not reasons and any(row.then.kind == "previous" for rows in r.rows.values() for row in rows)
    lines = []
    if read & {"text", "tool"} or previous:
        lines.append("    messages = groupchat.messages")
    if "text" in read:
        lines.append("    content = messages[-1][\"content\"]  # always a string: GroupChat.append casts it")
    if "tool" in read:
        lines.append("    tool = _tool(messages[-1])")
    if "ctx" in read:
        lines.append("    ctx = CONTEXT")
    for s in r.order:
        lines.append(f"    if last_speaker is {names[s]}:")
        for row in r.rows[s]:
            if row.cond is None:
                lines.extend(_target(row.then, names, "        ", reasons))
                break
            lines.append(f"        if {row.cond}:{row.noqa}")
            lines.extend(_target(row.then, names, "            ", reasons))
    lines.append("    return None")
    return lines


def _selection(r: Routing, names: dict[str, str]) -> str:
    return "\n".join([
        "def select_speaker(last_speaker: Agent, groupchat: GroupChat) -> Optional[Agent]:",
        "    \"\"\"The flow's rules for the speaker of the last message (None: the flow ends the chat).\"\"\"",
        *_branches(r, names, False)]) + "\n"


def _termination(r: Routing, names: dict[str, str]) -> str:
    lines = ["def _end_reason(last_speaker: Agent, groupchat: GroupChat) -> Optional[str]:",
             "    \"\"\"The flow's close reason when its rules end the chat after the last message, else None.\"\"\"",
             *_branches(r, names, True),
             "",
             "",
             "def is_termination_msg(message: dict[str, Any]) -> bool:",
             "    \"\"\"The chat ends when the flow's rules terminate (their reason) or after MAX_TURNS turns.\"\"\"",
             "    messages = groupchat.messages",
             "    last = groupchat.agent_by_name(messages[-1][\"name\"])",
             "    reason = _end_reason(last, groupchat)",
             "    if reason is None and MAX_TURNS is not None and len(messages) >= MAX_TURNS:",
             "        reason = \"max_turns\"",
             "    if reason is not None:",
             "        OUTCOME[\"reason\"] = reason",
             "    return reason is not None"]
    return "\n".join(lines) + "\n"


def _chat(r: Routing, names: dict[str, str]) -> str:
    edges = []
    for s in r.order:
        succ: list[str] = []
        for row in r.rows[s]:
            t = row.then
            cands = [str(t.name)] if t.kind == "agent" else list(r.order) if t.kind == "previous" else []
            for c in cands:
                if c not in succ:
                    succ.append(c)
        edges.append(f"    {names[s]}: [{', '.join(names[c] for c in succ)}],")
    has_edges = any(not e.endswith("[],") for e in edges)
    lines = ["#: the speaker graph: who may speak after whom (`select_speaker` decides which)"]
    lines.append("ALLOWED = {\n" + "\n".join(edges) + "\n}" if has_edges else "ALLOWED = None")
    # AG2 appends one message per round, the opening one (the start speaker's first turn) included,
    # and stops after max_round of them: max_round N is N turns, as `turnflow migrate` reads it back.
    # is_termination_msg runs first on the N-th (so OUTCOME says max_turns); no max_turns: a backstop
    max_round = 100_000 if r.max_turns is None else r.max_turns
    lines += ["",
              "groupchat = GroupChat(",
              "    agents=AGENTS,",
              "    messages=[],",
              f"    max_round={max_round},",
              "    speaker_selection_method=select_speaker,",
              *(["    allowed_or_disallowed_speaker_transitions=ALLOWED,",
                 "    speaker_transitions_type=\"allowed\","] if has_edges else []),
              ")",
              "manager = GroupChatManager(groupchat=groupchat, llm_config=False, is_termination_msg=is_termination_msg)",
              "",
              "",
              "def run(message: Union[str, dict[str, Any]]) -> Any:",
              "    \"\"\"The chat: the flow's start speaker opens it with `message`, its first turn (a string, or a",
              "    message dict with `tool_calls`); `OUTCOME[\"reason\"]` says why it ended.\"\"\"",
              "    OUTCOME[\"reason\"] = None",
              "    groupchat.reset()  # a new chat: the selection reads this chat's messages only",
              f"    return {names[r.start]}.initiate_chat(manager, message=message)"]
    return "\n".join(lines) + "\n"
