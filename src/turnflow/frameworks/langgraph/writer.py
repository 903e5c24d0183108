"""`turnflow compile --target langgraph`: a workflow as a standalone LangGraph module.

The module imports only `langgraph` (never turnflow) and holds `build(agents)`, which
returns a compiled `StateGraph`: one node per participant that calls the user's agent and
routes the turn exactly as turnflow's hub does (docs/targets.md): the flow's rules per
speaker in evaluation order (`emit/pyroute.py`, from the typed spec model), handoff tools,
context conditions, `otherwise`, `previous`, termination reasons, `max_turns` as a counter in
the state. Written from the session spec model, never from the AST; same input, same bytes.

`TABLE` says what each `.flow` construct becomes here and whether that is exact; the
`langgraph` profile check (TF302) refuses the inexact ones, and docs/targets.md is generated
from it.
"""

from __future__ import annotations

from typing import Any

from turnflow.compiler.emit.pyroute import COMPARE_SOURCE, doc_text, Routing, literal, routers_source, routing, table

NAME = "langgraph"
FRAMEWORK = "LangGraph"

#: construct key (`emit/constructs.py`) → (what it becomes, True), or (why it is refused, False)
TABLE: dict[str, tuple[str, bool]] = {
    "workflow": ("a module whose `build(agents)` returns a compiled `StateGraph`", True),
    "other_kind": ("only a workflow block has a speaker graph to compile", False),
    "participant": ("a node calling `agents[NAME](state)`; the description is in `DESCRIPTIONS`", True),
    "reserved_name": ("LangGraph reserves the node names `__start__` and `__end__`", False),
    "non_identifier": ("a node name like any other (LangGraph node names are strings)", True),
    "tools": ("`TOOLS[NAME]`: the routing tools the node accepts in a step's `tool`", True),
    "initiator": ("`INITIATOR` (without one, the start speaker, as on the hub): the target of `initiator`", True),
    "start": ("the edge `START -> NAME`", True),
    "max_turns": ("`MAX_TURNS`: the state's `turns` counter ends the run with reason `max_turns`", True),
    "context": ("`CONTEXT`, the state's initial `context`", True),
    "handoff": ("a routing test `tool == \"TOOL\"` in the source's router", True),
    "rule": ("a row of the source's router", True),
    "rule_any": ("a row of every participant's router", True),
    "when_tool": ("`tool == \"T\"` (the step's `tool`)", True),
    "when_context": ("`ctx.get(\"K\") == V`", True),
    "when_compare": ("`_compare(ctx.get(\"K\"), OP, V, LEN)` (the language's comparison, emitted in the module)",
                     True),
    "when_text": ("`\"...\" in text` (the step's `say`)", True),
    "when_logic": ("Python `and` / `or` / `not`", True),
    "priority": ("the order of the router's rows", True),
    "to_participant": ("the next node", True),
    "to_terminate": ("`END`, the state's `reason` set to the reason", True),
    "to_stay": ("the same node again", True),
    "to_next": ("the next participant in declaration order (a constant per node)", True),
    "to_previous": ("the state's `speaker` before this turn (round robin on the first turn)", True),
    "to_initiator": ("the `INITIATOR` node", True),
    "otherwise": ("the last row of every router", True),
    "expect": ("LangGraph has no turn deadlines", False),
    "ttl": ("LangGraph has no session lifetime", False),
    "dynamic_handoff": ("a step's `handoff`: that node next", True),
    "finish": ("a step's `finish`: `END` with that reason (`finished` when empty)", True),
}

_STEP_DOC = '''\
An agent is a callable `agent(state) -> step` (sync; the state is read-only to it). A step is
a string (the turn's text) or a mapping with any of these keys, the same mapping a turnflow
`FunctionAgent` returns:

    say      the turn's text (what `text contains` reads)
    tool     a routing tool of this participant (`TOOLS[name]`; any name when the flow declares none)
    handoff  a participant: it speaks next, whatever the rules say
    finish   a close reason: the run ends with it (`finished` when empty)
    set      context updates {key: JSON value}
    delete   context keys to remove (a name or a list; a key both set and deleted is deleted)

A step with none of these is an error, as are a tool the participant does not own, a
handoff to a non-participant and a context value that is no JSON value: the node raises `StepError` (turnflow's hub would retry the turn
once, then close the session with `agent_error`).

The state (`State`): `transcript` (one record per turn: speaker, text, tool, next, reason,
context after the turn), `context`, `turns`, `speaker` (who spoke last), `next` (who speaks
next), `reason` (why the run ended; None while it runs). Start a run with
`graph.invoke(initial_state(task))`.'''


