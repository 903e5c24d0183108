"""The graph analysis agrees with a brute-force exploration of every run.

The brute force below is written from the language reference (docs/language.md, docs/analysis.md) alone and does not
use `turnflow.compiler.speaker_graph`: for each last speaker it evaluates the rule
list (ascending priority, ties in file order) under every combination of
guard outcomes (a rule without a condition always holds; a `tool` term of a
tool the speaker does not own never holds when the block declares tools;
every other condition may hold or not), and then explores runs turn by turn.
Conditions built with `or`, `not`, parentheses and comparisons are guards like
any other (they may hold or not).

Which participants count is TF203's exact reading (docs/analysis.md): the termination rules,
TF205 and TF210 read the graph of the participants some run gives the turn, found by
tests/exhaustive_runs.py's exploration of every agent choice through the runtime.

The target `previous` depends on the run, not only on the last speaker, so
for flows that use it the brute force explores states (speaker, the one who
spoke before) from (start, nobody) and checks that the analysis is sound:
every move of a real run is an edge, every speaker a run reaches is reachable.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import networkx
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import turnflow
from exhaustive_runs import Exploration
from turnflow.compiler.emit.spec import compile_block
from turnflow.compiler.speaker_graph import END, block_stats, build_graph
from turnflow.dsl import ast
from turnflow.dsl.parser import parse_source

NAMES = ["p0", "p1", "p2", "p3", "p4"]
TOOLS = ["t0", "t1", "t2"]


# --------------------------------------------------------------------------
#  Random small workflows (≤ 5 participants, ≤ 8 rules, random guards)
# --------------------------------------------------------------------------
@st.composite
def workflows(draw, with_previous: bool = False) -> str:
    n = draw(st.integers(2, 5))
    names = NAMES[:n]
    lines = ["workflow w {"]
    initiator = draw(st.one_of(st.none(), st.sampled_from(names)))
    use_tools = draw(st.booleans())
    for p in names:
        line = f"    participant {p}"
        if p == initiator:
            line += " initiator"
        if use_tools and draw(st.booleans()):
            line += " tools [" + ", ".join(draw(st.lists(st.sampled_from(TOOLS), max_size=2, unique=True))) + "]"
        lines.append(line)
    lines.append(f"    start {draw(st.sampled_from(names))}")
    if draw(st.booleans()):
        lines.append(f"    max_turns {draw(st.integers(1, 9))}")
    for key in draw(st.lists(st.sampled_from(["k0", "k1"]), unique=True, max_size=2)):
        lines.append(f"    context {key} = true")

    keywords = ["terminate", "stay", "next", "initiator"] + (["previous"] if with_previous else [])

    def target() -> str:
        return draw(st.one_of(st.sampled_from(names), st.sampled_from(keywords)))

    leaf = st.one_of(st.sampled_from(TOOLS).map(lambda t: f"tool {t}"),
                     st.sampled_from(["k0", "k1"]).map(lambda k: f"context.{k} == true"),
                     st.sampled_from(["a", "b"]).map(lambda s: f'text contains "{s}"'),
                     st.sampled_from(["context.k0 > 1", "len(context.k1) != 0"]))
    term = st.one_of(leaf, leaf.map(lambda t: f"not {t}"),
                     st.tuples(leaf, leaf).map(lambda ab: f"({ab[0]} or {ab[1]})"))
    handoffs: dict[tuple[str, str], str] = {}
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.integers(0, 4)) == 0:
            src, tool, tgt = draw(st.sampled_from(names)), draw(st.sampled_from(TOOLS)), target()
            if handoffs.setdefault((src, tool), tgt) != tgt:
                continue  # would be TF107
            lines.append(f"    handoff {src} -> {tgt} via {tool}")
            continue
        src = draw(st.one_of(st.just("*"), st.sampled_from(names)))
        line = f"    {src} -> {target()}"
        terms = draw(st.lists(term, max_size=2))
        if terms:
            line += " when " + " and ".join(terms)
        if draw(st.integers(0, 3)) == 0:
            line += f" priority {draw(st.integers(-1, 2))}"
        lines.append(line)
    if draw(st.booleans()):
        lines.append(f"    otherwise -> {target()}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
#  Brute force, from the language reference only
# --------------------------------------------------------------------------
class Explorer:
    def __init__(self, block: ast.Block):
        self.names = [p.name.name for p in block.participants]
        declared = [p.name.name for p in block.participants if p.role == "initiator"]
        self.initiator = declared[0] if declared else None
        self.owned = {p.name.name: {t.name for t in (p.tools or [])} for p in block.participants}
        self.declares_tools = any(p.tools for p in block.participants)  # `tools []` alone declares nothing
        for st_ in block.statements:
            if isinstance(st_, ast.Handoff):
                self.declares_tools = True
                self.owned[st_.source.name].add(st_.tool.name)
        entries = []
        for i, st_ in enumerate(block.statements):
            if isinstance(st_, ast.Rule):
                prio = st_.priority.value if st_.priority else 0
                tools = [t.tool.name for t in st_.terms if isinstance(t, ast.ToolTerm)]
                entries.append((prio, i, st_, st_.source.name if st_.source else None, tools, bool(st_.terms)))
            elif isinstance(st_, ast.Handoff):
                entries.append((0, i, st_, st_.source.name, [st_.tool.name], True))
        entries.sort(key=lambda e: (e[0], e[1]))
        self.entries = entries
        others = [s for s in block.statements if isinstance(s, ast.Otherwise)]
        self.otherwise = others[0].target if others else None
        self.start = [s for s in block.statements if isinstance(s, ast.Start)][0].name.name
        caps = [s for s in block.statements if isinstance(s, ast.MaxTurns)]
        self.cap = caps[0].value.value if caps else None
        self.fired: set[int] = set()  # statement positions of rules that decide some evaluation
        self.to_otherwise: set[str] = set()  # speakers for which `otherwise` decides some evaluation
        self.succ = {s: self._evaluate_all(s) for s in self.names}

    def restricted(self, among: set[str]) -> "Explorer":
        """The same moves between the participants of `among` only (the start among them)."""
        copy = object.__new__(Explorer)
        copy.__dict__.update(self.__dict__)
        copy.names = [s for s in self.names if s in among]
        copy.succ = {s: {v for v in self.succ[s] if v == END or v in among} for s in copy.names}
        return copy

    def resolve(self, s: str, t: ast.Target | None, before: str | None = None) -> set[str]:
        if t is None or t.kind == "terminate":
            return {END}
        if t.kind == "participant":
            return {t.name.name}
        if t.kind == "stay":
            return {s}
        if t.kind == "next" or (t.kind == "previous" and before is None):  # nobody spoke before: round robin
            return {self.names[(self.names.index(s) + 1) % len(self.names)]}
        if t.kind == "previous":
            return {before}
        return {self.initiator} if self.initiator else set(self.names)

    def run_moves(self) -> set[tuple[str, str]]:
        """Every (speaker, next speaker or END) move of some run: states are (speaker, the
        speaker before, None on the first turn), explored from (start, None)."""
        seen = {(self.start, None)}
        todo = [(self.start, None)]
        moves = set()
        while todo:
            s, before = todo.pop()
            for t in self._evaluate_all(s, before):
                moves.add((s, t))
                if t != END and (t, s) not in seen:
                    seen.add((t, s))
                    todo.append((t, s))
        return moves

    def _evaluate_all(self, s: str, before: str | None = None) -> set[str]:
        candidates = []  # (entry, fixed outcome or None for "either")
        for e in self.entries:
            _prio, _pos, _stmt, source, tools, conditional = e
            if source is not None and source != s:
                continue
            if not conditional:
                candidates.append((e, True))
            elif self.declares_tools and any(t not in self.owned[s] for t in tools):
                candidates.append((e, False))
            else:
                candidates.append((e, None))
        free = [i for i, (_, fixed) in enumerate(candidates) if fixed is None]
        out: set[str] = set()
        for combo in itertools.product([False, True], repeat=len(free)):
            outcome = {i: v for i, v in zip(free, combo)}
            for i, (e, fixed) in enumerate(candidates):
                holds = fixed if fixed is not None else outcome[i]
                if holds:
                    self.fired.add(e[1])
                    out |= self.resolve(s, e[2].target, before)
                    break
            else:
                self.to_otherwise.add(s)
                out |= self.resolve(s, self.otherwise, before)
        return out

    def reachable(self) -> set[str]:
        seen, todo = {self.start}, [self.start]
        while todo:
            for v in self.succ[todo.pop()]:
                if v != END and v not in seen:
                    seen.add(v)
                    todo.append(v)
        return seen

    def can_end(self) -> set[str]:
        ok: set[str] = set()
        changed = True
        while changed:
            changed = False
            for s in self.names:
                if s not in ok and any(v == END or v in ok for v in self.succ[s]):
                    ok.add(s)
                    changed = True
        return ok

    def layers(self, upto: int) -> list[set[str]]:
        """layers[t-1]: the speakers that can hold turn t (turn 1 is the start speaker's)."""
        out = [{self.start}]
        while len(out) < upto:
            out.append({v for s in out[-1] for v in self.succ[s] if v != END})
        return out

    def fewest(self):
        for t, layer in enumerate(self.layers(len(self.names) + 1), start=1):
            if any(END in self.succ[s] for s in layer):
                return t
        return None

    def most(self):
        n = len(self.names)
        horizon = self.cap if self.cap is not None else n + 1
        layers = self.layers(horizon)
        if self.cap is None and layers[-1]:
            return "unbounded"  # a run of n + 1 turns repeats a speaker: it can repeat forever
        best = None
        for t, layer in enumerate(layers, start=1):
            if layer and (any(END in self.succ[s] for s in layer) or t == self.cap):
                best = t
        return best

    def cut_by_cap(self) -> bool:
        return bool(self.layers(self.cap + 1)[-1])


def _longest_by_copy(graph):
    """A longest path start → … → END over a copy of the reachable subgraph, in its topological
    order (what `longest_path_to_end` computed before it stopped copying), or None."""
    from turnflow.compiler import digraph as dg

    if graph.start is None:
        return None
    sub = graph.g.subgraph(graph.reachable() | {END})
    try:
        order = dg.topological_sort(sub)
    except ValueError:
        return None
    dist, parent = {graph.start: 0}, {}
    for u in order:
        if u in dist:
            for v in sorted(sub.successors(u), key=graph.order_key):
                if dist.get(v, -1) < dist[u] + 1:
                    dist[v], parent[v] = dist[u] + 1, u
    if END not in dist:
        return None
    path = [END]
    while path[-1] != graph.start:
        path.append(parent[path[-1]])
    return path[::-1]


def lines_of(diags, code):
    return {d.span.line for d in diags if d.code == code}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflows())
