"""A small directed graph for the speaker-graph IR: nodes in insertion order, one data dict per
edge, and the few algorithms the analysis needs (strongly connected components, a topological
order, a longest path, descendants and ancestors), all linear and deterministic.

It replaces networkx in the `turnflow check` path: importing networkx costs about 0.2 s of CPU
per command (it loads every algorithm it ships), several times the analysis of a typical file.
The interface is the subset of `networkx.DiGraph` the IR uses, so `ir.g.edges[u, v]` and
`ir.g.edges(data=True)` read the same; tests/test_graph_property.py checks the algorithms
against networkx on random graphs."""

from __future__ import annotations

from typing import AbstractSet, Any, Callable, Generic, Hashable, Iterable, Iterator, Literal, Optional, TypeVar, Union, overload

#: a node (the speaker graph's are participant names and `END`)
N = TypeVar("N", bound=Hashable)
#: an edge's data, as networkx keeps it: attribute name → value
EdgeData = dict[str, Any]


class EdgeView(Generic[N]):
    """`g.edges[u, v]` is the edge's data; `g.edges()` / `g.edges(data=True)` list the edges."""

    def __init__(self, succ: dict[N, dict[N, EdgeData]]):
        self._succ = succ

    def __getitem__(self, edge: tuple[N, N]) -> EdgeData:
        u, v = edge
        return self._succ[u][v]

    @overload
    def __call__(self, data: Literal[False] = False) -> list[tuple[N, N]]: ...

    @overload
    def __call__(self, data: Literal[True]) -> list[tuple[N, N, EdgeData]]: ...

    def __call__(self, data: bool = False) -> Union[list[tuple[N, N, EdgeData]], list[tuple[N, N]]]:
        if data:
            return [(u, v, d) for u, out in self._succ.items() for v, d in out.items()]
        return [(u, v) for u, out in self._succ.items() for v in out]

    def __iter__(self) -> Iterator[tuple[N, N]]:
        return iter(self())

    def __len__(self) -> int:
        return sum(len(out) for out in self._succ.values())


class DiGraph(Generic[N]):
    def __init__(self) -> None:
        self._succ: dict[N, dict[N, EdgeData]] = {}
        self._pred: dict[N, dict[N, EdgeData]] = {}

    # -- building ---------------------------------------------------------------
    def add_node(self, n: N) -> None:
        if n not in self._succ:
            self._succ[n] = {}
            self._pred[n] = {}

    def add_nodes_from(self, nodes: Iterable[N]) -> None:
        for n in nodes:
            self.add_node(n)

    def add_edge(self, u: N, v: N, data: Optional[EdgeData] = None) -> None:
        self.add_node(u)
        self.add_node(v)
        d = self._succ[u].get(v)
        if d is None:
            d = {} if data is None else data
            self._succ[u][v] = d
            self._pred[v][u] = d
        elif data is not None:
            d.update(data)

    def add_out_edges(self, u: N, out: dict[N, EdgeData]) -> None:
        """Add the edges `u -> v` with data `out[v]`, in `out`'s order, for a node `u` without
        out-edges yet, every `v` a node already."""
        succ, pred = self._succ[u], self._pred
        for v, d in out.items():
            succ[v] = d
            pred[v][u] = d

    def add_edges_from(self, edges: Iterable[Union[tuple[N, N], tuple[N, N, EdgeData]]]) -> None:
        for e in edges:
            self.add_edge(e[0], e[1], e[2] if len(e) > 2 else None)

    # -- reading ----------------------------------------------------------------
    def __contains__(self, n: object) -> bool:
        return n in self._succ

    def __iter__(self) -> Iterator[N]:
        return iter(self._succ)

    def __len__(self) -> int:
        return len(self._succ)

    @property
    def nodes(self) -> list[N]:
        return list(self._succ)

    @property
    def edges(self) -> EdgeView[N]:
        return EdgeView(self._succ)

    @overload
    def out_edges(self, u: N, data: Literal[False] = False) -> list[tuple[N, N]]: ...

    @overload
    def out_edges(self, u: N, data: Literal[True]) -> list[tuple[N, N, EdgeData]]: ...

    def out_edges(self, u: N, data: bool = False) -> Union[list[tuple[N, N, EdgeData]], list[tuple[N, N]]]:
        out = self._succ[u]
        return [(u, v, d) for v, d in out.items()] if data else [(u, v) for v in out]

    def successors(self, u: N) -> Iterator[N]:
        return iter(self._succ[u])

    def predecessors(self, v: N) -> Iterator[N]:
        return iter(self._pred[v])

    def has_edge(self, u: N, v: N) -> bool:
        return v in self._succ.get(u, ())

    def subgraph(self, nodes: Iterable[N]) -> DiGraph[N]:
        """The induced subgraph (a copy of the structure sharing the edge data), nodes in this
        graph's order."""
        keep = set(nodes)
        sub: DiGraph[N] = DiGraph()
        for u, out in self._succ.items():
            if u in keep:
                sub._succ[u] = {v: d for v, d in out.items() if v in keep}
                sub._pred[u] = {w: d for w, d in self._pred[u].items() if w in keep}
        return sub


