"""The IR's small digraph (turnflow.compiler.digraph) agrees with networkx, the reference, on
random directed graphs: strongly connected components, topological order (the same order as
networkx's, so longest paths pick the same path), descendants, ancestors, induced subgraphs (copied, and
ordered without copying)."""

from __future__ import annotations

import networkx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnflow.compiler import digraph

graphs = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n)))


def both(n: int, edges: list[tuple[int, int]]):
    ours, ref = digraph.DiGraph(), networkx.DiGraph()
    names = [f"p{i}" for i in range(n)]
    ours.add_nodes_from(names)
    ref.add_nodes_from(names)
    for u, v in edges:
        ours.add_edge(names[u], names[v], {"e": (u, v)})
        ref.add_edge(names[u], names[v], e=(u, v))
    return ours, ref, names


@settings(max_examples=150, deadline=None)  # (was 300) graphs of at most 12 nodes: 150 cover them well
@given(graphs, st.data())
def test_agrees_with_networkx(graph, data):
    n, edges = graph
    ours, ref, names = both(n, edges)
    assert sorted(ours.edges()) == sorted(ref.edges())
    assert {(u, v): d["e"] for u, v, d in ours.edges(data=True)} == {(u, v): d["e"] for u, v, d in ref.edges(data=True)}
    assert sorted(map(sorted, digraph.strongly_connected_components(ours))) == \
        sorted(map(sorted, networkx.strongly_connected_components(ref)))
    node = data.draw(st.sampled_from(names))
    assert digraph.descendants(ours, node) == networkx.descendants(ref, node)
    assert digraph.ancestors(ours, node) == networkx.ancestors(ref, node)
    keep = data.draw(st.sets(st.sampled_from(names)))
    sub = ours.subgraph(keep)
    assert sorted(sub.edges()) == sorted(ref.subgraph(keep).edges())
    assert sub.nodes == [x for x in names if x in keep]
    if networkx.is_directed_acyclic_graph(ref):
        assert digraph.topological_sort(ours) == list(networkx.topological_sort(ref))
    else:
        with pytest.raises(ValueError):
            digraph.topological_sort(ours)
    # the order of the subgraph `keep` induces, without copying it
    ref_sub = networkx.DiGraph()  # (built in node order: a networkx subgraph view iterates its set)
    ref_sub.add_nodes_from(x for x in names if x in keep)
    ref_sub.add_edges_from((u, v) for u, v in ref.edges() if u in keep and v in keep)
    if networkx.is_directed_acyclic_graph(ref_sub):
        assert digraph.topological_sort(ours, keep) == list(networkx.topological_sort(ref_sub))
    else:
        with pytest.raises(ValueError):
            digraph.topological_sort(ours, keep)


def test_long_chain_needs_no_recursion():
    g = digraph.DiGraph()
    g.add_edges_from((i, i + 1) for i in range(50_000))
    g.add_edge(50_000, 0)
    assert [len(c) for c in digraph.strongly_connected_components(g)] == [50_001]
