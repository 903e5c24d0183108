"""The system prompt of a model agent and its transcript as chat turns (docs/agents.md §2,
"The system prompt"). Sections are separated by one blank line; a section with nothing to say
is left out:

    <system from the agents file, or "You are NAME, a participant in a multi-agent session.">

    Session: KIND "NAME" — TITLE
    You are NAME: DESCRIPTION
    Participants:
    - user (initiator)
    - triage (you): Classifies the request
    - billing: Invoices, refunds, payment methods

    Task:
    TASK TEXT

    Context variables (initial values): resolved = false

    Your turn ends when you reply with text, or when you route it with one call to a routing
    tool: transfer_to_billing, handoff, finish. set_context and delete_context change the
    shared context and do not end your turn.

Without a handshake context (an agent used outside a session) the prompt is the first line
and `You are NAME. Other participants: A, B.`
"""

from __future__ import annotations

import json
from typing import Any, Optional

from turnflow.runtime.agents.contract import AgentContext, RosterEntry
from turnflow.runtime.agents.model_tools import ModelTools


def _value(v: Any) -> str:
    return "(unset)" if v is None else json.dumps(v, ensure_ascii=False)


def system_prompt(agent_id: str, system: Optional[str], ctx: Optional[AgentContext], toolset: ModelTools,
                  participants: Any = ()) -> str:
    base = system if system else f"You are {agent_id}, a participant in a multi-agent session."
    if ctx is None:
        others = [p for p in participants if p != agent_id]
        return f"{base}\nYou are {agent_id}. Other participants: {', '.join(others) or 'none'}."
    sections = [base, _session_section(agent_id, ctx)]
    if ctx.task:
        sections.append(f"Task:\n{ctx.task}")
    if ctx.context_vars and toolset.context_names:
        sections.append("Context variables (initial values): "
                        + ", ".join(f"{k} = {_value(v)}" for k, v in ctx.context_vars))
    how = _turn_section(toolset)
    if how:
        sections.append(how)
    return "\n\n".join(sections)


def _session_section(agent_id: str, ctx: AgentContext) -> str:
    """The session's kind, name and title, who this agent is, and the participants."""
    head = f"Session: {ctx.kind}" + (f' "{ctx.name}"' if ctx.name else "") + (f" — {ctx.title}" if ctx.title else "")
    lines = [head, f"You are {agent_id}: {ctx.description}" if ctx.description else f"You are {agent_id}."]
    roster = ctx.roster or tuple({"agent_id": p, "role": "participant", "description": ""} for p in ctx.participants)
    lines.append("Participants:")
    for r in roster:
        lines.append(_roster_line(agent_id, r))
    return "\n".join(lines)


def _roster_line(agent_id: str, r: RosterEntry) -> str:
    """`- NAME (ROLE, you): DESCRIPTION`, the tags and description left out when empty."""
    tags = [t for t in (r["role"] if r["role"] != "participant" else "", "you" if r["agent_id"] == agent_id else "")
            if t]
    label = r["agent_id"] + (f" ({', '.join(tags)})" if tags else "")
    return f"- {label}: {r['description']}" if r["description"] else f"- {label}"


def _turn_section(toolset: ModelTools) -> str:
    """How the turn ends and which tools change the context; empty when the agent has no tools."""
    routing = toolset.routing_names
    if not routing and not toolset.context_names:
        return ""
    how = "Your turn ends when you reply with text"
    how += (f", or when you route it with one call to a routing tool: {', '.join(routing)}." if routing else ".")
    if toolset.context_names:
        how += f" {' and '.join(toolset.context_names)} change the shared context and do not end your turn."
    return how


def chat_turns(msg: list[dict[str, Any]], agent_id: str) -> list[tuple[str, str]]:
    """The projected transcript as (role, text): this agent's messages are `assistant`, the
    others' `user`, prefixed `sender: `; empty messages are skipped."""
    out: list[tuple[str, str]] = []
    for m in msg:
        text = m.get("text") if isinstance(m, dict) else None
        if not isinstance(text, str) or not text:
            continue
        if m.get("sender") == agent_id:
            out.append(("assistant", text))
        else:
            out.append(("user", f"{m.get('sender') or 'user'}: {text}"))
    return out


BEGIN = "(the session has just started: begin)"
