"""The graph rules (TF2xx) agree with an exhaustive exploration of the runs of small generated flows.

The oracle is tests/exhaustive_runs.py: the runtime's own reading of the compiled flow (no
`turnflow.compiler`), every choice of tool, text and context value on every turn, every run
state by state ((speaker, who spoke before)). Where each rule's differential test lives:

- TF201, TF202, TF205, TF206, TF209, TF210 read the speaker graph, where a guard may hold or not
  (docs/analysis.md): tests/test_graph_property.py compares them, both ways, with a brute force over
  guard outcomes. Every run is a path of that graph, so here each is checked to be sound against
  the real runs: a flow said never to end has no run that ends, a trap no run leaves, a cap said
  too small cuts every run, an `otherwise` said unused is taken on no run, and a flow whose runs
  can loop without a cap gets TF206 (or TF201 / TF202).
- TF203 (at rules), TF204, TF207, TF212 (rules that never fire): tests/test_dead_rules.py, both ways.
- Here, both ways: TF203 at participants (and its "only after `max_turns`" reason), TF213, which of
  TF204 / TF212 a dead rule gets, and TF211 (the cap binds no run; the longest run it shows is a
  run, with as many turns as the longest one that ends).
- TF208 (a key read with no `context KEY = ...`) reads declarations, not runs.

    PYTHONPATH=src python3 -m pytest -q -p no:cacheprovider tests/test_graph_exhaustive.py
    TURNFLOW_GRAPH_EXHAUSTIVE_EXAMPLES=2000 PYTHONPATH=src python3 -m pytest -q -p no:cacheprovider \\
        tests/test_graph_exhaustive.py -k agree
"""

from __future__ import annotations

import os
import re

import networkx
from hypothesis import HealthCheck, event, given, settings

import turnflow
from exhaustive_runs import END, Exploration, MayHoldRuns
from flow_strategies import workflow_blocks
from turnflow.compiler import speaker_graph
from turnflow.dsl import ast, printer

EXAMPLES = int(os.environ.get("TURNFLOW_GRAPH_EXHAUSTIVE_EXAMPLES", "150"))


def explore(text):
    """(block, diagnostics, exploration), or None for a flow with errors other than TF2xx ones."""
    diags = turnflow.check(text)
    if any(d.severity == "error" and not d.code.startswith("TF2") for d in diags):
        return None
    block = turnflow.parse(text).blocks[0]
    if any(d.severity == "error" for d in diags):  # TF201 / TF202: compiled anyway
        from turnflow.compiler.emit.spec import compile_block

        spec = compile_block(block)
    else:
        spec = turnflow.compile(text)[0]
    return block, diags, Exploration(spec)


def _never(block, st, s):
    """Rule `st` is *never* for speaker `s` by its shape alone: another SOURCE, or a `tool t` term
    in its conjunction while the block declares tools and `s` does not own `t` (docs/analysis.md)."""
    if st.source is not None and st.source.name != s:
        return True
    if isinstance(st, ast.Handoff):
        return False
    owned = {p.name.name: {t.name for t in (p.tools or [])} for p in block.participants}
    handoffs = block.of_type(ast.Handoff)
    for h in handoffs:
        owned[h.source.name].add(h.tool.name)
    declares = bool(handoffs) or any(p.tools for p in block.participants)
    return declares and any(isinstance(t, ast.ToolTerm) and t.tool.name not in owned[s] for t in st.terms)


def disagreements(text):
    """What `check` says about participants, dead rules and the cap that the runs contradict."""
    found = explore(text)
    if found is None:
        return None
    block, diags, ex = found
    out = []
    at = {}
    for d in diags:
        at.setdefault((d.span.line, d.code), []).append(d)
    names = [p.name.name for p in block.participants]
    decl = {p.name.name: p.name.span.line for p in block.participants}
    start = ex.sim.graph.initial_speaker
    marked = [p.name.name for p in block.participants if p.role == "initiator"]
    init = marked[0] if marked else None

    # TF203 / TF213: the participants no run gives the turn
    for p in names:
        silent = p not in ex.speaks
        opener = p == init and p != start
        tf203 = at.get((decl[p], "TF203"), [])
        if bool(tf203) != (silent and not opener):
            out.append(f"TF203 at `{p}`: reported {bool(tf203)}, speaks on some run {not silent}")
        tf213 = bool(at.get((decl[p], "TF213")))
        if tf213 != (silent and opener):
            out.append(f"TF213 at `{p}`: reported {tf213}, speaks on some run {not silent}")
        if tf203 and ("only after `max_turns" in tf203[0].message) != (p in ex.uncapped_speakers()):
            out.append(f"TF203 at `{p}`: {tf203[0].message!r}, speaks without the cap: {p in ex.uncapped_speakers()}")

    # TF204 / TF212: which one a dead rule gets (that it is reported: tests/test_dead_rules.py)
    for i, st in enumerate(block.rules):
        if ex.fired_on_some_run(i):
            continue
        takers = [s for s in names if s in ex.speaks and not _never(block, st, s)]
        can_hold = any(ex.holds_on_some_turn(s, i) for s in takers)
        line = st.span.line
        if bool(at.get((line, "TF204"))) != can_hold:
            out.append(f"TF204 at line {line}: reported {not can_hold}, its condition holds on a turn {can_hold}")
        if bool(at.get((line, "TF212"))) != (bool(takers) and not can_hold):
            out.append(f"TF212 at line {line}: its condition holds on a turn {can_hold}, takers {takers}")

    out += _cap(block, at, ex)
    out += _graph_rules_sound(block, at, ex, decl)
    return out