def test_analysis_agrees_with_brute_force(text):
    diags = turnflow.check(text)
    assume(not any(d.severity == "error" and not d.code.startswith("TF2") for d in diags))
    block = turnflow.parse(text).blocks[0]
    bf = Explorer(block)
    graph = build_graph(block)

    # the speaker graph is exactly the set of moves some guard outcome allows
    assert graph.speaker_edges() == {(s, v) for s in bf.names for v in bf.succ[s]}, text

    reach = bf.reachable()
    # the termination rules read the graph of the participants some run gives the turn, max_turns
    # ignored (TF203's reading, docs/analysis.md): those an exhaustive exploration of the runs
    # reaches (tests/exhaustive_runs.py, through the runtime)
    runs = Exploration(compile_block(block))
    rb = bf.restricted(runs.uncapped_speakers())
    ends = rb.can_end()
    stuck = {s for s in rb.reachable() if s not in ends}
    codes = {d.code for d in diags}
    if bf.cap is None:
        assert ("TF201" in codes) == (bf.start not in ends), text
        assert ("TF202" in codes) == (bf.start in ends and bool(stuck)), text
        assert "TF209" not in codes
        assert ("TF206" in codes) == (not stuck and rb.most() == "unbounded"), text
    else:
        assert ("TF209" in codes) == bool(stuck), text
        assert not codes & {"TF201", "TF202", "TF206"}, text

    decl = {p.name.name: p.name.span.line for p in block.participants}
    # the guards' outcomes are "may hold or not" here: a participant no outcome reaches is
    # reported (TF203, or TF213 for an initiator that is not start); the exact analysis, which
    # reads what guards can hold together, may report more (tests/test_dead_rules.py)
    silent = lines_of(diags, "TF203") | lines_of(diags, "TF213")
    assert {decl[s] for s in bf.names if s not in reach} <= silent, text

    # acyclicity and the longest path to END: as networkx reads the reachable subgraph, and the
    # path the one the topological order of that subgraph (copied) gives
    nx_graph = networkx.DiGraph(list(graph.speaker_edges()))
    nx_graph.add_nodes_from(graph.participants)
    reachable_only = nx_graph.subgraph(graph.reachable())
    assert graph.acyclic() == networkx.is_directed_acyclic_graph(reachable_only), text
    assert graph.longest_path_to_end() == _longest_by_copy(graph), text

    stats = block_stats(block)
    assert stats["reachable"] == len(reach)
    assert stats["fewest_turns"] == bf.fewest(), text
    assert stats["most_turns"] == bf.most(), text

    if bf.cap is not None:
        fewest = rb.fewest()
        assert ("TF210" in codes) == (fewest is not None and fewest > bf.cap), text
        # TF211 reads the runs exactly (the rules that fire: docs/analysis.md, "Dead rules"), and
        # every run is a run here, where a guard may hold or not: a cap that binds no run here
        # binds none there; the exact agreement is tests/test_graph_exhaustive.py's
        if not rb.cut_by_cap():
            assert "TF211" in codes, text

    # dead rules: exactly those reported as shadowed (TF204) or with an undeclared tool (TF207);
    # in a block that declares no tools at all, TF207 flags each tool name once (the flow does not
    # say who may call it), and such a rule is not dead
    rules = [s for s in block.statements if isinstance(s, (ast.Rule, ast.Handoff))]
    dead = {s.span.line for i, s in enumerate(block.statements)
            if isinstance(s, (ast.Rule, ast.Handoff)) and i not in bf.fired}
    # (each dead rule is reported; the exact analysis may prove more dead: tests/test_dead_rules.py)
    exact = lines_of(diags, "TF204") | lines_of(diags, "TF212") | lines_of(diags, "TF203")
    silent_sources = {s for s in bf.names if decl[s] in silent}
    orphans = {st.span.line for st in rules if st.source is not None and st.source.name in silent_sources}
    if graph.declares_tools:
        assert dead <= exact | lines_of(diags, "TF207") | orphans, text
    else:
        assert dead <= exact | orphans, text
        first_use: dict[str, int] = {}
        for r in block.of_type(ast.Rule):
            for term in ast.leaf_terms(r.terms):  # also inside or / not / parentheses
                if isinstance(term, ast.ToolTerm):
                    first_use.setdefault(term.tool.name, r.span.line)
        assert lines_of(diags, "TF207") == set(first_use.values()), text
    assert len(rules) >= len(dead)

    otherwise = [s for s in block.statements if isinstance(s, ast.Otherwise)]
    if otherwise:
        never_taken = not (bf.to_otherwise & runs.speaks)  # who gets the turn on some run (TF203's reading)
        assert ("TF205" in codes) == never_taken, text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workflows(with_previous=True))
