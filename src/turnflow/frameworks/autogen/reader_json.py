"""AutoGen 0.4+ team component JSON → `.flow`.

Inputs: one team component (`team.dump_component()` output, an AutoGen
Studio team file), a JSON array of team components, or a gallery file
(`{"components": {"teams": [...]}}`); one block per team.

Teams: RoundRobinGroupChat, SelectorGroupChat, Swarm, GraphFlow,
MagenticOneGroupChat. Termination conditions: MaxMessageTermination,
TextMentionTermination, HandoffTermination, SourceMatchTermination,
TextMessageTermination, FunctionCallTermination, StopMessageTermination,
TimeoutTermination, combined with `|` (Or) and `&` (And).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from turnflow.migrate.common import (MAX_ROUTES, FlowBuilder, MigrateError, Migration, Names, Pos, fail, render,
                                    tool_name)
from turnflow.migrate.jsonpos import Positions, load
from turnflow.source import SourceText
from turnflow.diagnostics.listing import bounded

TEAMS = ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow", "MagenticOneGroupChat")


def _kind(component: Any) -> str:
    """The class name of a component: `autogen_agentchat.teams.Swarm` → "Swarm"."""
    if not isinstance(component, dict):
        return ""
    provider = component.get("provider")
    if isinstance(provider, str) and provider:
        return provider.rsplit(".", 1)[-1]
    return ""


def _config(component: Any) -> dict:
    cfg = component.get("config") if isinstance(component, dict) else None
    return cfg if isinstance(cfg, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


@dataclass
class Agent:
    raw: str
    name: str
    description: Optional[str]
    component: dict
    kind: str
    tools: list[str] = field(default_factory=list)
    handoffs: list[dict] = field(default_factory=list)  # {target, description, name, at}
    name_at: Optional[Pos] = None


def migrate(text: str, path: str, src: Optional[SourceText] = None) -> Migration:
    src = src or SourceText(text, path)
    data, pos = load(text, path, src)
    teams = _teams(data, pos, path, src)
    builders = []
    blocks = Names()
    for team in teams:
        builders.append(_team(team, pos, blocks, path, src))
    return render(builders, [f"Migrated by `turnflow migrate` from {path} (AutoGen team component)."],
                  path, src, "autogen")


def _teams(data: Any, pos: Positions, path: str, src: SourceText) -> list[dict]:
    if isinstance(data, dict) and not _kind(data) and isinstance(data.get("component"), dict):
        data = data["component"]  # an AutoGen Studio team record: {"component": {...}, ...}
    if isinstance(data, dict) and _kind(data) in TEAMS:
        return [data]
    if isinstance(data, dict) and isinstance(data.get("items"), dict) and "components" not in data:
        data = {**data, "components": data["items"]}  # the older AutoGen Studio gallery: {"items": {"teams": [...]}}
    if isinstance(data, dict) and isinstance(data.get("components"), dict):
        return _gallery_teams(data, pos, path, src)
    if isinstance(data, list) and data and all(_kind(t) in TEAMS for t in data):
        return data
    raise _not_a_team(data, pos, path, src)


def _not_a_team(data: Any, pos: Positions, path: str, src: SourceText) -> MigrateError:
    """The TF401 for JSON that holds no team: an other component (its type), or something else."""
    if isinstance(data, dict) and _kind(data):
        ctype = data.get("component_type")
        return fail("TF401", f"`{_kind(data)}` is " + (f"a component of type {json.dumps(ctype)}" if isinstance(ctype, str)
                    else "not a team component") + f", not a team; supported teams: {', '.join(TEAMS)}",
                    pos.of(data, "provider"), path, src)
    where = data[0] if isinstance(data, list) and data else data
    return fail("TF401", "not an AutoGen team component: expected an object with \"provider\" naming one of "
                f"{', '.join(TEAMS)}, a list of them, or a gallery file with components.teams",
                pos.of(where) if isinstance(where, (dict, list)) else Pos(1, 1), path, src)


def _gallery_teams(data: dict, pos: Positions, path: str, src: SourceText) -> list[dict]:
    """The teams of a gallery file (`components.teams`); refused when one is not a supported team."""
    teams = data["components"].get("teams")
    if isinstance(teams, list) and teams:
        for t in teams:
            if _kind(t) not in TEAMS:
                raise fail("TF401", f"gallery team `{_kind(t) or '?'}` is not a supported team "
                           f"({', '.join(TEAMS)})", pos.of(t), path, src)
        return list(teams)
    raise fail("TF401", "gallery file without teams (`components.teams` is empty or missing)",
               pos.of(data["components"]), path, src)


def _agents(team: dict, pos: Positions, names: Names, b: FlowBuilder, path: str, src: SourceText) -> list[Agent]:
    cfg = _config(team)
    parts = cfg.get("participants")
    if not isinstance(parts, list) or not parts:
        raise fail("TF401", "the team has no participants", pos.of(cfg, "participants") if cfg else pos.of(team),
                   path, src)
    agents = []
    for p in parts:
        pc = _config(p)
        raw = pc.get("name")
        if not isinstance(raw, str) or not raw:
            raise fail("TF401", "a participant has no `config.name`", pos.of(p), path, src)
        if raw in names.map:
            raise fail("TF401", f"two participants are named {json.dumps(raw)}; AutoGen requires unique names",
                       pos.of(pc, "name"), path, src)
        name, changed = names.add(raw)
        desc = pc.get("description") if isinstance(pc.get("description"), str) else None
        agent = Agent(raw, name, desc, p, _kind(p), name_at=pos.of(pc, "name"))
        if _kind(p) in TEAMS:  # a team taking part in this one (AutoGen >= 0.6)
            b.note("TF408", f"`{raw}` is a team ({_kind(p)}) taking part as one participant: its own members speak "
                   "inside its turn, by its own rules, which this flow does not show (a team built in the same "
                   "file is migrated as a block of its own)", pos.of(p))
        for t in _tool_list(pc):
            tn = _config(t).get("name") if isinstance(t, dict) else None
            if isinstance(tn, str) and tn:
                agent.tools.append(tool_name(tn))
        # AutoGen's Handoff defaults (autogen_agentchat.base.Handoff.set_defaults): description
        # "Handoff to T.", name "transfer_to_t" (lower-cased)
        for h in _list(pc.get("handoffs")):
            if isinstance(h, str):
                agent.handoffs.append({"target": h, "description": f"Handoff to {h}.",
                                       "name": f"transfer_to_{h}".lower(), "at": pos.of(pc, "handoffs")})
            elif isinstance(h, dict) and isinstance(h.get("target"), str):
                agent.handoffs.append({"target": h["target"],
                                       "description": h.get("description") or f"Handoff to {h['target']}.",
                                       "name": h.get("name") or f"transfer_to_{h['target']}".lower(),
                                       "at": pos.of(h)})
        agents.append(agent)
    return agents


def _tool_list(pc: dict) -> list:
    tools = list(_list(pc.get("tools")))
    wb = pc.get("workbench")
    for w in wb if isinstance(wb, list) else [wb] if isinstance(wb, dict) else []:
        tools += _list(_config(w).get("tools"))
    return [t for t in tools if isinstance(t, dict)]


@dataclass
class Term:
    max_messages: Optional[int] = None
    max_at: Optional[Pos] = None
    texts: list[tuple[str, Optional[list[str]]]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    handoff_targets: list[str] = field(default_factory=list)
    text_message: list[Optional[str]] = field(default_factory=list)  # source or None (any)
    source_at: dict[str, Pos] = field(default_factory=dict)  # where each SourceMatchTermination source is named
    function_calls: list[str] = field(default_factory=list)
    timeout: Optional[int] = None
    notes: list = field(default_factory=list)
    #: a team `turnflow compile --target autogen-json` wrote (its "turnflow" key): each condition's
    #: label is its close reason, ("text", TEXT) / ("source", NAME) -> reason; and the reason a
    #: GraphFlow that completes after a speaker gives, speaker -> reason
    own: bool = False
    labels: dict = field(default_factory=dict)
    completes: dict = field(default_factory=dict)

    def reason(self, key: tuple, default: str) -> str:
        label = self.labels.get(key)
        return label if self.own and isinstance(label, str) and label else default

    def note(self, code: str, message: str, at: Pos) -> None:
        self.notes.append((code, message, at))


def _own(team: dict, names: Names) -> Term:
    """An empty `Term`, told the close reasons of a team `turnflow compile --target autogen-json`
    wrote (its "turnflow" key): the reason a GraphFlow that completes after a speaker gives."""
    term = Term()
    own = team.get("turnflow")
    if isinstance(own, dict):
        term.own = True
        reasons = own.get("close_reasons")
        completes = reasons.get("graph_complete") if isinstance(reasons, dict) else None
        if isinstance(completes, dict):
            term.completes = {names.map.get(k, k): v for k, v in completes.items() if isinstance(v, str) and v}
    return term


def _termination(cond: Any, pos: Positions, b: FlowBuilder, term: Term, names: Names) -> None:
    if not isinstance(cond, dict):
        return
    kind = _kind(cond)
    cfg = _config(cond)
    at = pos.of(cond, "provider")
    if kind in ("OrTerminationCondition", "AndTerminationCondition"):
        if kind == "AndTerminationCondition":
            term.note("TF405", "`&` (And) of termination conditions ends the run only when all have fired; "
                      "approximated by ending when any of them fires", at)
        for c in _list(cfg.get("conditions")):
            _termination(c, pos, b, term, names)
        return
    read = _TERMINATIONS.get(kind or "")
    if read is not None:
        read(cfg, term, names, at)
        if term.own and kind == "TextMentionTermination" and isinstance(cfg.get("text"), str):
            term.labels.setdefault(("text", cfg["text"]), cond.get("label"))
        elif term.own and kind == "SourceMatchTermination":
            for x in _list(cfg.get("sources")):
                if isinstance(x, str):
                    term.labels.setdefault(("source", names.map.get(x, x)), cond.get("label"))
        return
    if kind == "StopMessageTermination":
        term.note("TF405", "StopMessageTermination ends the run when an agent emits a StopMessage, which .flow "
                  "cannot observe; dropped", at)
        return
    term.note("TF405", f"termination condition `{kind or '?'}` cannot be expressed; dropped", at)


def _max_messages(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    n = cfg.get("max_messages")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        if term.max_messages is None or n < term.max_messages:
            term.max_messages, term.max_at = n, at
    else:
        term.note("TF405", f"MaxMessageTermination's `max_messages` is {_show_number(n)}, {_bad_number(n)}; "
                  "this condition is dropped", at)


def _text_mention(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    text = cfg.get("text")
    if isinstance(text, str) and text:
        srcs = cfg.get("sources")
        term.texts.append((text, [names.map.get(s, s) for s in srcs if isinstance(s, str)]
                           if isinstance(srcs, list) and srcs else None))


def _source_match(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    for s in _list(cfg.get("sources")):
        if isinstance(s, str):
            term.sources.append(names.map.get(s, s))
            term.source_at.setdefault(names.map.get(s, s), at)


def _handoff_termination(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    if isinstance(cfg.get("target"), str):
        term.handoff_targets.append(cfg["target"])


def _text_message_termination(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    s = cfg.get("source")
    term.text_message.append(names.map.get(s, s) if isinstance(s, str) else None)


def _function_call_termination(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    if isinstance(cfg.get("function_name"), str):
        term.function_calls.append(tool_name(cfg["function_name"]))


def _timeout(cfg: dict, term: Term, names: Names, at: Pos) -> None:
    t = cfg.get("timeout_seconds")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
        term.note("TF405", "TimeoutTermination counts from the start of `run()`; approximated by the session's "
                  f"time to live, `ttl {int(round(t))}s`", at)
        term.timeout = int(round(t))


_TERMINATIONS = {"MaxMessageTermination": _max_messages, "TextMentionTermination": _text_mention,
                 "SourceMatchTermination": _source_match, "HandoffTermination": _handoff_termination,
                 "TextMessageTermination": _text_message_termination,
                 "FunctionCallTermination": _function_call_termination, "TimeoutTermination": _timeout}


def _show_number(n: Any) -> str:
    if isinstance(n, str) and n.startswith("<") and n.endswith(">"):
        return f"`{n[1:-1]}`"  # a Python expression the migrator does not evaluate
    return f"`{json.dumps(n)}`" if not isinstance(n, float) or n == n and abs(n) != float("inf") else f"`{n}`"


def _bad_number(n: Any) -> str:
    if isinstance(n, str) and n.startswith("<") and n.endswith(">"):
        return "which the migrator cannot evaluate (it reads code without running it)"
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return "not a whole number"
    if isinstance(n, float) and n != n:
        return "not a number (NaN)"
    if isinstance(n, float) and abs(n) == float("inf"):
        return "infinite"
    if isinstance(n, float):
        return "not a whole number"
    return "not a positive whole number"


def _describe(agents: dict[str, Agent], name: str) -> str:
    a = agents.get(name)
    if a is not None and a.description:
        return a.description.strip()
    return f"Let {name} speak next"


def _wrapped_sources(cfg: dict, names: Names, term: Term) -> dict[str, str]:
    """A MessageFilterAgent's messages are its wrapped agent's, with the wrapped agent's name as their
    source: a termination condition naming that source fires after the filter agent speaks."""
    wrapped: dict[str, str] = {}
    for p in _list(cfg.get("participants")):
        inner = _config(p).get("wrapped_agent") if isinstance(p, dict) else None
        inner_name = _config(inner).get("name") if isinstance(inner, dict) else None
        outer = _config(p).get("name") if isinstance(p, dict) else None
        if isinstance(inner_name, str) and isinstance(outer, str):
            wrapped.setdefault(names.map.get(inner_name, inner_name), names.map.get(outer, outer))

    def widen(srcs: list[str]) -> list[str]:
        return srcs + [wrapped[x] for x in srcs if x in wrapped and wrapped[x] not in srcs]

    if wrapped:
        term.sources = widen(term.sources)
        term.texts = [(t, widen(srcs) if srcs is not None else None) for t, srcs in term.texts]
        term.text_message = [wrapped.get(x, x) if x is not None else None for x in term.text_message]
    return wrapped


def _team(team: dict, pos: Positions, blocks: Names, path: str, src: SourceText) -> FlowBuilder:
    kind = _kind(team)
    cfg = _config(team)
    raw_name = cfg.get("name") if isinstance(cfg.get("name"), str) else team.get("label")
    if not isinstance(raw_name, str) or not raw_name:
        raw_name = kind
    block, _ = blocks.add(raw_name)
    title = team.get("description") if isinstance(team.get("description"), str) else None
    b = FlowBuilder(block, title)
    names = Names()
    agents = _agents(team, pos, names, b, path, src)
    by_name = {a.name: a for a in agents}
    order = [a.name for a in agents]

    term = _own(team, names)
    _termination(cfg.get("termination_condition"), pos, b, term, names)
    wrapped = _wrapped_sources(cfg, names, term)
    for s in [x for x in dict.fromkeys(term.sources) if x not in by_name and x not in wrapped]:
        term.note("TF405", f"`SourceMatchTermination` names `{s}`, which is not a participant of this team nor the "
                  "agent a participant wraps: no message the team's turns make has that source (the task's sender "
                  "is `user`); the flow has no rule for it", term.source_at.get(s) or pos.of(cfg, "termination_condition"))

    for a in agents:  # tools each agent owns (for FunctionCallTermination)
        for t in (t for t in a.tools if t in term.function_calls):
            b.add_tool(a.name, t)

    _participants(b, agents, names, cfg, pos)

    # -- start and caps -------------------------------------------------------
    b.section()
    selection = None
    if team.get("_python"):  # a team written in Python: its selector_func / candidate_func
        from turnflow.migrate.selection import read_selector

        selection = read_selector(team, order, names, b) if kind == "SelectorGroupChat" else None
    start = _start(team, cfg, kind, selection, b, pos, names, order, path, src)
    b.start(start)
    _caps(cfg, kind, term, b, pos)
    _ignored_settings(b, cfg, pos)

    _termination_rules(b, term, agents, by_name)

    _routing(team, kind, b, agents, term, names, selection, pos, path, src)
    return b


def _routing(team: dict, kind: str, b: FlowBuilder, agents, term: "Term", names: Names, selection,
             pos: Positions, path: str, src: SourceText) -> None:
    """Who speaks after whom, per kind of team (speakers that always end the run need none)."""
    cfg = _config(team)
    order = [a.name for a in agents]
    by_name = {a.name: a for a in agents}
    ended = {s for s in term.sources if s in by_name}
    agents = [a for a in agents if a.name not in ended]
    # TextMessageTermination: after the handoffs, a round that produced text ends the run
    texted = set(order) if None in term.text_message else {s for s in term.text_message if s in by_name}
    if kind == "RoundRobinGroupChat":
        _round_robin_routing(b, agents, term, order, by_name, ended, texted)
    elif kind in ("SelectorGroupChat", "MagenticOneGroupChat"):
        _selector_routing(team, cfg, kind, b, agents, term, order, by_name, ended | texted, selection, pos)
    elif kind == "Swarm":
        _swarm_routing(team, b, agents, term, order, by_name, names, ended, texted, pos)
    elif kind == "GraphFlow":
        _terminating_handoffs(b, agents, term, order)
        _text_message(b, term, by_name)
        _graph(cfg, pos, b, names, order, path, src, ended | texted, term.completes)


def _ignored_settings(b: FlowBuilder, cfg: dict, pos) -> None:
    """Settings that change behaviour the speaker graph cannot describe (defaults are not reported)."""
    for key, default in (("emit_team_events", False), ("max_stalls", 3)):
        if key in cfg and cfg[key] is not None and cfg[key] != default:
            b.note("TF409", f"`{key}` has no equivalent in a .flow file; ignored", pos.of(cfg, key))


def _participants(b: FlowBuilder, agents, names: Names, cfg: dict, pos) -> None:
    b.section()
    for a in agents:
        if a.name != a.raw:
            b.note("TF402", f"agent name {json.dumps(a.raw)} is not a valid flow NAME; renamed to `{a.name}`",
                   a.name_at or Pos(1, 1))
        b.participant(a.name, a.description)
    if len(agents) < 2:
        b.note("TF408", "a workflow needs two participants; the sender of the task, `user`, is added "
               "(AutoGen does not count it as a team member)", pos.of(cfg, "participants"))
        b.participant(names.add("user")[0], "The sender of the task (not a team member)", "initiator")


def _termination_rules(b: FlowBuilder, term, agents, by_name: dict) -> None:
    """The termination conditions as rules, first: source matches, text mentions, function calls (a
    team `--target autogen-json` wrote: the text mentions first, as it lists them, each speaker's
    text rules ahead of its end)."""
    b.section()
    for code, message, at in term.notes:
        b.note(code, message, at)
    if not term.own:
        _source_rules(b, term, by_name)
    for text, sources in term.texts:
        for s in sources or [None]:
            if s is None or s in by_name:
                b.rule(s, ("terminate", term.reason(("text", text), "text_mention")), [("text", text)])
    if term.own:
        _source_rules(b, term, by_name)
    for fn in term.function_calls:
        owners = [a.name for a in agents if fn in a.tools]
        for o in owners or [None]:
            b.rule(o, ("terminate", "function_call"), [("tool", fn)])


def _source_rules(b: FlowBuilder, term, by_name: dict) -> None:
    for s in term.sources:
        if s in by_name:
            b.rule(s, ("terminate", term.reason(("source", s), "source_match")))


def _round_robin_routing(b: FlowBuilder, agents, term, order: list[str], by_name: dict, ended: set,
                         texted: set) -> None:
    _terminating_handoffs(b, agents, term, order)
    _text_message(b, term, by_name)
    b.section()
    if texted >= set(order) - ended:
        pass  # every speaker's round ends the run: no routing is ever used
    elif len(order) == 1:
        b.rule(order[0], ("stay",))  # a one-agent round robin: the agent speaks again
    else:
        b.rule(None, ("next",))


def _start(team: dict, cfg: dict, kind: str, selection, b: FlowBuilder, pos, names: Names, order: list[str],
           path: str, src) -> str:
    """The flow's `start`: GraphFlow's entry, the first speaker a selector function picks, else the first
    participant (with the note saying why)."""
    from turnflow.migrate.selection import TASK_SOURCE

    start = order[0]
    first = selection.get(TASK_SOURCE) if selection else None
    if kind == "GraphFlow":
        start = _graph_start(cfg, pos, b, names, order, path, src)
    elif first and not first[0].terms and not first[0].maybe and isinstance(first[0].target, str):
        start = first[0].target  # the selector function picks the first speaker itself
    elif first and not first[0].terms and not first[0].maybe and first[0].target[0] == "candidates" \
            and len(first[0].target[1]) == 1:
        start = first[0].target[1][0]
    elif kind == "SelectorGroupChat":
        b.note("TF403", "the selector model also picks the first speaker; the flow starts with the first "
               "participant", pos.of(team, "provider"))
    elif kind == "MagenticOneGroupChat":
        b.note("TF408", "Magentic-One's orchestrator plans, keeps a progress ledger and picks every speaker "
               "(including the first); approximated by routing tools on each participant and the first "
               "participant as start", pos.of(team, "provider"))
    return start


def _caps(cfg: dict, kind: str, term, b: FlowBuilder, pos) -> None:
    """`max_turns` (the team's, MaxMessageTermination's minus the task message: the smaller) and `ttl`."""
    caps = []
    mt = cfg.get("max_turns")
    if kind == "MagenticOneGroupChat" and mt is None:
        mt = 20
    if isinstance(mt, int) and not isinstance(mt, bool) and mt >= 1:
        caps.append(mt)
    elif mt is not None:
        b.note("TF405", f"the team's `max_turns` is {_show_number(mt)}, {_bad_number(mt)}; ignored (the run is "
               "capped only by its termination condition)", pos.of(cfg, "max_turns"))
    if term.max_messages is not None:
        if term.max_messages - 1 < 1:
            b.note("TF405", f"MaxMessageTermination({term.max_messages}) stops before any agent speaks; "
                   "approximated by `max_turns 1`", term.max_at or Pos(1, 1))
        caps.append(max(1, term.max_messages - 1))
    if term.timeout is not None:
        b.ttl(term.timeout)
    if caps:
        if term.max_messages is not None and min(caps) == max(1, term.max_messages - 1):
            b.comment(f"MaxMessageTermination({term.max_messages}) counts the task message: "
                      f"{term.max_messages - 1} agent turns")
        b.max_turns(min(caps))


def _model_picks(selection, order: list[str], done: set) -> bool:
    """The selector model picks some speaker: no `selector_func`, or one of its outcomes leaves the
    choice to the model (None, candidates, or a return the reader cannot follow)."""
    if selection is None:
        return True
    return any(isinstance(o.target, tuple) and o.target[0] in ("model", "candidates", "unknown")
               for x in order + ["user"] if x not in done for o in selection.get(x, []))


def _selector_routing(team: dict, cfg: dict, kind: str, b: FlowBuilder, agents, term, order: list[str],
                      by_name: dict, done: set, selection, pos) -> None:
    """SelectorGroupChat / Magentic-One: each speaker's selector outcomes, or routing tools to every
    eligible participant + `next`; `done`: speakers whose round always ends the run."""
    given = cfg.get("allow_repeated_speaker", False)
    if isinstance(given, str) and given.startswith("<") and given.endswith(">"):  # Python the reader cannot evaluate
        b.note("TF410", f"`allow_repeated_speaker` is `{given[1:-1]}`, decided when the program runs; the flow "
               "follows AgentChat's default, False (no speaker is picked twice in a row)",
               pos.of(cfg, "allow_repeated_speaker"))
        given = False
    repeat = bool(given) or kind == "MagenticOneGroupChat"
    if kind == "SelectorGroupChat" and _model_picks(selection, order, done):
        b.note("TF403", "the selector model picks the next speaker; each participant gets one routing tool "
               "per possible successor, and the next participant when it calls none", pos.of(team, "provider"))
    _terminating_handoffs(b, agents, term, order)
    _text_message(b, term, by_name)
    capped = False
    for x in order:
        if x in done:
            continue
        b.section()
        eligible = [y for y in order if repeat or y != x] or [x]
        if selection is not None:
            from turnflow.migrate.selection import emit

            def choices(o, eligible=eligible):
                if o.target[0] == "candidates":
                    return [y for y in o.target[1] if y in order] or eligible
                return eligible

            def after(opts, x=x):
                i = order.index(x)
                return next((order[(i + k) % len(order)] for k in range(1, len(order) + 1)
                             if order[(i + k) % len(order)] in opts), opts[0])

            for text in selection.get("_comments", {}).get(x, []):
                b.comment(text)
            emit(b, x, selection[x], choices, after, lambda y: _describe(by_name, y))
            continue
        if len(eligible) == 1:
            b.rule(x, eligible[0])
            continue
        if len(eligible) > MAX_ROUTES and not capped:
            capped = True
            b.note("TF403", f"each participant may hand over to {len(eligible)} others; only the first "
                   f"{MAX_ROUTES} get a routing tool (the output stays bounded); the others are reached through "
                   "the fallback rotation", pos.of(team, "provider"))
        for y in eligible[:MAX_ROUTES]:
            b.handoff(x, y, f"transfer_to_{y}", _describe(by_name, y))
        b.rule(x, ("next",) if len(order) > 1 else x)


def _swarm_routing(team: dict, b: FlowBuilder, agents, term, order: list[str], by_name: dict, names: Names,
                   ended: set, texted: set, pos) -> None:
    """Swarm: each handoff a routing tool (a handoff out of the team terminates), `otherwise -> stay`."""
    b.note("TF403", "in a Swarm the speaker picks the next one by calling a handoff tool and speaks again "
           "when it calls none; the flow keeps the handoffs and falls back to `stay`", pos.of(team, "provider"))
    for a in agents:
        if not a.handoffs:
            continue
        b.section()
        for h in a.handoffs:
            target = h["target"]
            tool = _tool(b, h)
            desc = h["description"] or None
            if target in names.map and names.map[target] in by_name and target not in term.handoff_targets:
                b.handoff(a.name, names.map[target], tool, desc or _describe(by_name, names.map[target]))
            else:
                if target not in term.handoff_targets:
                    b.note("TF408", f"`{a.raw}` hands off to `{target}`, which is not in the team and has no "
                           "HandoffTermination; AutoGen ends the run there, so does the flow", h["at"])
                b.handoff(a.name, ("terminate", f"handoff_to_{target}"), tool, desc)
    _text_message(b, term, by_name)
    if not texted >= set(order) - ended:
        b.section()
        b.otherwise(("stay",))


def _terminating_handoffs(b: FlowBuilder, agents: list[Agent], term: Term, order: list[str]) -> None:
    """Outside a Swarm a handoff does not pick the speaker; only a HandoffTermination gives it effect."""
    for a in agents:
        for h in a.handoffs:
            if h["target"] in term.handoff_targets:
                b.section()
                b.handoff(a.name, ("terminate", f"handoff_to_{h['target']}"), _tool(b, h),
                          h["description"] or None)
            else:
                b.note("TF409", f"outside a Swarm, `{a.raw}`'s handoff to `{h['target']}` does not choose the "
                       "next speaker; ignored", h["at"])


def _tool(b: FlowBuilder, h: dict) -> str:
    tool = tool_name(h["name"])
    if tool != h["name"]:
        b.note("TF402", f"handoff tool name {json.dumps(h['name'])} is not a valid flow NAME; renamed to `{tool}`",
               h["at"])
    return tool


def _text_message(b: FlowBuilder, term: Term, by_name: dict) -> None:
    for s in term.text_message:
        if s is None or s in by_name:
            b.section()
            b.rule(s, ("terminate", "text_message"))


# --------------------------------------------------------------------------
#  GraphFlow
# --------------------------------------------------------------------------
def _nodes(cfg: dict, pos: Positions, path: str, src: SourceText) -> dict:
    graph = cfg.get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        raise fail("TF401", "GraphFlow without `graph.nodes`", pos.of(cfg, "graph") if cfg else Pos(1, 1),
                   path, src)
    return nodes


def _graph_start(cfg, pos, b, names, order, path, src) -> str:
    nodes = _nodes(cfg, pos, path, src)
    graph = cfg["graph"]
    start = graph.get("default_start_node")
    if isinstance(start, str) and start in names.map:
        return names.map[start]
    parents = {n: 0 for n in nodes}
    for _n, node in nodes.items():
        for e in _list(node.get("edges")) if isinstance(node, dict) else []:
            if isinstance(e, dict) and isinstance(e.get("target"), str) and e.get("target") in parents:
                parents[e["target"]] += 1
    roots = [names.map.get(n, n) for n in nodes if parents[n] == 0]
    if len(roots) > 1:
        b.note("TF407", f"the graph starts at several nodes, which AutoGen runs in parallel ({bounded(roots)}); "
               "a flow has one speaker at a time, so they no longer run in parallel: they run in the order "
               f"{bounded(roots, ' -> ')}, starting with `{roots[0]}`", pos.of(graph, "nodes"))
        cfg["_roots"] = roots
    return roots[0] if roots else order[0]


def _last_branch(chain: dict, x: str, ends: dict) -> str:
    """The branch that continues where `x`'s chain of branches leads: followed from `x`'s next
    until a node outside the chain (or one seen again). `ends` remembers the end of every node
    walked, so all the branches of a fan-out cost one walk, not one walk each."""
    path, y, on_path = [], chain[x][0], {x}
    while y in chain and y not in ends:
        if y in on_path:  # a cycle: walk it as it is, remembering nothing
            last, seen = chain[x][0], {x}
            while last in chain and last not in seen:
                seen.add(last)
                last = chain[last][0]
            return last
        on_path.add(y)
        path.append(y)
        y = chain[y][0]
    end = ends[y] if y in ends else y
    for p in path:
        ends[p] = end
    return end


def _parallel_branch(b: FlowBuilder, x: str, chain: dict, edges: dict, at: Pos, ends: dict) -> None:
    """`x`, a parallel branch made sequential: it hands over to the next branch; its own edges are
    taken by the last branch when that one leads there too, else they are lost (TF407 says so)."""
    nxt, origin, _ = chain[x]
    dropped = [t for t, _, _ in edges.get(x, [])]
    where = "the start" if origin == "the start" else f"`{origin}`"
    last = _last_branch(chain, x, ends)
    kept = {t for t, _, _ in edges.get(last, [])}
    lost = [t for t in dropped if t not in kept]
    if lost:
        b.note("TF407", f"`{x}` is a parallel branch of {where}, made sequential: it hands over to `{nxt}`, "
               f"and its own edges to {bounded(lost)} are not in the flow (the last branch, `{last}`, "
               "does not lead there)", at)
    else:
        b.comment(f"TF407: parallel branch of {where}, made sequential"
                  + (f" (its own edges to {bounded(dropped)} are taken by the last branch, `{last}`)"
                     if dropped else ""))
    b.rule(x, nxt)


def _graph(cfg, pos, b: FlowBuilder, names: Names, order, path, src, ended=frozenset(),
           completes: Optional[dict] = None) -> None:
    nodes = _nodes(cfg, pos, path, src)
    edges: dict[str, list[tuple[str, Any, dict]]] = {}  # condition: None, a text, or an unreadable marker
    for raw, node in nodes.items():
        name = names.map.get(raw)
        if name is None:
            raise fail("TF401", f"graph node `{raw}` is not a participant", pos.of(nodes, raw), path, src)
        if not isinstance(node, dict) or not isinstance(node.get("edges", []), list):
            what = "not an object" if not isinstance(node, dict) else "`edges` is not a list"
            raise fail("TF401", f"graph node `{raw}` is malformed ({what}); expected {{\"name\": ..., \"edges\": "
                       "[...]}", pos.of(node) if isinstance(node, (dict, list)) else pos.of(nodes, raw), path, src)
        edges[name] = [_edge(b, e, raw, node, names, pos, path, src) for e in _list(node.get("edges"))]
    joins = _joins(nodes, edges, names, order, pos)
    chain = _fan_out(b, cfg, nodes, edges, names, order, pos)
    ends: dict[str, str] = {}
    for x in order:
        if x not in edges or x in ended:
            continue
        b.section()
        for message, at in joins.get(x, []):
            b.note("TF407", message, at)
        if x in chain:
            _parallel_branch(b, x, chain, edges, pos.of(nodes, names.raw_of(x)), ends)
            continue
        _node_rules(b, x, edges[x], (completes or {}).get(x))


def _edge(b: FlowBuilder, e: Any, raw: str, node: dict, names: Names, pos, path: str, src) -> tuple[str, Any, dict]:
    """(target, condition: None / a text / ("not", text) / an unreadable marker, the edge)."""
    if not isinstance(e, dict) or not isinstance(e.get("target"), str) or e["target"] not in names.map:
        raise fail("TF401", "a graph edge names a target that is not a participant",
                   pos.of(e) if isinstance(e, (dict, list)) else pos.of(node), path, src)
    cond = e.get("condition")
    if isinstance(cond, dict) and "_python_text" in cond:
        neg = "not " if cond.get("_negated") else ""
        if cond.get("_approximate"):
            b.note("TF406", f"the edge condition tests {cond['_approximate']} text; approximated by "
                   f"`{neg}text contains {json.dumps(cond['_python_text'])}`", cond["_at"])
        cond = ("not", cond["_python_text"]) if neg else cond["_python_text"]
    elif isinstance(cond, dict) and "_python_unreadable" in cond:
        pass  # kept: a routing tool
    elif cond is not None and not isinstance(cond, str):
        b.note("TF406", f"the condition of the edge `{raw}` -> `{e['target']}` cannot be read; kept as a "
               "routing tool of the speaker", pos.of(e))
        cond = {"_python_unreadable": json.dumps(cond)[:80], "_at": pos.of(e)}
    return names.map[e["target"]], cond, e


def _joins(nodes: dict, edges: dict, names: Names, order: list[str], pos) -> dict[str, list[tuple[str, Pos]]]:
    """Nodes that wait for several parents (the edges of one activation group, "all"): TF407 texts."""
    incoming: dict[str, dict[str, list[str]]] = {}
    for x in order:
        for t, _, e in edges.get(x, []):
            raw_t = names.raw_of(t, t)
            node_t: dict = nodes[raw_t] if isinstance(nodes.get(raw_t), dict) else {}
            group: str = e["activation_group"] if isinstance(e.get("activation_group"), str) and \
                e.get("activation_group") else t
            how = e.get("activation_condition") if isinstance(e.get("activation_condition"), str) \
                else node_t.get("activation", "all")
            if how == "all":
                incoming.setdefault(t, {}).setdefault(group, []).append(x)
    joins: dict[str, list[tuple[str, Pos]]] = {}
    for t in order:
        for group, parents in incoming.get(t, {}).items():
            if len(parents) > 1:
                raw_t = names.raw_of(t)
                joins.setdefault(t, []).append((
                    f"`{t}` waits for all of {bounded(parents)} (activation group {json.dumps(group)}); a flow "
                    "has one speaker at a time, so it runs after whichever of them hands over to it",
                    pos.of(nodes, raw_t)))
    return joins


def _fan_out(b: FlowBuilder, cfg: dict, nodes: dict, edges: dict, names: Names, order: list[str],
             pos) -> dict[str, tuple[str, str, dict]]:
    """The sequential approximation of fan-out: X -> [T1..Tk] runs T1, ..., Tk one after another
    (several start nodes too): each branch -> (the next one, where it came from, the edge)."""
    chain: dict[str, tuple[str, str, dict]] = {}
    for x in order:
        unconditional = [t for t, c, _ in edges.get(x, []) if c is None]
        if len(unconditional) > 1:
            b.note("TF407", f"`{x}` fans out to {bounded(unconditional)}, which AutoGen runs in parallel; the "
                   "flow runs one speaker at a time, so they no longer run in parallel: they run in the order "
                   f"{bounded([x] + unconditional, ' -> ')}, the last one continuing to where it leads",
                   pos.of(nodes, names.raw_of(x)))
            for t1, t2 in zip(unconditional, unconditional[1:]):
                if t1 not in chain:
                    chain[t1] = (t2, x, edges[x][0][2])
    roots = cfg.get("_roots") or []
    for r1, r2 in zip(roots, roots[1:]):  # several start nodes: chained in order
        if r1 not in chain:
            chain[r1] = (r2, "the start", {})
    return chain


def _node_rules(b: FlowBuilder, x: str, out: list, complete: Optional[str] = None) -> None:
    """A node's rules: text conditions in order, unreadable ones as routing tools, then the
    unconditional edge (or `no_edge_matched`); a leaf ends the run."""
    if not out:
        b.rule(x, ("terminate", complete or "graph_complete"))
        return
    for t, c, _ in out:
        if c is None:
            continue
        if isinstance(c, dict):
            b.note("TF406", f"edge condition `{c['_python_unreadable']}` cannot be expressed; kept as a routing "
                   f"tool of `{x}`", c["_at"])
            b.handoff(x, t, f"transfer_to_{t}", f"The condition of the edge to {t} holds")
            continue
        b.rule(x, t, [("text", c)] if isinstance(c, str) else [("not", ("text", c[1]))])
    unconditional = [t for t, c, _ in out if c is None]
    if unconditional:
        b.rule(x, unconditional[0])
    else:
        b.rule(x, ("terminate", complete or "no_edge_matched"))