def write(spec: Any, source: str = "<string>") -> str:
    """The module for `spec` (a `turnflow.spec.WorkflowSpec`); `source` names the .flow file."""
    r = routing(spec)
    out: list[str] = []
    title = f" ({doc_text(spec.title)})" if spec.title else ""
    source = doc_text(source)
    out.append(f'"""The workflow `{spec.name}`{title} of {source}, as a LangGraph graph.\n\n'
               "Generated by `turnflow compile --target langgraph`; do not edit (compile the .flow again).\n"
               "Needs only `langgraph` at run time.\n\n"
               f"    graph = build({{{', '.join(f'{literal(p)}: ...' for p in r.order)}}})\n"
               "    final = graph.invoke(initial_state(\"the task\"))\n"
               "    final[\"reason\"], final[\"context\"], [t[\"speaker\"] for t in final[\"transcript\"]]\n\n"
               + _STEP_DOC + '\n"""\n')
    out.append("from __future__ import annotations\n\n"
               "import json\n"
               "from collections.abc import Hashable\n"
               "from typing import Any, Callable, Optional, TypedDict\n\n"
               "from langgraph.graph import END, START, StateGraph\n\n")
    out.append(_constants(spec, r))
    out.append(_state_source())
    if r.compare:
        out.append("\n" + COMPARE_SOURCE)
    out.append(routers_source(r))
    out.append(_RUNTIME)
    return "".join(out)


def _constants(spec: Any, r: Routing) -> str:
    parts = sorted(spec.participants, key=lambda p: p.order)
    lines = [
        f"PARTICIPANTS = {_tuple(r.order)}",
        "DESCRIPTIONS = " + table([(literal(p.agent_id), literal(p.description)) for p in parts]),
        "TOOLS = " + table([(literal(s), _tuple(r.tools[s])) for s in r.order]),
        f"ANY_TOOL = {not any(r.tools.values())!r}  # True when the flow declares no tools: any tool name routes",
        f"INITIATOR = {literal(r.initiator)}",
        f"START_SPEAKER = {literal(r.start)}",
        f"MAX_TURNS: Optional[int] = {r.max_turns!r}",
        f"CONTEXT: dict[str, Any] = {literal(r.context)}",
        f"RECURSION_LIMIT = {(r.max_turns if r.max_turns is not None else 100_000) + 1}",
    ]
    return "\n".join(lines) + "\n"


def _tuple(names: tuple[str, ...]) -> str:
    return "(" + ", ".join(literal(n) for n in names) + ("," if len(names) == 1 else "") + ")"


def _state_source() -> str:
    return '''

class State(TypedDict, total=False):
    task: Optional[str]
    transcript: list[dict[str, Any]]
    context: dict[str, Any]
    turns: int
    speaker: Optional[str]
    next: Optional[str]
    reason: Optional[str]


class StepError(ValueError):
    """An agent returned a step the flow cannot take."""


def initial_state(task: Optional[str] = None) -> State:
    return {"task": task, "transcript": [], "context": dict(CONTEXT), "turns": 0, "speaker": None,
            "next": START_SPEAKER, "reason": None}
'''