def strongly_connected_components(g: DiGraph[N]) -> list[set[N]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    out: list[set[N]] = []
    for root in g:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(g.successors(root)))]
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(g.successors(w))))
                    pushed = True
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            if pushed:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[v] < low[parent]:
                    low[parent] = low[v]
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def topological_sort(g: DiGraph[N], within: Optional[AbstractSet[N]] = None) -> list[N]:
    """Kahn's algorithm generation by generation, in node order (networkx's order); with
    `within`, the order of the subgraph those nodes induce, found without copying it.
    ValueError on a cycle."""
    if within is None:
        indegree = {v: len(g._pred[v]) for v in g}
    else:
        indegree = {v: sum(1 for w in g._pred[v] if w in within) for v in g if v in within}
    generation = [v for v, d in indegree.items() if d == 0]
    order: list[N] = []
    while generation:
        order.extend(generation)
        nxt = []
        for u in generation:
            for v in g.successors(u):
                if v in indegree:  # (every node, or those `within`)
                    indegree[v] -= 1
                    if indegree[v] == 0:
                        nxt.append(v)
        generation = nxt
    if len(order) != len(indegree):
        raise ValueError("the graph has a cycle")
    return order


def longest_path(g: DiGraph[N], source: N, sink: N, key: Callable[[N], Any],
                 within: Optional[AbstractSet[N]] = None) -> Optional[list[N]]:
    """A longest path `source` → … → `sink` (nodes in order) in the subgraph `within` induces
    (the whole graph when None), or None when that subgraph has a cycle or `sink` cannot be
    reached. One pass in `topological_sort`'s order; a node's successors are tried in `key`
    order, and a node keeps the first predecessor that gave it its longest distance."""
    try:
        order = topological_sort(g, within)
    except ValueError:
        return None
    dist: dict[N, int] = {source: 0}
    parent: dict[N, N] = {}
    for u in order:
        if u not in dist:
            continue
        for v in sorted(g.successors(u), key=key):
            if within is not None and v not in within:
                continue
            if dist.get(v, -1) < dist[u] + 1:
                dist[v] = dist[u] + 1
                parent[v] = u
    if sink not in dist:
        return None
    path = [sink]
    while path[-1] != source:
        path.append(parent[path[-1]])
    path.reverse()
    return path


def _walk(start: N, step: Callable[[N], Iterable[N]]) -> set[N]:
    seen = {start}
    todo = [start]
    while todo:
        for v in step(todo.pop()):
            if v not in seen:
                seen.add(v)
                todo.append(v)
    seen.discard(start)
    return seen


def descendants(g: DiGraph[N], source: N) -> set[N]:
    """Nodes reachable from `source` (itself excluded, as networkx)."""
    return _walk(source, g.successors)


def ancestors(g: DiGraph[N], target: N) -> set[N]:
    """Nodes from which `target` is reachable (itself excluded, as networkx)."""
    return _walk(target, g.predecessors)