def _cap(block, at, ex):
    """TF211 iff no run takes more than `max_turns` turns; its path is a longest run that ends."""
    caps = block.of_type(ast.MaxTurns)
    tf211 = [d for (_, code), ds in at.items() if code == "TF211" for d in ds]
    if not caps:
        return ["TF211 without max_turns"] if tf211 else []
    cap = caps[0].value.value
    binds, longest = ex.longest_run(cap)
    if bool(tf211) == binds:
        return [f"TF211 reported {bool(tf211)}, the cap binds a run {binds}"]
    if not tf211:
        return []
    m = re.search(r"the longest, (.*), takes (\d+) turns?$", tf211[0].message)
    assert m is not None, tf211[0].message
    path = m.group(1).split(" -> ")
    if int(m.group(2)) != longest or len(path) - 1 != longest or path[-1] != "terminate":
        return [f"TF211 says {tf211[0].message!r}; the longest run that ends takes {longest} turns"]
    if not ex.is_run(path[:-1]):
        return [f"TF211 shows {path}, which no run takes"]
    return []


def _graph_rules_sound(block, at, ex, decl):
    """The speaker-graph rules against the real runs: what they say of every run holds."""
    out = []
    caps = block.of_type(ast.MaxTurns)
    states = ex._runs(None)
    ends = _can_end(ex, states)
    start_line = block.of_type(ast.Start)[0].span.line
    never_ends = bool(at.get((start_line, "TF201")) or at.get((start_line, "TF209")))
    if never_ends and any(s in ends for s in states):
        out.append("TF201 / TF209 at start, but some run ends")
    for p, line in decl.items():
        if (at.get((line, "TF202")) or at.get((line, "TF209"))) and any(s in ends for s in states if s[0] == p):
            out.append(f"trap at `{p}`, but a run that reaches it ends")
    if at.get((caps[0].span.line, "TF210")) if caps else False:
        if ex.longest_run(caps[0].value.value)[1] is not None:
            out.append("TF210, but some run ends within the cap")
    others = block.of_type(ast.Otherwise)
    if others and at.get((others[0].span.line, "TF205")) and any(ex.fires[s][1] for s, _ in ex.states):
        out.append("TF205, but a run takes `otherwise`")
    loops = bool(ex.layers(len(states) + 1)[-1])
    reported = {code for (_, code) in at}
    if not caps and loops and not reported & {"TF201", "TF202", "TF206"}:
        out.append("runs can loop without max_turns, and neither TF201, TF202 nor TF206 says so")
    return out


def _can_end(ex, states):
    """The states of `states` from which some run ends."""
    ok = set()
    changed = True
    while changed:
        changed = False
        for s in states:
            if s not in ok and any(n is END or n in ok for n in ex.moves(s)):
                ok.add(s)
                changed = True
    return ok


