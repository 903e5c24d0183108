"""AutoGen 0.4+ teams written in Python → `.flow`.

The common form of AutoGen AgentChat code builds its team in Python:
`RoundRobinGroupChat([a, b], termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(10))`,
`SelectorGroupChat(..., selector_func=f, candidate_func=g)`, `Swarm([...])` with
`handoffs=[...]` on the agents, `MagenticOneGroupChat`, and `GraphFlow` built
with `DiGraphBuilder` (`add_node`, `add_edge(..., condition=...)`,
`set_entry_point`). This front end reads those constructors with `ast` (never
running the code) into the same component structure a `team.dump_component()`
JSON has, with positions in the Python file, and hands it to the JSON front end
(`turnflow.frameworks.autogen.reader_json`), so both forms migrate identically. What only
Python can say (a lambda condition on an edge, a selector function) is read
here.
"""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass, field
from typing import Any, Optional

from turnflow.migrate import surface
from turnflow.migrate.common import Migration, Names, Pos, block_names, fail, render
from turnflow.migrate.pyread import (Module, assigned_name, attribute_changes, callee, calls, filled_in_loop, is_literal, kwarg,
                                     loop_message, note_choices, one_line, parse_module, pos, scopes, change_sites, changed_inside,
                                     why_not_literal)
from turnflow.source import SourceText

