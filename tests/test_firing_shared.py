"""Speakers whose rules have one shape share one dead-rule analysis (`compiler/firing.py`,
`Firing._shape_of`): the answers with sharing are those of analysing every speaker, and two
speakers of one shape get the same answers when each is analysed on its own.

The flows are generated (`flow_strategies.workflow_blocks`), then every participant gets a
twin: same rules (those it is the source of) and tools under new names, so that many speakers
share a shape the way the agents of a large generated flow do.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, event, given, settings

from flow_strategies import workflow_blocks
from turnflow.compiler import firing as firing_mod
from turnflow.compiler.firing import Firing
from turnflow.compiler.speaker_graph import build_graph
from turnflow.dsl import ast

SUFFIX = "_twin"


def _rename_term(t: ast.Term) -> ast.Term:
    if isinstance(t, ast.ToolTerm):
        return replace(t, tool=replace(t.tool, name=t.tool.name + SUFFIX))
    if isinstance(t, (ast.AllTerm, ast.AnyTerm)):
        return replace(t, terms=tuple(_rename_term(x) for x in t.terms))
    if isinstance(t, ast.NotTerm):
        return replace(t, term=_rename_term(t.term))
    return t


def with_twins(block: ast.Block) -> ast.Block:
    """`block` plus, for each participant, a twin with its tools and own rules renamed."""
    extra: list[ast.Statement] = []
    for st in block.statements:
        if isinstance(st, ast.Participant):
            tools = None if st.tools is None else tuple(replace(t, name=t.name + SUFFIX) for t in st.tools)
            extra.append(replace(st, name=replace(st.name, name=st.name.name + SUFFIX), role=None, tools=tools))
        elif isinstance(st, ast.Handoff):
            extra.append(replace(st, source=replace(st.source, name=st.source.name + SUFFIX),
                                 tool=replace(st.tool, name=st.tool.name + SUFFIX)))
        elif isinstance(st, ast.Rule) and st.source is not None:
            extra.append(replace(st, source=replace(st.source, name=st.source.name + SUFFIX),
                                 terms=tuple(_rename_term(t) for t in st.terms)))
    return replace(block, statements=(*block.statements, *extra))


def answers(f: Firing, s: str) -> tuple[list[int], bool, bool]:
    """`s`'s answers by position in its rules: which fire, can the default be taken, exact?"""
    takes = f.takes[s]
    return [i for i, r in enumerate(takes) if r.order in f.fires[s]], f.default[s], s in f.exact


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflow_blocks())
def test_shared_answers_are_the_answers_of_each_speaker(block):
    graph = build_graph(with_twins(block))
    alone, shared = Firing(graph, share=False), Firing(graph)
    for s in graph.participants:
        assert shared.takes[s] == alone.takes[s]
        assert answers(shared, s) == answers(alone, s), s
    assert shared.speaks == alone.speaks and shared.fired == alone.fired
    by_shape: dict = {}
    for s in graph.participants:
        by_shape.setdefault(shared._shape_of(s, graph.takes[s]), []).append(s)
    pairs = 0
    for group in by_shape.values():
        for s in group[1:]:  # one shape, analysed apart: the same answers
            assert answers(alone, s) == answers(alone, group[0]), (s, group[0])
            pairs += 1
    event(f"speakers sharing a shape: {'some' if pairs else 'none'}")


def test_a_large_flow_of_alike_speakers_is_analysed_once(monkeypatch):
    """60 speakers with the same rules up to names: one analysis, and every rule answered."""
    lines = ["workflow w {"]
    for i in range(60):
        lines.append(f"    participant p{i} tools [t{i}]")
    lines += ["    start p0", "    max_turns 100", "    context done = false"]
    for i in range(60):
        nxt = f"p{(i + 1) % 60}"
        lines += [f"    handoff p{i} -> {nxt} via h{i}",
                  f"    p{i} -> {nxt} when tool t{i}",
                  f"    p{i} -> terminate when tool t{i} and context.done == true",  # shadowed by the one above
                  f'    p{i} -> {nxt} when text contains "go"',
                  f"    p{i} -> stay priority 5"]
    lines.append("}")
    import turnflow

    flow = turnflow.parse("\n".join(lines) + "\n")
    graph = build_graph(flow.blocks[0])
    calls = []
    real = Firing._speaker
    monkeypatch.setattr(Firing, "_speaker", lambda self, s: (calls.append(s), real(self, s))[1])
    f = firing_mod.Firing(graph)
    assert calls == ["p0"]
    for i in range(60):
        assert answers(f, f"p{i}") == ([0, 1, 3, 4], False, True)  # `tool and context` (2) never fires
