"""`turnflow compile --target autogen-json`: a workflow as an AutoGen AgentChat team component (JSON).

The JSON `Team.load_component` loads once the user's agents are bound (docs/targets.md): a
`RoundRobinGroupChat`, a `Swarm` or a `GraphFlow`, whichever decides every turn as turnflow's
hub does, or nothing. `shape(spec)` reads the hub's per-speaker dispatch table (the rules in
evaluation order, partially evaluated for the speaker, then the default target; the same
table `emit/pyroute.py` writes as Python) and finds the one team that carries it out exactly:

* every speaker hands over to the next in declaration order, the start speaker first: a
  `RoundRobinGroupChat`;
* every speaker routes by handoff tools alone (`handoff A -> B via T`) and otherwise speaks
  again (`otherwise -> stay`): a `Swarm`, one `Handoff` per handoff tool;
* every speaker has one successor, or one `text contains` edge and otherwise ends, and the
  graph has an end and no cycle without a condition: a `GraphFlow` (`DiGraph`, activation
  `any`, one keyword condition per edge).

In all three, the `terminate` rules on `text contains` every speaker has ahead of its routing
(`* -> terminate "r" when text contains "X"` first) become `TextMentionTermination(text)` (whose
component config keeps no `sources`) and a speaker that always ends a `SourceMatchTermination`,
each labelled with the flow's reason, joined by `|` in the flow's order; `max_turns` is the
team's own. Anything else is refused (TF305) at the rule that
breaks the shape, saying what the components lack: a `GraphFlow` activates every edge whose
condition holds, a `Swarm` keeps the speaker until a handoff, a component's condition is one
keyword and cannot be negated, and `dump_component()` cannot serialise a selector function
(`--target autogen` writes that team as Python). Same input, same bytes.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional, Union

from turnflow.compiler.emit.pyroute import Next, prune, resolve

NAME = "autogen-json"
FRAMEWORK = "AutoGen AgentChat component JSON"
#: the writer's output is JSON, not Python (`emit/targets.py` parses only Python)
FORMAT = "json"

_NO_CONTEXT = "AgentChat teams share no context variables"

#: construct key (`emit/constructs.py`) → (what it becomes, True), or (why it is refused, False).
#: Beyond single constructs, TF305 refuses a block whose routing no component team carries out
#: exactly (`shape`), at the rule that breaks it.
TABLE: dict[str, tuple[str, bool]] = {
    "workflow": ("a team component: `RoundRobinGroupChat`, `Swarm` or `GraphFlow`, whichever decides "
                 "as the flow does (below); no other shape", True),
    "other_kind": ("only a workflow block has a speaker graph to compile", False),
    "participant": ("an `AssistantAgent` component named NAME with a model client to bind", True),
    "reserved_name": ("an ordinary agent name", True),
    "non_identifier": ("AgentChat requires agent names to be Python identifiers", False),
    "tools": ("the names of a `Swarm` agent's `Handoff`s (a tool that is not a handoff does not route)", True),
    "initiator": ("the speaker `initiator` targets, resolved when written", True),
    "start": ("the first participant (`RoundRobinGroupChat`: must be the first declared), `Swarm`'s "
              "first participant, `GraphFlow`'s `default_start_node`", True),
    "max_turns": ("the team's `max_turns`; the run's close reason is then `max_turns`", True),
    "context": (_NO_CONTEXT, False),
    "handoff": ("a `Handoff(target=B, name=TOOL)` of agent A in a `Swarm` (to a participant)", True),
    "rule": ("a speaker's routing as one of the three teams, its `terminate` rules as termination "
             "conditions", True),
    "rule_any": ("the same rule for every speaker", True),
    "when_tool": ("a `Swarm` handoff (`handoff A -> B via T` is `A -> B when tool T`)", True),
    "when_context": (_NO_CONTEXT, False),
    "when_compare": (_NO_CONTEXT, False),
    "when_text": ("`TextMentionTermination(text)` for a `terminate` every speaker has ahead of its other "
                  "rules; a `DiGraphEdge` condition for a `GraphFlow` edge", True),
    "when_logic": ("a component condition is one keyword: there is no `and`, `or` or `not`", False),
    "priority": ("the order of the termination conditions and edges", True),
    "to_participant": ("the next speaker: round robin, a `Handoff` target, a `DiGraph` edge", True),
    "to_terminate": ("a termination condition labelled with the reason, or a `GraphFlow` node without "
                     "edges (`turnflow.close_reasons`)", True),
    "to_stay": ("a `Swarm` speaker who calls no handoff tool speaks again", True),
    "to_next": ("`RoundRobinGroupChat`'s order", True),
    "to_previous": ("no team component routes to the speaker before the last one", False),
    "to_initiator": ("the initiator, resolved when written", True),
    "otherwise": ("the routing row every speaker ends with: `next` (round robin), `stay` (a `Swarm`), an "
                  "edge or an end (a `GraphFlow`)", True),
    "expect": ("AgentChat has no turn deadlines", False),
    "ttl": ("AgentChat has no session lifetime", False),
    "dynamic_handoff": ("a `Swarm` agent hands over only by its own `Handoff`s; a "
                        "`RoundRobinGroupChat` or `GraphFlow` reply cannot name the next speaker", False),
    "finish": ("an AgentChat reply cannot end the chat with a reason", False),
}

#: what a team component lacks, per reason a block is refused (TF305's messages)
LACKS = {
    "logic": "a component condition is one keyword or one handoff tool; it has no `and`, `or`, `not`",
    "previous": "no team component routes to the speaker before the last one",
    "user": "AgentChat's termination conditions also read the task message, whose source is `user`: "
            "a `SourceMatchTermination` cannot end the run after a participant named `user`",
    "user_graph": "a `GraphFlow` reads the task message, whose source is `user`, as a turn of the node "
                  "`user`: a participant named `user` cannot have an edge (it would fire before anyone speaks)",
    "empty": "`text contains \"\"` holds on every message, the task's too: the team would stop before anyone "
             "speaks",
    "text_scope": "a `TextMentionTermination` keeps only its text in component JSON (not its `sources`): it "
                  "reads every speaker's turn, so a `terminate ... when text contains` must apply to every "
                  "speaker ahead of its other rules (`* -> terminate \"r\" when text contains \"X\"` first)",
    "late_end": "AgentChat checks a termination condition on the whole turn before any routing, so a "
                "`terminate` rule must come before the speaker's routing rules",
    "swarm_stay": "a `Swarm` routes by handoff tools alone and a speaker who calls none speaks again: after "
                  "its handoffs a speaker's last rule must be `stay`",
    "swarm_target": "a `Swarm` handoff names a participant; a `Handoff` out of the team is not a close reason",
    "swarm_text": "a `text contains` termination reads the whole turn, and a `Swarm` handoff turn's text "
                  "is AutoGen's transfer message, not the reply",
    "graph_fanout": "a `GraphFlow` activates every edge whose condition holds, a condition is one keyword and "
                    "cannot be negated: a speaker has one successor, or one `text contains` edge and then ends",
    "graph_cycle": "a `GraphFlow` refuses a cycle of edges without a condition (only a "
                   "`RoundRobinGroupChat`, in declaration order from the first, repeats without one)",
    "graph_unbounded": "AgentChat refuses to build a `GraphFlow` with a cycle and neither `max_turns` nor a "
                       "termination condition",
    "graph_end": "a `GraphFlow` needs a node without edges (a speaker whose only rule ends the run)",
}


class Row(NamedTuple):
    cond: Any  # a residual condition model; None: always
    then: Next
    rule: Optional[int]  # the rule's index in the graph's transitions (block.rules); None: the default target


class Refusal(NamedTuple):
    rule: Optional[int]  # the rule to point at (None: the default target, or the block)
    why: str  # a key of LACKS


class Shape(NamedTuple):
    kind: str  # "RoundRobinGroupChat" / "Swarm" / "GraphFlow"
    order: tuple[str, ...]  # the team's participants, in its order
    ends: tuple[tuple[Optional[str], str, Optional[str]], ...]  # (speaker or None, reason, text or None), in order
    handoffs: dict[str, tuple[tuple[str, str], ...]]  # Swarm: speaker -> (tool, target)
    edges: dict[str, tuple[str, Optional[str]]]  # GraphFlow: speaker -> (target, keyword or None)
    completes: dict[str, str]  # GraphFlow: speaker -> the reason when no edge fires after it
    max_turns: Optional[int]


class Part(NamedTuple):
    """What the shape reads of a participant (a spec's `Participant` has these fields too)."""

    agent_id: str
    order: int
    role: str
    tools: tuple[str, ...]


def table(participants: Any, graph: Any) -> tuple[tuple[str, ...], str, dict[str, list[Row]]]:
    """(participants in order, start speaker, per speaker its rows): the hub's dispatch table,
    the rows' conditions as models (`emit/pyroute.py`'s `routing`, before it writes Python).
    `participants`: the spec's (or `Part`s), `graph`: the `TransitionGraph` model."""
    parts = sorted(participants, key=lambda p: p.order)
    order = tuple(p.agent_id for p in parts)
    initiator = next((p.agent_id for p in parts if p.role == "initiator"), graph.initial_speaker)
    tools = {p.agent_id: tuple(p.tools) for p in parts}
    anything = not any(tools.values())
    evaluation = graph.evaluation_order()
    rows: dict[str, list[Row]] = {}
    for s in order:
        out: list[Row] = []
        for i in evaluation:
            tr = graph.transitions[i]
            t: Union[bool, Any] = tr.when.partial(s, True)
            if not isinstance(t, bool):
                t = prune(t, None if anything else tools[s])
            if t is False:
                continue
            out.append(Row(None if t is True else t, resolve(tr.then, s, order, initiator), i))
            if t is True:
                break
        else:
            out.append(Row(None, resolve(graph.default_target, s, order, initiator), None))
        rows[s] = out
    return order, graph.initial_speaker, rows


def _leaf(cond: Any, name: str) -> bool:
    return cond is not None and cond.name == name


def _split(s: str, rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """(the speaker's leading `terminate when text contains` rows, the rest)."""
    k = 0
    while k < len(rows) - 1 and rows[k].then.kind == "end" and _leaf(rows[k].cond, "text_contains"):
        k += 1
    return rows[:k], rows[k:]


def _common(order: tuple[str, ...], rows: dict[str, list[Row]]) -> Optional[Refusal]:
    """What no team component can do, whatever its kind."""
    for s in order:
        for r in rows[s]:
            if r.then.kind == "previous":
                return Refusal(r.rule, "previous")
            if r.cond is not None and r.cond.name not in ("text_contains", "tool_called"):
                return Refusal(r.rule, "logic")
        ends, rest = _split(s, rows[s])
        if any(r.cond.args.text == "" for r in ends):
            return Refusal(next(r.rule for r in ends if r.cond.args.text == ""), "empty")
    return _texts(order, rows)


def _user(order: tuple[str, ...], rows: dict[str, list[Row]]) -> Optional[Refusal]:
    """A `SourceMatchTermination` on `user` would fire on the task message."""
    rest = _split("user", rows["user"])[1] if "user" in rows else []
    if len(rest) == 1 and rest[0].then.kind == "end":
        return Refusal(rest[0].rule, "user")
    return None


def _texts(order: tuple[str, ...], rows: dict[str, list[Row]]) -> Optional[Refusal]:
    """A text termination holds no `sources` in component JSON: every speaker must have the same
    ones, first, in the same order (`* -> terminate "r" when text contains "X"` ahead of the rest)."""
    first = [(r.cond.args.text, r.then.reason) for r in _split(order[0], rows[order[0]])[0]]
    for s in order:
        ends, _rest = _split(s, rows[s])
        mine = [(r.cond.args.text, r.then.reason) for r in ends]
        if mine != first:
            k = next((i for i, (a, b) in enumerate(zip(mine, first)) if a != b), min(len(mine), len(first)))
            at = ends[k].rule if k < len(ends) else next((r.rule for r in rows[s] if r.rule is not None), None)
            if k >= len(ends):  # s lacks one the others have: point at theirs
                other = next(x for x in order if len(_split(x, rows[x])[0]) > k)
                at = _split(other, rows[other])[0][k].rule
            return Refusal(at, "text_scope")
    return None


def _round_robin(order: tuple[str, ...], start: str, rows: dict[str, list[Row]]) -> bool:
    if start != order[0]:
        return False
    for i, s in enumerate(order):
        _ends, rest = _split(s, rows[s])
        nxt = order[(i + 1) % len(order)]
        if len(rest) == 1 and rest[0].cond is None and rest[0].then.kind == "end":
            continue
        if any(r.then != Next("agent", nxt) for r in rest) or rest[-1].cond is not None:
            return False
    return True


def _swarm(order: tuple[str, ...], rows: dict[str, list[Row]]) -> Optional[Refusal]:
    for s in order:
        ends, rest = _split(s, rows[s])
        if len(rest) == 1 and rest[0].cond is None and rest[0].then.kind == "end":
            continue
        for r in rest[:-1]:
            if not _leaf(r.cond, "tool_called"):
                return Refusal(r.rule, "late_end" if r.then.kind == "end" else "swarm_stay")
            if r.then.kind != "agent":
                return Refusal(r.rule, "swarm_target")
        last = rest[-1]
        if last.cond is not None or last.then != Next("agent", s):
            return Refusal(last.rule, "swarm_stay")
        if ends and len(rest) > 1:
            return Refusal(ends[0].rule, "swarm_text")
    return None


def _graph(order: tuple[str, ...], rows: dict[str, list[Row]]) -> Optional[Refusal]:
    for s in order:
        _ends, rest = _split(s, rows[s])
        kinds = [(r.cond is None, r.then.kind) for r in rest]
        if kinds in ([(True, "agent")], [(True, "end")]):
            continue
        if kinds == [(False, "agent"), (True, "end")] and _leaf(rest[0].cond, "text_contains"):
            continue
        bad = next((r for r in rest if r.then.kind == "end" and r.cond is not None), None)
        return Refusal((bad or rest[1 if len(rest) > 1 else 0]).rule, "late_end" if bad else "graph_fanout")
    if not any(len(rest) == 1 and rest[0].then.kind == "end" for rest in (_split(s, rows[s])[1] for s in order)):
        return Refusal(None, "graph_end")
    return _fixed_cycle(order, {s: _split(s, rows[s])[1][0] for s in order})


def _fixed_cycle(order: tuple[str, ...], first: dict[str, Row]) -> Optional[Refusal]:
    """A cycle of edges without a condition (`first`: each speaker's only successor row)."""
    for s in order:
        seen, x = [s], s
        while first[x].cond is None and first[x].then.kind == "agent":
            x = first[x].then.name or x
            if x == s:
                return Refusal(first[s].rule, "graph_cycle")
            if x in seen:
                break
            seen.append(x)
    return None


def _handoffs(rows: list[Row]) -> tuple[tuple[str, str], ...]:
    """(tool, target) per handoff row, the first row of each tool (a later one never fires)."""
    out: dict[str, str] = {}
    for r in rows:
        out.setdefault(r.cond.args.tool_name, r.then.name or "")
    return tuple(out.items())


def _ends(order: tuple[str, ...], team: tuple[str, ...], rows: dict[str, list[Row]], always: bool
          ) -> tuple[tuple[Optional[str], str, Optional[str]], ...]:
    """(speaker or None: anyone, reason, text or None: always) per termination condition, in order:
    the text terminations every speaker shares, then the speakers that always end (in the team's
    order)."""
    out: list[tuple[Optional[str], str, Optional[str]]] = [
        (None, r.then.reason or "workflow_terminated", r.cond.args.text) for r in _split(order[0], rows[order[0]])[0]]
    for s in team:
        rest = _split(s, rows[s])[1]
        if always and len(rest) == 1 and rest[0].then.kind == "end":
            out.append((s, rest[0].then.reason or "workflow_terminated", None))
    return tuple(out)


def shape(participants: Any, graph: Any) -> Union[Shape, Refusal]:
    """The team component that decides every turn of a workflow (its participants, its
    `TransitionGraph` model) as the hub does, or the first reason none does (the rule to point
    at, a key of `LACKS`)."""
    order, start, rows = table(participants, graph)
    common = _common(order, rows)
    if common is not None:
        return common
    max_turns = graph.max_turns
    if _round_robin(order, start, rows):
        refused = _user(order, rows)
        if refused is not None:
            return refused
        return Shape("RoundRobinGroupChat", order, _ends(order, order, rows, True), {}, {}, {}, max_turns)
    if any(_leaf(r.cond, "tool_called") for s in order for r in rows[s]):
        refused = _swarm(order, rows) or _user(order, rows)
        if refused is not None:
            return refused
        team = (start,) + tuple(s for s in order if s != start)
        handoffs = {s: _handoffs(_split(s, rows[s])[1][:-1]) for s in order}
        return Shape("Swarm", team, _ends(order, team, rows, True), handoffs, {}, {}, max_turns)
    return _graph_shape(order, rows, max_turns)


def _graph_shape(order: tuple[str, ...], rows: dict[str, list[Row]], max_turns: Optional[int]
                 ) -> Union[Shape, Refusal]:
    refused = _graph(order, rows)
    if refused is None and "user" in rows and _split("user", rows["user"])[1][0].then.kind == "agent":
        refused = Refusal(_split("user", rows["user"])[1][0].rule, "user_graph")
    if refused is not None:
        return refused
    edges: dict[str, tuple[str, Optional[str]]] = {}
    completes: dict[str, str] = {}
    for s in order:
        rest = _split(s, rows[s])[1]
        if rest[0].then.kind == "agent":
            edges[s] = (rest[0].then.name or s, rest[0].cond.args.text if rest[0].cond is not None else None)
        if rest[-1].then.kind == "end":
            completes[s] = rest[-1].then.reason or "workflow_terminated"
    ends = _ends(order, order, rows, False)
    looped = next((s for s in order if _loops(s, edges)), None)
    if looped is not None and max_turns is None and not ends:
        return Refusal(_split(looped, rows[looped])[1][0].rule, "graph_unbounded")
    return Shape("GraphFlow", order, ends, {}, edges, completes, max_turns)


def _loops(s: str, edges: dict[str, tuple[str, Optional[str]]]) -> bool:
    """The edges from `s` lead back to `s` (each speaker has one edge at most)."""
    x, seen = s, set()
    while x in edges and x not in seen:
        seen.add(x)
        x = edges[x][0]
        if x == s:
            return True
    return False


# ---------------------------------------------------------------------------------------------
#  The JSON
# ---------------------------------------------------------------------------------------------
_AC = "autogen_agentchat"
#: the placeholder the user replaces with their model client's component (docs/targets.md)
UNBOUND_CLIENT = "turnflow.unbound.ModelClient"


def _component(provider: str, kind: str, config: dict[str, Any], label: Optional[str] = None,
               description: Optional[str] = None, version: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": provider, "component_type": kind, "version": version,
                           "component_version": version}
    if description is not None:
        out["description"] = description
    out["label"] = label or provider.rsplit(".", 1)[-1]
    out["config"] = config
    return out


def _agent(name: str, description: str, handoffs: tuple[tuple[str, str], ...],
           descriptions: dict[tuple[str, str], str]) -> dict[str, Any]:
    client = _component(UNBOUND_CLIENT, "chat_completion_client", {}, "bind a model client",
                        "Replace with your model client's component: client.dump_component().model_dump()")
    config: dict[str, Any] = {"name": name, "model_client": client, "description": description,
                              "reflect_on_tool_use": False, "tool_call_summary_format": "{result}"}
    if handoffs:
        config["handoffs"] = [{"target": target, "description": descriptions.get((name, tool)) or f"Handoff to {target}.",
                               "name": tool, "message": f"Transferred to {target}, adopting the role of "
                                                         f"{target} immediately."}
                              for tool, target in handoffs]
    return _component(f"{_AC}.agents.AssistantAgent", "agent", config, name,
                      "An agent of the flow: bind your model client (or replace the whole component by your own "
                      "agent of this name)", version=2)


def _termination(ends: tuple[tuple[Optional[str], str, Optional[str]], ...]) -> Optional[dict[str, Any]]:
    conds = []
    for speaker, reason, text in ends:
        if text is None:
            conds.append(_component(f"{_AC}.conditions.SourceMatchTermination", "termination",
                                    {"sources": [speaker]}, reason, f"{speaker} -> terminate"))
        else:
            conds.append(_component(f"{_AC}.conditions.TextMentionTermination", "termination",
                                    {"text": text}, reason, "* -> terminate when text contains"))
    if len(conds) <= 1:
        return conds[0] if conds else None
    return _component(f"{_AC}.base.OrTerminationCondition", "termination", {"conditions": conds},
                      "close reasons", "The flow's terminate rules in evaluation order; each one's label is its "
                      "close reason")


def _graph_config(sh: Shape, start: str) -> dict[str, Any]:
    nodes = {}
    for s in sh.order:
        edges = []
        if s in sh.edges:
            target, keyword = sh.edges[s]
            edges.append({"target": target, "condition": keyword, "activation_group": target,
                          "activation_condition": "any"})
        nodes[s] = {"name": s, "edges": edges, "activation": "any"}
    return {"nodes": nodes, "default_start_node": start}


def document(spec: Any, source: str = "<string>") -> Union[dict[str, Any], Refusal]:
    """The team component for `spec` as a JSON value, or why there is none."""
    sh = shape(spec.participants, spec.knobs.graph)
    if isinstance(sh, Refusal):
        return sh
    parts = {p.agent_id: p for p in spec.participants}
    descriptions = {(t.owner, t.name): t.description for t in spec.tools or [] if t.description}
    agents = [_agent(s, parts[s].description, sh.handoffs.get(s, ()), descriptions) for s in sh.order]
    config: dict[str, Any] = {"name": spec.name, "participants": agents}
    term = _termination(sh.ends)
    if term is not None:
        config["termination_condition"] = term
    config["max_turns"] = sh.max_turns
    if sh.kind == "GraphFlow":
        config["graph"] = _graph_config(sh, spec.knobs.graph.initial_speaker)
    out = _component(f"{_AC}.teams.{sh.kind}", "team", config, spec.name, spec.title or None)
    out["turnflow"] = {"written_by": "turnflow compile --target autogen-json", "flow": spec.name, "source": source,
                       "team": sh.kind,
                       "close_reasons": {"termination_condition": "the label of the first of the conditions that "
                                         "fires on the last turn", "max_turns": "max_turns",
                                         "graph_complete": dict(sh.completes)}}
    return out


class Unwritable(ValueError):
    """No team component decides as the flow does: a TF305 silenced on rule number `rule` (the
    compiler turns it into its `TargetError`, at that rule's position)."""

    def __init__(self, message: str, rule: Optional[int] = None) -> None:
        super().__init__(message)
        self.rule = rule


def write(spec: Any, source: str = "<string>") -> str:
    """The JSON text for `spec` (a `turnflow.spec.WorkflowSpec`); `source` names the .flow file.
    `Unwritable` (a `ValueError`; its `rule`, the rule's index) when no team component decides as
    the flow does (TF305 refuses it first; this is a TF305 silenced on the rule)."""
    doc = document(spec, source)
    if isinstance(doc, Refusal):
        raise Unwritable(f"no AgentChat team component decides as `{spec.name}` does: {LACKS[doc.why]}; "
                          "the TF305 silenced here gives component JSON no way to carry it: change the rule, or "
                          "compile with `--target autogen` (Python)", rule=doc.rule)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