TEAMS = ("RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "GraphFlow", "MagenticOneGroupChat")
AGENTS = ("AssistantAgent", "UserProxyAgent", "CodeExecutorAgent", "SocietyOfMindAgent", "MultimodalWebSurfer",
          "FileSurfer", "MagenticOneCoderAgent", "OpenAIAssistantAgent", "VideoSurfer", "OpenAIAgent")
TERMINATIONS = ("MaxMessageTermination", "TextMentionTermination", "HandoffTermination", "SourceMatchTermination",
                "TextMessageTermination", "FunctionCallTermination", "TimeoutTermination", "StopMessageTermination",
                "ExternalTermination", "TokenUsageTermination", "FunctionalTermination")
_PACKAGE = {"team": "autogen_agentchat.teams", "agent": "autogen_agentchat.agents",
            "termination": "autogen_agentchat.conditions"}


@dataclass
class PyPositions:
    """`Positions` for components read from Python: each dict, and each (dict, key), → a Pos."""

    at: dict[int, Pos] = field(default_factory=dict)
    keys: dict[tuple[int, str], Pos] = field(default_factory=dict)
    keep: list = field(default_factory=list)

    def of(self, obj: Any, key: Optional[str] = None) -> Pos:
        if key is not None and (id(obj), key) in self.keys:
            return self.keys[(id(obj), key)]
        return self.at.get(id(obj), Pos(1, 1))

    def mark(self, obj: Any, node: Optional[pyast.AST], key: Optional[str] = None) -> Any:
        self.keep.append(obj)
        if node is not None:
            if key is None:
                self.at[id(obj)] = pos(node)
            else:
                self.keys[(id(obj), key)] = pos(node)
        return obj


class Reader:
    def __init__(self, mod: Module):
        self.mod = mod
        self.p = PyPositions()
        self.agents: dict[int, dict] = {}  # id(constructor call) -> agent component
        self.calls: dict[int, pyast.Call] = {}  # the agent and termination calls read, by id
        # the name a wrapped agent's messages carry -> the MessageFilterAgent that speaks them
        self.wrapped: dict[str, str] = {}

    # -- agents ------------------------------------------------------------------------
    def is_agent(self, call: pyast.Call) -> bool:
        name = callee(call)
        return name in AGENTS or (name.endswith("Agent") and kwarg(call, "name", 0) is not None)

    def agent(self, node: Optional[pyast.AST]) -> Optional[dict]:
        node = self.mod.resolve(node)
        if not isinstance(node, pyast.Call) or not self.is_agent(node):
            return None
        if id(node) in self.agents:
            return self.agents[id(node)]
        mod = self.mod
        name_node = kwarg(node, "name", 0)
        name = mod.string(name_node) or assigned_name(mod, node)
        if name is None:
            return None
        cfg: dict = {"name": name}
        self.p.mark(cfg, name_node or node, "name")
        desc = mod.string(kwarg(node, "description"))
        if desc is not None:
            cfg["description"] = desc
        tools = []
        for t in mod.elements(kwarg(node, "tools")) or []:
            tname = self.tool_name(t)
            if tname is not None:
                tools.append(self.p.mark({"provider": "autogen_core.tools.FunctionTool",
                                          "config": {"name": tname}}, t))
        if tools:
            cfg["tools"] = tools
        handoffs = []
        for h in mod.elements(kwarg(node, "handoffs")) or []:
            handoffs.append(self.handoff(h))
        if handoffs:
            cfg["handoffs"] = [h for h in handoffs if h is not None]
            self.p.mark(cfg, kwarg(node, "handoffs"), "handoffs")
        comp = {"provider": f"{_PACKAGE['agent']}.{callee(node)}", "component_type": "agent", "config": cfg}
        self.p.mark(comp, node)
        self.p.mark(comp, node, "provider")
        self.agents[id(node)] = comp
        self.calls[id(node)] = node
        if callee(node) == "MessageFilterAgent":  # the wrapped agent answers: its messages carry its name
            inner = self.agent(kwarg(node, "wrapped_agent", 1))
            if inner is not None:
                self.wrapped.setdefault(inner["config"]["name"], name)
                cfg["wrapped_agent"] = inner  # as `dump_component()` writes it
        return comp

    def sources(self, names: list[Optional[str]]) -> list[Optional[str]]:
        """Message sources as a termination condition tests them: a wrapped agent's name is also its
        MessageFilterAgent's, the participant that speaks its messages."""
        out: list[Optional[str]] = []
        for n in names:
            out.append(n)
            if n in self.wrapped and self.wrapped[n] not in names:
                out.append(self.wrapped[n])
        return out

    def tool_name(self, node: Optional[pyast.AST]) -> Optional[str]:
        node = self.mod.resolve(node)
        if isinstance(node, pyast.Name):
            return node.id
        if isinstance(node, pyast.Call) and callee(node) == "FunctionTool":
            given = self.mod.string(kwarg(node, "name"))
            fn = kwarg(node, "func", 0)
            return given or (fn.id if isinstance(fn, pyast.Name) else None)
        return None

    def handoff(self, node: Optional[pyast.AST]) -> Optional[Any]:
        mod = self.mod
        s = mod.string(node)
        if s is not None:
            return s
        target_agent = self.agent(node)
        if target_agent is not None:  # handoffs=[other_agent]
            return target_agent["config"]["name"]
        node = mod.resolve(node)
        if isinstance(node, pyast.Call) and callee(node) == "Handoff":
            target = kwarg(node, "target", 0)
            t = mod.string(target)
            if t is None and self.agent(target) is not None:
                t = self.agent(target)["config"]["name"]  # type: ignore[index]
            if t is None:
                return None
            h: dict = {"target": t}
            for key in ("description", "name"):
                v = mod.string(kwarg(node, key))
                if v is not None:
                    h[key] = v
            return self.p.mark(h, node)
        return None

    # -- termination conditions -------------------------------------------------------------
    def termination(self, node: Optional[pyast.AST]) -> Optional[dict]:
        mod = self.mod
        node = mod.resolve(node)
        if node is None or (isinstance(node, pyast.Constant) and node.value is None):
            return None
        if isinstance(node, pyast.BinOp) and isinstance(node.op, (pyast.BitOr, pyast.BitAnd)):
            kind = "OrTerminationCondition" if isinstance(node.op, pyast.BitOr) else "AndTerminationCondition"
            parts = [self.termination(node.left), self.termination(node.right)]
            comp = {"provider": f"{_PACKAGE['termination']}.{kind}",
                    "config": {"conditions": [p for p in parts if p is not None]}}
            self.p.mark(comp, node)
            return self.p.mark(comp, node, "provider")
        if not isinstance(node, pyast.Call):
            comp = {"provider": f"<{pyast.unparse(node)}>", "config": {}}
            self.p.mark(comp, node)
            return self.p.mark(comp, node, "provider")
        kind = callee(node)
        self.calls[id(node)] = node
        comp = {"provider": f"{_PACKAGE['termination']}.{kind}", "config": self._termination_config(kind, node)}
        self.p.mark(comp, node)
        return self.p.mark(comp, node, "provider")

    def _termination_config(self, kind: str, node: pyast.Call) -> dict:
        """The component config of one termination condition's constructor call."""
        mod = self.mod
        cfg: dict = {}
        if kind == "MaxMessageTermination":
            cfg["max_messages"] = self.number(kwarg(node, "max_messages", 0))
        elif kind == "TextMentionTermination":
            cfg["text"] = mod.string(kwarg(node, "text", 0))
            srcs = mod.elements(kwarg(node, "sources", 1))
            if srcs is not None:
                cfg["sources"] = self.sources([self.name_of(s) for s in srcs])
        elif kind == "SourceMatchTermination":
            cfg["sources"] = self.sources([self.name_of(s) for s in mod.elements(kwarg(node, "sources", 0)) or []])
        elif kind == "HandoffTermination":
            cfg["target"] = self.name_of(kwarg(node, "target", 0))
        elif kind == "TextMessageTermination":
            src = self.name_of(kwarg(node, "source", 0))
            cfg["source"] = self.wrapped.get(src, src) if src is not None else None
        elif kind == "FunctionCallTermination":
            cfg["function_name"] = mod.string(kwarg(node, "function_name", 0))
        elif kind == "TimeoutTermination":
            cfg["timeout_seconds"] = self.number(kwarg(node, "timeout_seconds", 0))
        return cfg

    def number(self, node: Optional[pyast.AST]) -> Any:
        value = self.mod.literal(node)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
        if node is None:
            return None
        return f"<{pyast.unparse(node)}>"  # reported by the JSON front end as a bad value

    def name_of(self, node: Optional[pyast.AST]) -> Optional[str]:
        s = self.mod.string(node)
        if s is not None:
            return s
        a = self.agent(node)
        if a is not None:
            return a["config"]["name"]
        if isinstance(node, pyast.Attribute) and node.attr == "name":  # planner.name
            a = self.agent(node.value)
            if a is not None:
                return a["config"]["name"]
        return None

    # -- graphs -------------------------------------------------------------------------------
    def graph(self, node: Optional[pyast.AST], team_call: pyast.Call) -> Optional[dict]:
        """`builder.build()` for a DiGraphBuilder bound to a variable: replay its method calls."""
        mod = self.mod
        node = mod.resolve(node)
        if not (isinstance(node, pyast.Call) and callee(node) == "build"):
            return None
        builder = _root(node.func)
        if builder is None:
            return None
        nodes: dict[str, dict] = {}
        graph: dict = {"nodes": nodes}
        self.p.mark(graph, node)
        for call in _builder_calls(mod, builder):
            method = callee(call)
            self.calls[id(call)] = call  # bound to DiGraphBuilder's signature in _surface_notes
            mod.note_guarded(call, team_call)  # under an `if` / in a loop the team is not in: TF410
            if method == "add_node":
                a = self.agent(kwarg(call, "agent", 0) or kwarg(call, "node"))  # `node=`: TF411 under 0.7
                if a is None:
                    graph.setdefault("_errors", []).append((call, _not_an_agent(mod, call, "`add_node` is given "
                                                                                    "something that is not")))
                    continue
                name = a["config"]["name"]
                entry = nodes.setdefault(name, self.p.mark({"name": name, "edges": []}, call))
                activation = mod.string(kwarg(call, "activation", 1))
                if activation is not None:
                    entry["activation"] = activation
                self.p.mark(nodes, call, name)
            elif method == "add_edge":
                src_a, dst_a = self.agent(kwarg(call, "source", 0)), self.agent(kwarg(call, "target", 1))
                if src_a is None or dst_a is None:
                    graph.setdefault("_errors", []).append((call, _not_an_agent(mod, call, "`add_edge` names an "
                                                                                    "end that is not")))
                    continue
                s, t = src_a["config"]["name"], dst_a["config"]["name"]
                edge: dict = {"target": t, "condition": None}
                cond = kwarg(call, "condition", 2)
                if cond is not None and not (isinstance(cond, pyast.Constant) and cond.value is None):
                    text = mod.string(cond)
                    edge["condition"] = text if text is not None else _lambda_condition(mod, cond)
                for key in ("activation_group", "activation_condition"):
                    v = mod.string(kwarg(call, key))
                    if v is not None:
                        edge[key] = v
                self.p.mark(edge, call)
                nodes.setdefault(s, self.p.mark({"name": s, "edges": []}, call))["edges"].append(edge)
                nodes.setdefault(t, self.p.mark({"name": t, "edges": []}, call))
            elif method == "set_entry_point":
                a = self.agent(kwarg(call, "name", 0))
                if a is not None:
                    graph["default_start_node"] = a["config"]["name"]
        return graph

    # -- teams ----------------------------------------------------------------------------------
    def _participant(self, e: Any) -> dict:
        """A participant: an agent of the file (a graph node's name, or an expression)."""
        if isinstance(e, str):
            return next((c for c in self.agents.values() if c["config"]["name"] == e), None)  # type: ignore[arg-type]
        a = self.agent(e)
        if a is None:
            a = self._nested_team(e)
        if a is None:
            raise fail("TF401", f"`{pyast.unparse(e)}` in the participants is not an agent or team created in "
                       "this file", pos(e), self.mod.path, self.mod.src)
        return a

    def _nested_team(self, e: Any) -> Optional[dict]:
        """A team taking part in another team (AutoGen >= 0.6): one participant, named by its `name=`
        (else its class's DEFAULT_NAME), its description AutoGen's default when not given."""
        node = self.mod.resolve(e)
        if not isinstance(node, pyast.Call) or callee(node) not in TEAMS:
            return None
        kind = callee(node)
        name = self.mod.string(kwarg(node, "name")) or kind
        default = "A team of agents" if kind == "GraphFlow" else "A team of agents."
        cfg = {"name": name, "description": self.mod.string(kwarg(node, "description")) or default}
        self.p.mark(cfg, kwarg(node, "name") or node, "name")
        comp = {"provider": f"{_PACKAGE['team']}.{kind}", "component_type": "team", "config": cfg}
        self.p.mark(comp, node)
        return self.p.mark(comp, node, "provider")

    def _graph_config(self, cfg: dict, call: pyast.Call, graph: Optional[dict]) -> None:
        """GraphFlow's `graph=builder.build()`, read from the DiGraphBuilder calls of the file."""
        mod = self.mod
        if graph is None:
            graph = self.graph(kwarg(call, "graph", 1), call)
        if graph is None:
            raise fail("TF401", "GraphFlow's `graph` must be `builder.build()` of a DiGraphBuilder built in this "
                       "file", pos(kwarg(call, "graph", 1) or call), mod.path, mod.src)
        for at, message in graph.pop("_errors", []):
            raise fail("TF401", message, pos(at), mod.path, mod.src)
        cfg["graph"] = graph
        self.p.mark(cfg, kwarg(call, "graph", 1) or call, "graph")

    def team(self, call: pyast.Call, block: str) -> dict:
        mod = self.mod
        kind = callee(call)
        parts_node = kwarg(call, "participants", 0)
        if parts_node is not None and filled_in_loop(mod, parts_node):
            raise fail("TF401", loop_message(parts_node, mod), pos(parts_node), mod.path, mod.src)
        elements = mod.elements(parts_node)
        graph = None
        if elements is None and kind == "GraphFlow":
            graph = self.graph(kwarg(call, "graph", 1), call)
            if graph is not None:  # participants=builder.get_participants(): the nodes, in order
                elements = []
                for n in graph["nodes"]:
                    elements.append(n)
        if elements is None:
            raise fail("TF401", "the team's participants must be a list of agents written out in the file"
                       + why_not_literal(mod, parts_node), pos(parts_node or call), mod.path, mod.src)
        cfg: dict = {"name": block, "participants": [self._participant(e) for e in elements]}
        self.p.mark(cfg, parts_node or call, "participants")
        term = self.termination(kwarg(call, "termination_condition"))
        if term is not None:
            cfg["termination_condition"] = term
        self._settings(cfg, call)
        if kind == "GraphFlow":
            self._graph_config(cfg, call, graph)
        comp = {"provider": f"{_PACKAGE['team']}.{kind}", "component_type": "team", "config": cfg}
        self.p.mark(comp, call)
        self.p.mark(comp, call, "provider")
        python: dict[str, Any] = {"reader": self}
        for key in ("selector_func", "candidate_func"):
            fn = kwarg(call, key)
            if fn is not None and not (isinstance(fn, pyast.Constant) and fn.value is None):
                python[key] = fn
        comp["_python"] = python
        return comp

    def _settings(self, cfg: dict, call: pyast.Call) -> None:
        """`max_turns`, `allow_repeated_speaker`, `emit_team_events`, `max_stalls` of the team call
        (a value that is not a literal kept as `<source>`, which the JSON front end reports)."""
        mt = kwarg(call, "max_turns")
        if mt is not None:
            cfg["max_turns"] = self.number(mt)
            self.p.mark(cfg, mt, "max_turns")
        for key in ("allow_repeated_speaker", "emit_team_events", "max_stalls"):
            v = kwarg(call, key)
            if v is not None:
                value = self.mod.literal(v)
                cfg[key] = value if is_literal(value) else f"<{pyast.unparse(v)}>"
                self.p.mark(cfg, v, key)



def _surface_notes(reader: Reader, team_call: pyast.Call, b) -> None:
    """The team call, its agents and termination conditions bound to AgentChat's signatures (TF411
    when one does not bind) and each argument of a parameter the flow does not model."""
    for call in [team_call, *reader.calls.values()]:
        name = callee(call)
        a = surface.api("agentchat", name) or surface.api("agentchat", f"DiGraphBuilder.{name}")
        if a is None:
            continue
        bound = surface.bind(call, a)
        if bound.problem is not None:
            node, error = bound.problem
            fails = "" if "known only when the program runs" in error else " (the program fails here)"
            b.note("TF411", f"`{one_line(call, 50)}` does not bind to autogen-agentchat 0.7's signature: {error}"
                   f"{fails}; the flow is read from the arguments that bind", pos(node))
            continue
        for code, node, message in surface.not_modelled(bound):
            b.note(code, f"`{one_line(node, 40)}` as {message}", pos(node))


def _changed_after_built(reader: Reader, team_call: pyast.Call, b) -> None:
    """A statement that changes the team after it is built (`team._max_turns = 2`,
    `team._participants.reverse()`) is TF401, as a GroupChat's; one that changes one of its agents
    (`a._handoffs[...] = ...`, `a._description = ...`) a finding there: what AgentChat runs is not what
    the constructor was given."""
    mod = reader.mod
    agents = {id(c) for c in reader.calls.values() if reader.is_agent(c)}
    for st, fns in change_sites(mod):
        if not isinstance(st, (pyast.Assign, pyast.AugAssign, pyast.AnnAssign, pyast.Expr, pyast.Delete)):
            continue
        for obj, attr in attribute_changes(st):
            inside = changed_inside(fns, obj)
            target = mod.resolve(obj) if isinstance(obj, pyast.Name) and (inside or not fns) else None
            when = f"{inside}: if it runs, after it is built" if inside else "after it is built"
            if target is team_call:
                raise fail("TF401", f"`{one_line(st, 50)}` changes the team's `{attr}` {when}; the migrator "
                           f"reads what `{callee(team_call)}(...)` is given: pass it there, or migrate the running "
                           "object with --import", pos(st), mod.path, mod.src)
            if target is not None and id(target) in agents:
                code = "TF406" if attr in ("_handoffs", "_tools", "_workbench") else "TF409"
                b.note(code, f"`{one_line(st, 50)}` changes `{pyast.unparse(obj)}` {when}; not read (the "
                       "flow keeps what its constructor was given)", pos(st))


def _not_an_agent(mod: Module, call: pyast.Call, what: str) -> str:
    """Why a DiGraphBuilder call's agent cannot be read: it is in a loop the static pass could not
    unroll (its loop variable is known only when the program runs), or it is not an agent."""
    if id(call) in mod.in_loop:
        return (f"`{callee(call)}` is called in a loop the migrator cannot unroll (only `for x in [a, b, c]:` over "
                "a literal list is), so which agent it is given is known only when the program runs; write the "
                "calls out, or migrate the running object with --import")
    return f"{what} an agent created in this file"


def _root(node: pyast.AST) -> Optional[str]:
    """The variable at the root of `builder.add_node(a).add_node(b).build`."""
    while isinstance(node, (pyast.Attribute, pyast.Call)):
        node = node.value if isinstance(node, pyast.Attribute) else node.func
    return node.id if isinstance(node, pyast.Name) else None


def _builder_calls(mod: Module, builder: str) -> list[pyast.Call]:
    out = []
    for call in calls(mod.tree):
        if callee(call) in ("add_node", "add_edge", "set_entry_point", "add_conditional_edges") \
                and isinstance(call.func, pyast.Attribute) \
                and _root(call.func.value) == builder:
            out.append(call)
    # chained calls `builder.add_node(a).add_node(b)` start at the same place: the inner one runs first
    return sorted(out, key=lambda c: (c.lineno, c.col_offset, -_depth(c)))


def _depth(call: pyast.Call) -> int:
    d, node = 0, call.func
    while isinstance(node, (pyast.Attribute, pyast.Call)):
        if isinstance(node, pyast.Call):
            d += 1
        node = node.value if isinstance(node, pyast.Attribute) else node.func
    return -d


def _lambda_condition(mod: Module, node: pyast.AST) -> dict:
    """An edge condition written in Python: `lambda msg: "APPROVE" in msg.to_model_text()` → the
    marker string (`not in`: negated); anything else is kept as unreadable (the JSON front end reports it)."""
    from turnflow.migrate.pyread import function_def

    fn = function_def(mod, node)
    body = None
    if isinstance(fn, pyast.Lambda):
        body = fn.body
    elif fn is not None and len(fn.body) == 1 and isinstance(fn.body[0], pyast.Return):
        body = fn.body[0].value
    negated = False
    if isinstance(body, pyast.UnaryOp) and isinstance(body.op, pyast.Not):
        body, negated = body.operand, True  # `not ("X" in msg.content)`
    if isinstance(body, pyast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], (pyast.In, pyast.NotIn)):
        s = mod.string(body.left)
        if s is not None and any(k in pyast.unparse(body.comparators[0]) for k in ("content", "to_model_text",
                                                                                  "to_text")):
            lowered = "lower()" in pyast.unparse(body.comparators[0])
            return {"_python_text": s, "_approximate": "case-folded" if lowered else "", "_at": pos(node),
                    "_negated": negated != isinstance(body.ops[0], pyast.NotIn)}
    return {"_python_unreadable": pyast.unparse(node)[:80], "_at": pos(node)}