def test_analysis_of_previous_is_sound(text):
    """With `previous`: every move of a run (a guard may hold or not) is an edge; every speaker
    such a run reaches is reachable; a flow the analysis says cannot end (TF201) has no run that
    ends. TF201 reads the participants some run really gives the turn (TF203's reading), so the
    last is checked against the exhaustive exploration of the runs (tests/exhaustive_runs.py),
    where a rule behind a handoff on the same tool never fires."""
    diags = turnflow.check(text)
    assume(not any(d.severity == "error" and not d.code.startswith("TF2") for d in diags))
    block = turnflow.parse(text).blocks[0]
    graph = build_graph(block)
    moves = Explorer(block).run_moves()
    assert moves <= graph.speaker_edges(), text
    assert {s for s, _ in moves} <= graph.reachable(), text
    if any(d.code == "TF201" for d in diags):
        runs = Exploration(compile_block(block))
        assert not any(runs.ends_after(state) for state in runs.uncapped_states()), text


def test_tf201_when_a_rule_behind_a_handoff_on_the_same_tool_is_the_only_way_out():
    """Found by test_analysis_of_previous_is_sound: `* -> p1 when tool t0` never fires behind
    `handoff p0 -> p0 via t0`, so p0 speaks for ever (TF201), though a guard that may hold or not
    on its own would let p1 speak and end the run."""
    text = ("workflow w {\n    participant p0\n    participant p1\n    start p0\n    handoff p0 -> p0 via t0\n"
            "    * -> p1 when tool t0\n    p0 -> p0 priority 0\n}\n")
    codes = {d.code for d in turnflow.check(text)}
    assert {"TF201", "TF203"} <= codes
    runs = Exploration(compile_block(turnflow.parse(text).blocks[0]))
    assert runs.uncapped_speakers() == {"p0"}
    assert not runs.ends_after(("p0", None)) and not runs.ends_after(("p0", "p0"))


