"""The speaker graph: the IR every graph rule (TF2xx), `check --stats` and the
pictures work on (docs/analysis.md). It reads the block's rules lowered to
`turnflow.spec` kinds (`compiler/lower.py`): a rule's condition says for which
speakers it is *never* / *always* / *maybe* (`decide`), its target where the turn
can go (`successors`), so the analysis and the runtime share one meaning.

For a workflow block the graph's nodes are the participants plus one node
`END`. For each participant `s` (as last speaker) the rules are walked in
evaluation order (priority ascending, then file order; a `handoff` is the rule
`SOURCE -> TARGET when tool TOOL` at its file position with priority 0) and
classified for `s`:

- *never*: SOURCE is another participant, or a `tool t` term where the block
  declares tools and `s` does not own `t`;
- *always*: SOURCE is `s` or `*` and there is no COND;
- *maybe*: otherwise.

The edges of `s` are the targets of every *maybe* rule and of the first
*always* rule (the walk stops there); if no rule is *always*, also the
`otherwise` target (default `terminate "after_work"`). A `previous` target
resolves to every participant with an edge into `s` (plus, for `start`, the
participant after it: the first turn), computed as a fixpoint once the other
edges are known; its edges are *maybe* (docs/analysis.md).

Every algorithm here is linear in the size of the graph (BFS, Tarjan SCC,
one topological pass); building the graph visits, for each speaker, its own
rules and the `*` rules up to its first *always* rule.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from turnflow.compiler import digraph as dg
from turnflow.compiler.lower import Lowering, RuleInfo, lower_rules
from turnflow.diagnostics.listing import bounded
from turnflow.dsl import ast
from turnflow.spec.meaning import TargetMeaning

END = "<END>"

Statement = Union[ast.Rule, ast.Handoff, ast.Otherwise]


@dataclass(frozen=True)
class TrapComponent:
    """A bottom strongly connected component of the trapped set: its members
    (declaration order) and one cycle through its first member."""

    members: tuple[str, ...]
    cycle: tuple[str, ...]  # first member ... first member


def _first(by_type: dict[type, list[Any]], cls: type) -> Any:
    found = by_type.get(cls)
    return found[0] if found else None


class SpeakerGraph:
    """The speaker graph of one workflow block.

    `g` is a `turnflow.compiler.digraph.DiGraph` over participant names plus `END`; every edge
    has `rules` (the statements it came from, in evaluation order; `None`
    stands for the implicit default `otherwise -> terminate "after_work"`) and
    `kind`: "always" when the edge comes from the speaker's deciding *always*
    rule, else "maybe" when it comes from a *maybe* rule, else "otherwise".
    """

    def __init__(self, block: ast.Block):
        self.block = block
        by_type = block.by_type()  # statement class -> its statements (of that class)
        participants: list[ast.Participant] = by_type.get(ast.Participant, [])
        names = list(dict.fromkeys(p.name.name for p in participants))
        self.participants: list[str] = names
        self.index: dict[str, int] = {n: i for i, n in enumerate(names)}
        self.start_stmt: Optional[ast.Start] = _first(by_type, ast.Start)
        start = self.start_stmt.name.name if self.start_stmt else None
        self.start: Optional[str] = start if start in self.index else None
        self.max_turns_stmt: Optional[ast.MaxTurns] = _first(by_type, ast.MaxTurns)
        self.max_turns: Optional[int] = self.max_turns_stmt.value.value if self.max_turns_stmt else None
        self.initiator: Optional[str] = next((p.name.name for p in participants if p.role == "initiator"), None)
        self.otherwise: Optional[ast.Otherwise] = _first(by_type, ast.Otherwise)
        self._order = tuple(names)
        self._initiator = self.initiator if self.initiator in self.index else None
        self._owners(participants, by_type.get(ast.Handoff, []))
        lowering = Lowering()
        self.rules: list[RuleInfo] = lower_rules(block, lowering)
        #: every leaf condition of the rules, each once (equal leaves are one object)
        self.leaves = lowering.leaves()
        self.otherwise_target: TargetMeaning = lowering.target(self.otherwise.target if self.otherwise else None)
        #: speaker -> its deciding *always* rule (None: falls through to `otherwise`)
        self.first_always: dict[str, Optional[RuleInfo]] = {}
        #: speaker -> the rules it can take (*maybe*, then its deciding *always* rule), in evaluation order
        self.takes: dict[str, list[RuleInfo]] = {}
        #: evaluation positions of rules that are *maybe* or the deciding *always* rule for some speaker
        self.live: set[int] = set()
        #: speakers for which no rule is *always* (the `otherwise` target is an edge of theirs)
        self.otherwise_speakers: list[str] = []
        self.g: dg.DiGraph[str] = dg.DiGraph()
        self._build()
        self._cache: dict[str, object] = {}

    # -- construction ---------------------------------------------------------
    def _owners(self, participants: list[ast.Participant], handoffs: list[ast.Handoff]) -> None:
        """Tools: a participant owns those in its `tools [...]` and those of the handoffs it is the source of."""
        self.owned: dict[str, set[str]] = {n: set() for n in self.participants}
        declares = bool(handoffs)
        for p in participants:
            if p.tools:  # `tools []` alone declares nothing: at run time any tool may then be called
                declares = True
                self.owned[p.name.name].update(t.name for t in p.tools)
        for h in handoffs:
            if h.source.name in self.owned:
                self.owned[h.source.name].add(h.tool.name)
        self.declares_tools: bool = declares

    def decide(self, r: RuleInfo, s: str) -> Optional[bool]:
        """Rule `r` for last speaker `s`: True *always*, False *never*, None *maybe*."""
        return r.when.decide(s, self.owned.get(s, ()) if self.declares_tools else None)

    def never(self, r: RuleInfo, s: str) -> bool:
        """Is rule `r` *never* for last speaker `s`?"""
        return self.decide(r, s) is False

    def targets(self, s: str, target: TargetMeaning) -> list[str]:
        """The nodes a target can give when `s` spoke last (END: the session closes), participants only."""
        nodes = target.successors(s, self._order, self._initiator,
                                  self.speakers_before(s) if target.uses_previous else (None,))
        if len(nodes) == 1:
            n = nodes[0]
            return [END] if n is None else [n] if n in self.index else []
        return self.sorted_names(END if n is None else n for n in nodes if n is None or n in self.index)

    def speakers_before(self, s: str) -> list[Optional[str]]:
        """Who may have spoken before `s`: every participant with an edge to `s` (so far:
        `_build` repeats until nothing changes), and None (nobody: the first turn) when `s`
        is `start`."""
        out: list[Optional[str]] = [p for p in self.g.predecessors(s) if p in self.index] if s in self.g else []
        if s == self.start:
            out.append(None)
        return out

    def _add(self, out: dict[str, dg.EdgeData], s: str, target: TargetMeaning, stmt: Optional[Statement], kind: str) -> None:
        if target.uses_previous:
            self._previous.append((s, target, stmt, "otherwise" if kind == "otherwise" else "maybe"))
            return
        if target.speaker_free:  # the same nodes for every speaker: found once per target
            nodes = self._free_targets.get(id(target))
            if nodes is None:
                nodes = self._free_targets[id(target)] = self.targets(s, target)
        else:
            nodes = self.targets(s, target)
        for t in nodes:
            data = out.get(t)
            if data is None:
                out[t] = {"rules": [stmt], "kind": kind}
            else:
                data["rules"].append(stmt)
                if _KIND_RANK[kind] > _KIND_RANK[data["kind"]]:
                    data["kind"] = kind

    def _build(self) -> None:
        self._previous: list[tuple[str, TargetMeaning, Optional[Statement], str]] = []
        self._free_targets: dict[int, list[str]] = {}  # id of a `speaker_free` target -> its nodes
        self._build_edges()
        self._resolve_previous()

    def _resolve_previous(self) -> None:
        """Edges of `previous` targets: a fixpoint, since a `previous` edge `s -> p` makes `s`
        a participant that can speak before `p` (linear passes, at most one per new edge)."""
        pending = self._previous
        changed = bool(pending)
        while changed:
            changed = False
            for s, target, stmt, kind in pending:
                for t in self.targets(s, target):
                    if not self.g.has_edge(s, t):
                        self.g.add_edge(s, t, {"rules": [stmt], "kind": kind})
                        changed = True
                    else:
                        data = self.g.edges[s, t]
                        if not any(r is stmt for r in data["rules"]):
                            data["rules"].append(stmt)
                            if _KIND_RANK[kind] > _KIND_RANK[data["kind"]]:
                                data["kind"] = kind

    def _build_edges(self) -> None:
        g = self.g
        g.add_nodes_from(self.participants)
        g.add_node(END)
        by_source: dict[str, list[RuleInfo]] = {}
        star: list[RuleInfo] = []
        for r in self.rules:
            if r.source is None:
                star.append(r)
            elif r.source in self.index:
                by_source.setdefault(r.source, []).append(r)
        for s in self.participants:
            own = by_source.get(s, ())
            out: dict[str, dg.EdgeData] = {}
            decided = self._walk(s, _merge(own, star) if star else own, out)
            self.first_always[s] = decided
            if decided is None:
                self.otherwise_speakers.append(s)
                self._add(out, s, self.otherwise_target, self.otherwise, "otherwise")
            g.add_out_edges(s, out)

    def _walk(self, s: str, rules: Iterable[RuleInfo], out: dict[str, dg.EdgeData]) -> Optional[RuleInfo]:
        """Add the edges of `s`'s *maybe* rules and of its deciding *always* rule (returned) to `out`."""
        owned = self.owned.get(s, ()) if self.declares_tools else None
        takes = self.takes[s] = []
        live, add = self.live, self._add
        for r in rules:
            verdict = r.when.decide(s, owned)
            if verdict is False:
                continue
            takes.append(r)
            live.add(r.order)
            if verdict is None:
                add(out, s, r.then, r.stmt, "maybe")
            else:
                add(out, s, r.then, r.stmt, "always")
                return r
        return None

    def restricted(self, among: Iterable[str]) -> SpeakerGraph:
        """This graph with only the participants of `among` (and END) as nodes: the same
        rules, tools and classification, the edges between those nodes (a shallow copy)."""
        copy = object.__new__(SpeakerGraph)
        copy.__dict__.update(self.__dict__)
        copy.g = self.g.subgraph(set(among) | {END})
        copy._cache = {}
        return copy

    # -- views ----------------------------------------------------------------
    def speaker_edges(self) -> set[tuple[str, str]]:
        """Every (last speaker, next speaker or END) pair."""
        return set(self.g.edges())

    def order_key(self, name: str) -> int:
        return self.index.get(name, len(self.participants))

    def sorted_names(self, names: Iterable[str]) -> list[str]:
        return sorted(names, key=self.order_key)

    def reachable(self) -> set[str]:
        """Participants reachable from `start` (start included; END excluded)."""
        if "reach" not in self._cache:
            self._cache["reach"] = self._bfs(self.start, self.g.successors) - {END} if self.start else set()
        return self._cache["reach"]  # type: ignore[return-value]

    def can_end(self) -> set[str]:
        """Nodes from which END is reachable (END included): reverse BFS from END."""
        if "coreach" not in self._cache:
            self._cache["coreach"] = self._bfs(END, self.g.predecessors)
        return self._cache["coreach"]  # type: ignore[return-value]

    def ends(self) -> bool:
        """Is END reachable from `start`?"""
        return self.start is not None and self.start in self.can_end()

    def trapped(self) -> set[str]:
        """Reachable participants that cannot reach END."""
        coreach = self.can_end()
        return {n for n in self.reachable() if n not in coreach}

    def trap_components(self) -> list[TrapComponent]:
        """The bottom SCCs of the trapped set, ordered by their first member's declaration."""
        if "traps" in self._cache:
            return self._cache["traps"]  # type: ignore[return-value]
        trapped = self.trapped()
        out: list[TrapComponent] = []
        if trapped:
            sub = self.g.subgraph(trapped)
            comps = list(dg.strongly_connected_components(sub))
            where = {n: i for i, c in enumerate(comps) for n in c}
            bottom = [c for i, c in enumerate(comps)
                      if all(where[v] == i for u in c for v in sub.successors(u))]
            for c in bottom:
                members = tuple(self.sorted_names(c))
                out.append(TrapComponent(members, self.cycle_through(members[0], c)))
            out.sort(key=lambda t: self.order_key(t.members[0]))
        self._cache["traps"] = out
        return out

    def reachable_components(self) -> list[set[str]]:
        """SCCs of the reachable participants."""
        if "rsccs" not in self._cache:
            self._cache["rsccs"] = list(dg.strongly_connected_components(self.g.subgraph(self.reachable())))
        return self._cache["rsccs"]  # type: ignore[return-value]

    def reachable_cycle(self) -> Optional[tuple[str, ...]]:
        """A cycle among reachable participants (through the first participant, in declaration
        order, of the first cyclic SCC), or None when the reachable graph is acyclic."""
        if "rcycle" in self._cache:
            return self._cache["rcycle"]  # type: ignore[return-value]
        best: Optional[tuple[int, set[str]]] = None
        for c in self.reachable_components():
            first = min(c, key=self.order_key)
            if len(c) > 1 or self.g.has_edge(first, first):
                key = self.order_key(first)
                if best is None or key < best[0]:
                    best = (key, c)
        cycle = None
        if best is not None:
            c = best[1]
            cycle = self.cycle_through(min(c, key=self.order_key), c)
        self._cache["rcycle"] = cycle
        return cycle

    def acyclic(self) -> bool:
        """Is the graph restricted to reachable participants acyclic (no `stay` self-loop either)?"""
        if "rcycle" in self._cache:
            return self._cache["rcycle"] is None
        return self._reachable_order() is not None

    def _reachable_order(self) -> Optional[list[str]]:
        """The reachable participants and END in `dg.topological_sort`'s order of the subgraph they
        induce, or None when they hold a cycle."""
        if "rorder" not in self._cache:
            try:
                self._cache["rorder"] = dg.topological_sort(self.g, self.reachable() | {END})
            except ValueError:
                self._cache["rorder"] = None
        return self._cache["rorder"]  # type: ignore[return-value]

    def cycle_through(self, first: str, within: set[str]) -> tuple[str, ...]:
        """A shortest cycle from `first` back to itself inside the node set `within` (BFS)."""
        g = self.g
        if g.has_edge(first, first):
            return (first, first)
        parent: dict[str, str] = {}
        queue = deque([first])
        seen = {first}
        while queue:
            u = queue.popleft()
            for v in sorted(g.successors(u), key=self.order_key):
                if v == first:
                    path = [u]
                    while path[-1] != first:
                        path.append(parent[path[-1]])
                    path.reverse()  # first ... u
                    return tuple(path + [first])
                if v in within and v not in seen:
                    seen.add(v)
                    parent[v] = u
                    queue.append(v)
        return (first,)  # not reached for a strongly connected set with a cycle

    def shortest_path_to_end(self) -> Optional[list[str]]:
        """A shortest path start → … → END (participants in order, END last), or None."""
        if "spath" not in self._cache:
            path = None
            if self.start is not None and self.ends():
                path = _bfs_path(self.g, self.start, END, self.order_key)
            self._cache["spath"] = path
        return self._cache["spath"]  # type: ignore[return-value]

    def fewest_turns(self) -> Optional[int]:
        """The fewest turns of a run that ends by a `terminate` (END), ignoring `max_turns`:
        a path start → … → X → END takes as many turns as it has participants.
        None when END is unreachable."""
        path = self.shortest_path_to_end()
        return None if path is None else len(path) - 1

    def longest_path_to_end(self) -> Optional[list[str]]:
        """When the reachable graph is acyclic: a longest path start → … → END; else None."""
        if "lpath" not in self._cache:
            path = None
            if self.start is not None:
                path = dg.longest_path(self.g, self.start, END, self.order_key, self.reachable() | {END})
            self._cache["lpath"] = path
        return self._cache["lpath"]  # type: ignore[return-value]

    def longest_turns(self) -> Optional[int]:
        """Turns of the longest run ending at END when the reachable graph is acyclic, else None."""
        path = self.longest_path_to_end()
        return None if path is None else len(path) - 1

    def most_turns(self) -> Union[int, str, None]:
        """The most turns any run takes: the longest path to END when the reachable graph is
        acyclic, but never more than `max_turns`; `max_turns` when a reachable cycle exists and
        a cap is set; "unbounded" when a reachable cycle exists and no cap is set."""
        if self.start is None:
            return None
        longest = self.longest_turns()
        if longest is not None:
            return longest if self.max_turns is None else min(longest, self.max_turns)
        return self.max_turns if self.max_turns is not None else "unbounded"

    def _bfs(self, root: Optional[str], step: Callable[[str], Iterable[str]]) -> set[str]:
        if root is None:
            return set()
        seen = {root}
        queue = deque([root])
        while queue:
            u = queue.popleft()
            for v in step(u):
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
        return seen