def migrate(text: str, path: str, src: Optional[SourceText] = None) -> Migration:
    from turnflow.frameworks.autogen import reader_json as autogen

    src = src or SourceText(text, path)
    mod = parse_module(text, path, src)
    found = []
    for scope in scopes(mod):
        reader = None
        for call in scope.own_calls:
            if callee(call) in TEAMS:
                reader = reader or Reader(scope.mod)
                found.append((reader, call, scope.name))
    if not found:
        raise fail("TF401", "no AutoGen team (" + ", ".join(TEAMS) + ") is built in this file: nothing to migrate",
                   Pos(1, 1), path, src)
    names = block_names([(s, assigned_name(r.mod, c) or callee(c)) for r, c, s in found], "team")
    builders = []
    for (reader, call, _), block in zip(found, names):
        if id(call) in reader.mod.in_loop:
            raise fail("TF401", "the team is built in a loop the migrator cannot unroll; it reads code without "
                       "running it", pos(call), path, src)
        reader.mod.take_choices()
        comp = reader.team(call, block)
        b = autogen._team(comp, reader.p, Names(), path, src)  # type: ignore[arg-type]
        _surface_notes(reader, call, b)
        _changed_after_built(reader, call, b)
        note_choices(reader.mod, b)
        builders.append(b)
    return render(builders, [f"Migrated by `turnflow migrate` from {path} (AutoGen team in Python)."],
                  path, src, "autogen")