def test_previous_edges_go_to_the_speakers_before():
    """`c -> previous`: back to whoever handed to `c` (here `a` or `b`), plus, for the start
    speaker on the first turn, the participant after it."""
    text = ("workflow w {\n participant a\n participant b\n participant c\n start a\n max_turns 9\n"
            " a -> c when tool x\n a -> b\n b -> c\n c -> previous\n}\n")
    g = build_graph(turnflow.parse(text).blocks[0])
    assert {t for s, t in g.speaker_edges() if s == "c"} == {"a", "b"}
    text2 = "workflow w {\n participant a\n participant b\n start a\n max_turns 3\n a -> previous\n b -> a\n}\n"
    g2 = build_graph(turnflow.parse(text2).blocks[0])
    assert g2.speaker_edges() == {("a", "b"), ("b", "a")}  # first turn: round robin; then b spoke before a
    assert g2.g.edges["a", "b"]["kind"] == "maybe"


# --------------------------------------------------------------------------
#  The analysis never raises: mutated rule fixtures (lines dropped, repeated,
#  swapped, words replaced) go through `check` and `block_stats`
# --------------------------------------------------------------------------

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "rules").glob("TF2*/*.flow"))
WORDS = ["a", "b", "p0", "*", "->", "terminate", "stay", "next", "initiator", "when", "tool", "t0",
         "priority", "-1", "max_turns", "1", "start", "otherwise", "handoff", "via", "participant"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FIXTURES), st.data())
def test_check_and_stats_never_raise_on_mutated_flows(path, data):
    lines = path.read_text(encoding="utf-8").splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["drop", "repeat", "swap", "word"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            words = lines[i].split()
            if words:
                k = data.draw(st.integers(0, len(words) - 1))
                words[k] = data.draw(st.sampled_from(WORDS))
                lines[i] = "    " + " ".join(words)
    text = "\n".join(lines) + "\n"
    diags = turnflow.check(text)
    assert all(d.span.line >= 1 and d.span.column >= 1 for d in diags)
    flow, _ = parse_source(text)
    if flow is not None:
        for block in flow.blocks:
            assert block_stats(block)["block"] == block.name.name