_KIND_RANK = {"otherwise": 0, "maybe": 1, "always": 2}


def _merge(a: Iterable[RuleInfo], b: Iterable[RuleInfo]) -> Iterator[RuleInfo]:
    """Merge two evaluation-ordered rule lists."""
    a, b = list(a), list(b)
    i = j = 0
    while i < len(a) or j < len(b):
        if j >= len(b) or (i < len(a) and a[i].order < b[j].order):
            yield a[i]
            i += 1
        else:
            yield b[j]
            j += 1


def _bfs_path(g: dg.DiGraph[str], source: str, dest: str, key: Callable[[str], int]) -> Optional[list[str]]:
    parent: dict[str, Optional[str]] = {source: None}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in sorted(g.successors(u), key=key):
            if v not in parent:
                parent[v] = u
                if v == dest:
                    path = [v]
                    back = parent[v]
                    while back is not None:  # (one lookup per step: mypy narrows a name, not parent[...])
                        path.append(back)
                        back = parent[back]
                    return path[::-1]
                queue.append(v)
    return None


def build_graph(block: ast.Block) -> SpeakerGraph:
    """The speaker graph of a workflow block (docs/analysis.md). Never raises on a parsed block,
    even one with errors: undeclared names simply contribute no edge."""
    return SpeakerGraph(block)