def may_hold_disagreements(text):
    """What the speaker-graph rules say that the runs where every guard may hold or not
    (`MayHoldRuns`, through the runtime's spec) contradict, both ways; None for a flow with errors
    other than TF2xx ones or with a `previous` target (the graph over-approximates it:
    tests/test_graph_property.py checks it is sound)."""
    diags = turnflow.check(text)
    if any(d.severity == "error" and not d.code.startswith("TF2") for d in diags):
        return None
    block = turnflow.parse(text).blocks[0]
    from turnflow.compiler.emit.spec import compile_block

    spec = compile_block(block)
    everywhere = MayHoldRuns(spec)
    if everywhere.uses_previous:
        return None
    # the rules read the graph of the participants some run gives the turn, max_turns ignored
    # (TF203's reading): those the exact exploration reaches
    ex = Exploration(spec)
    mh = everywhere.restricted(ex.uncapped_speakers())
    graph = speaker_graph.build_graph(block)
    at = {}
    for d in diags:
        at.setdefault(d.code, set()).add(d.span.line)
    decl = {p.name.name: p.name.span.line for p in block.participants}
    out = []
    moves = {(s, speaker_graph.END if v is END else v) for s, vs in everywhere.succ.items() for v in vs}
    if graph.speaker_edges() != moves:
        out.append(f"edges {sorted(graph.speaker_edges())} != moves {sorted(moves)}")
    reach, ends = mh.reachable(), mh.can_end()
    stuck = reach - ends
    nx = networkx.DiGraph([(s, v) for s, v in moves if s in stuck and v in stuck])
    nx.add_nodes_from(stuck)
    cond = networkx.condensation(nx)
    traps = {decl[min(cond.nodes[c]["members"], key=lambda n: decl[n])]
             for c in cond if cond.out_degree(c) == 0}
    start_line = block.of_type(ast.Start)[0].span.line
    caps = block.of_type(ast.MaxTurns)
    cap = caps[0].value.value if caps else None
    never_ends = mh.start not in ends
    if cap is None:
        want = {"TF201": {start_line} if never_ends else set(),
                "TF202": traps if not never_ends else set(), "TF209": set(),
                "TF206": {block.span.line} if not stuck and mh.unbounded() else set()}
    else:
        want = {"TF201": set(), "TF202": set(), "TF206": set(),
                "TF209": {start_line} if never_ends else traps}
    fewest = mh.fewest()
    want["TF210"] = {caps[0].span.line} if cap is not None and fewest is not None and fewest > cap else set()
    others = block.of_type(ast.Otherwise)
    want["TF205"] = {others[0].span.line} if others and not everywhere.default_taken & ex.speaks else set()
    for code, lines in want.items():
        if at.get(code, set()) != lines:
            out.append(f"{code} at lines {sorted(at.get(code, set()))}, the runs say {sorted(lines)}")
    marked = [p.name.name for p in block.participants if p.role == "initiator"]
    unreached = {decl[p] for p in decl
                 if p not in everywhere.reachable() and not (marked and p == marked[0] and p != mh.start)}
    if not unreached <= at.get("TF203", set()):
        out.append(f"TF203 at {sorted(at.get('TF203', set()))}, never reached {sorted(unreached)}")
    if cap is not None and not mh.layers(cap + 1)[-1] and not at.get("TF211"):
        out.append("no run is cut by the cap, and no TF211")
    # --graph-stats reads the whole graph
    stats = speaker_graph.block_stats(block)
    if (stats["reachable"], stats["fewest_turns"]) != (len(everywhere.reachable()), everywhere.fewest()):
        out.append(f"stats {stats}, reachable {everywhere.reachable()}, fewest {everywhere.fewest()}")
    return out


# (derandomized: the same flows every run; generated flows with errors are skipped, and said so)
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


def _text(block):
    return printer.format_flow(ast.FlowFile(span=block.span, blocks=[block]))


@PROPERTY
@given(workflow_blocks())
def test_graph_rules_agree_with_exhaustive_runs(block):
    text = _text(block)
    found = disagreements(text)
    event("flow with errors: skipped" if found is None else "flow compared")
    assert not found, text


@PROPERTY
@given(workflow_blocks())
def test_speaker_graph_rules_agree_with_runs_where_guards_may_hold(block):
    text = _text(block)
    found = may_hold_disagreements(text)
    event("flow with errors or `previous`: skipped" if found is None else "flow compared")
    assert not found, text


# --------------------------------------------------------------------------------------------
#  Counterexamples found, as fixtures
# --------------------------------------------------------------------------------------------
def _messages(text, code):
    return [d.message for d in turnflow.check(text) if d.code == code]


DEAD_DETOUR = """workflow w {
    participant a
    participant b
    start a
    max_turns 2
    a -> b when context.k > 8 and context.k < 5
    a -> terminate
    b -> terminate
}
"""


def test_tf211_longest_run_skips_a_participant_no_run_reaches():
    """`b` never speaks (TF203): the longest run is `a -> terminate`, not `a -> b -> terminate`."""
    assert _messages(DEAD_DETOUR, "TF203") == [
        "participant `b` is unreachable from `start` (`a`): the rules that lead to it never fire"]
    assert _messages(DEAD_DETOUR, "TF211") == [
        "max_turns 2 can never bind: every run ends by itself within it; the longest, a -> terminate, takes 1 turn"]
    assert disagreements(DEAD_DETOUR) == []


SHADOWED_LOOP = """workflow w {
    participant p0
    participant p1
    start p0
    max_turns 2
    handoff p0 -> p1 via t0
    * -> p0 when tool t0 priority 0
}
"""


def test_tf211_a_loop_only_a_shadowed_rule_makes_binds_no_run():
    """Shrunk from tests/test_graph_property.py: `* -> p0 when tool t0` is shadowed for `p0` (the
    handoff decides every turn it calls t0) and never for `p1` (it does not own t0), so no run
    loops: every run ends within 2 turns."""
    assert _messages(SHADOWED_LOOP, "TF211") == [
        "max_turns 2 can never bind: every run ends by itself within it; the longest, p0 -> p1 -> terminate, "
        "takes 2 turns"]
    assert disagreements(SHADOWED_LOOP) == []