_RUNTIME = '''

def _step(speaker: str, raw: Any) -> tuple[str, Optional[str], Optional[str], Optional[str], dict[str, Any],
                                           list[str]]:
    """(text, tool, handoff, finish, set, delete) of an agent's step, checked."""
    if isinstance(raw, str):
        raw = {"say": raw}
    if not isinstance(raw, dict):
        raise StepError(f"{speaker}: a step is a string or a mapping, got {raw!r}")
    unknown = sorted(str(k) for k in raw if k not in ("say", "tool", "handoff", "finish", "set", "delete"))
    if unknown:
        raise StepError(f"{speaker}: unknown step key {unknown[0]!r}")
    for k in ("say", "tool", "handoff", "finish"):
        if k in raw and not isinstance(raw[k], str):
            raise StepError(f"{speaker}: step {k!r} must be a string, got {raw[k]!r}")
    text, tool, handoff, finish = raw.get("say", ""), raw.get("tool"), raw.get("handoff"), raw.get("finish")
    sets = raw.get("set") or {}
    dels = raw.get("delete") or []
    dels = [dels] if isinstance(dels, str) else dels
    if not isinstance(sets, dict) or not isinstance(dels, list) or not all(isinstance(k, str) for k in [*sets, *dels]):
        raise StepError(f"{speaker}: step `set` is a mapping and `delete` a list of names")
    for k, v in sets.items():
        try:
            json.dumps(v, allow_nan=False)  # what the hub holds in a context: JSON values
        except (TypeError, ValueError):
            raise StepError(f"{speaker}: context value for {k!r} must be a JSON value, got {v!r}") from None
    if tool is not None and tool not in TOOLS[speaker] and not ANY_TOOL:
        raise StepError(f"{speaker} has no routing tool {tool!r} (its tools: {', '.join(TOOLS[speaker]) or 'none'})")
    if handoff is not None and handoff not in PARTICIPANTS:
        raise StepError(f"{speaker}: cannot hand off to {handoff!r}: not a participant")
    sets = {k: v for k, v in sets.items() if k not in dels}
    if not text and tool is None and handoff is None and finish is None and not sets and not dels:
        raise StepError(f"{speaker} produced an empty step (no text, no routing, no context)")
    return text, tool, handoff, finish, sets, dels


def _turn(speaker: str, agent: Callable[[State], Any], state: State) -> dict[str, Any]:
    text, tool, handoff, finish, sets, dels = _step(speaker, agent(state))
    ctx = dict(state["context"] if state.get("context") is not None else CONTEXT)
    for k in dels:
        ctx.pop(k, None)
    ctx.update(sets)
    reason: Optional[str] = None
    if finish is not None:
        nxt: Optional[str] = None
        reason = finish or "finished"
    elif handoff is not None:
        nxt = handoff
    else:
        nxt, reason = ROUTERS[speaker](ctx, tool, text, state.get("speaker"))
    turns = (state.get("turns") or 0) + 1
    if nxt is not None and MAX_TURNS is not None and turns >= MAX_TURNS:
        reason = "max_turns"
    record = {"speaker": speaker, "text": text, "tool": tool, "next": nxt, "reason": reason, "context": dict(ctx)}
    return {"transcript": [*(state.get("transcript") or []), record], "context": ctx, "turns": turns,
            "speaker": speaker, "next": nxt, "reason": reason}


class _Node:
    """A participant's node: its agent takes the turn, the flow's rules route it (a class, not a
    closure: type checkers infer LangGraph's node input, `State`, from `__call__`)."""

    def __init__(self, speaker: str, agent: Callable[[State], Any]) -> None:
        self.speaker, self.agent = speaker, agent
        self.__name__ = f"turn_{speaker}"

    def __call__(self, state: State) -> dict[str, Any]:
        return _turn(self.speaker, self.agent, state)


def _after(state: State) -> str:
    nxt = state.get("next")
    return END if state.get("reason") is not None or nxt is None else nxt


def build(agents: dict[str, Callable[[State], Any]], checkpointer: Any = None) -> Any:
    """The compiled graph: one node per participant, `agents[name]` taking its turns."""
    missing = [p for p in PARTICIPANTS if p not in agents]
    extra = sorted(str(a) for a in agents if a not in PARTICIPANTS)
    if missing or extra:
        raise ValueError(f"build() needs one agent per participant ({', '.join(PARTICIPANTS)}); "
                         + (f"missing: {', '.join(missing)}" if missing else f"not participants: {', '.join(extra)}"))
    graph = StateGraph(State)
    for p in PARTICIPANTS:
        graph.add_node(p, _Node(p, agents[p]))
    graph.add_edge(START, START_SPEAKER)
    ends: dict[Hashable, str] = {**{p: p for p in PARTICIPANTS}, END: END}
    for p in PARTICIPANTS:
        graph.add_conditional_edges(p, _after, ends)
    return graph.compile(checkpointer=checkpointer).with_config(recursion_limit=RECURSION_LIMIT)
'''