def show_path(path: Iterable[str]) -> str:
    """`a -> b -> terminate` (END is shown as `terminate`); a long path shows its first
    MAX_LISTED speakers, then how many more."""
    return bounded(("terminate" if n == END else n for n in path), " -> ")


def block_stats(block_or_graph: Union[ast.Block, SpeakerGraph], analyse: bool = True) -> dict[str, Any]:
    """Plain-data statistics of one block (JSON-friendly; see docs/analysis.md):
    `block`, `kind`, `line`, `participants` (distinct names), `rules` (transition rules and
    handoffs; `otherwise` not counted), and for workflow blocks `analysed`, `reachable`
    (participants reachable from `start`), `fewest_turns` (int, or None when no run can end by
    a terminate), `most_turns` (int, "unbounded", or None), `max_turns` (int or None) and
    `capped` (True when `max_turns` cuts some run short, so `most_turns` is the cap).
    With `analyse=False` (a block with errors) the graph fields are None and `analysed` False."""
    if isinstance(block_or_graph, SpeakerGraph):
        graph: Optional[SpeakerGraph] = block_or_graph
        block = block_or_graph.block
    else:
        block = block_or_graph
        graph = build_graph(block) if block.kind == "workflow" and analyse else None
    out: dict[str, Any] = {
        "block": block.name.name,
        "kind": block.kind,
        "line": block.span.line,
        "participants": len({p.name.name for p in block.participants}),
        "rules": len(block.rules),
    }
    if block.kind != "workflow":
        return out
    if graph is None:
        caps = block.of_type(ast.MaxTurns)
        out.update({"analysed": False, "reachable": None, "fewest_turns": None, "most_turns": None,
                    "max_turns": caps[0].value.value if caps else None, "capped": False})
        return out
    most = graph.most_turns()
    longest = graph.longest_turns()
    capped = graph.max_turns is not None and most == graph.max_turns and (longest is None or longest > most)
    out.update({
        "analysed": True,
        "reachable": len(graph.reachable()),
        "fewest_turns": graph.fewest_turns(),
        "most_turns": most,
        "max_turns": graph.max_turns,
        "capped": capped,
    })
    return out
