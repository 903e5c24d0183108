"""The picture of a block: a neutral model (nodes, edges, notes) that the DOT,
Mermaid and JSON emitters render. It is built from the speaker graph (the IR)
and the block's diagnostics, so every emitter shows the same analysis.

Choices (docs/graph.md): one END node per distinct close reason; edges
labelled with their conditions (`tool t`, `context.k == v`, `text contains
"s"`, `always`, `otherwise`) and priority when not 0; *maybe* edges dashed;
unreachable participants greyed; trapped participants and the edges between
them red; shadowed rules drawn dotted and grey from their source, labelled
with the rule that shadows them; TF209/TF210/TF211 noted on the start node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.dsl import ast
from turnflow.dsl.printer import condition
import bisect
from turnflow.compiler.speaker_graph import build_graph
from turnflow.compiler import digraph as dg
from turnflow.compiler.speaker_graph import END

if TYPE_CHECKING:  # imported lazily at run time: the speaker graph is only built for a picture
    from turnflow.compiler.digraph import DiGraph
    from turnflow.compiler.speaker_graph import Statement

    #: `fallback(src, rule)` (see `_fallbacks`)
    Fallback = Callable[[str, Optional[Statement]], bool]

START_ID = "<start>"


def end_id(reason: str) -> str:
    return f"<END:{reason}>"


@dataclass
class Node:
    id: str
    label: str
    kind: str  # "participant" | "end" | "start" | "any"
    description: str = ""
    start: bool = False
    initiator: bool = False
    respondent: bool = False
    unreachable: bool = False
    trapped: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class Edge:
    src: str
    dst: str
    kind: str  # "always" | "maybe" | "otherwise" | "shadowed" | "start" | "turn"
    labels: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    trapped: bool = False
    note: str = ""  # why a shadowed rule never fires (the TF204 message)

    @property
    def label(self) -> str:
        return "\n".join(self.labels)


@dataclass
class Picture:
    block: str
    kind: str
    title: str
    nodes: list[Node]
    edges: list[Edge]


# --------------------------------------------------------------------------
#  Labels
# --------------------------------------------------------------------------
def rule_label(rule: Optional[Statement]) -> str:
    """The condition under which `rule` sends the turn along its edge."""
    if rule is None:
        return "otherwise"
    # a `previous` edge is one of several the rule may take: say so
    via = " (previous)" if rule.target.kind == "previous" else ""
    if isinstance(rule, ast.Otherwise):
        return "otherwise" + via
    if isinstance(rule, ast.Handoff):
        return f"tool {rule.tool.name}" + via
    text = condition(rule.terms) if rule.terms else "always"
    if rule.priority is not None and rule.priority.value != 0:
        text += f" [priority {rule.priority.value}]"
    return text + via


def rule_kind(rule: Optional[Statement]) -> str:
    if rule is None or isinstance(rule, ast.Otherwise):
        return "otherwise"
    if isinstance(rule, ast.Handoff) or rule.terms or rule.target.kind == "previous":
        return "maybe"
    return "always"


def close_reason(rule: Optional[Statement]) -> str:
    target = None if rule is None else rule.target
    if target is None or target.reason is None:
        return "after_work"
    return target.reason.value


# --------------------------------------------------------------------------
#  Building
# --------------------------------------------------------------------------
def _participant_nodes(block: ast.Block) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for p in block.participants:
        if p.name.name in nodes:
            continue
        nodes[p.name.name] = Node(id=p.name.name, label=p.name.name, kind="participant",
                                  description=p.description.value if p.description else "",
                                  initiator=p.role == "initiator", respondent=p.role == "respondent")
    return nodes


def _rule_at(block: ast.Block, starts: list[int], d: Diagnostic) -> Optional[Union[ast.Rule, ast.Handoff]]:
    """The rule or handoff statement `d` points into (`starts`: the statements' start offsets,
    ascending, so each look-up is a bisection)."""

    i = bisect.bisect_right(starts, d.span.start) - 1
    st = block.statements[i] if i >= 0 else None
    if isinstance(st, (ast.Rule, ast.Handoff)) and st.span.start <= d.span.start < st.span.end:
        return st
    return None


def build_picture(block: ast.Block, diagnostics: Sequence[Diagnostic] = ()) -> Picture:
    """The picture of one error-free block; `diagnostics` are the block file's findings."""
    title = block.title.value if block.title is not None else ""
    if block.kind != "workflow":
        return _session_picture(block, title)


    ir = build_graph(block)
    nodes = _participant_nodes(block)
    start = ir.start
    inside = [d for d in diagnostics if block.span.start <= d.span.start < block.span.end]
    _mark_nodes(ir.g, start, nodes, inside, block.participants)
    end_nodes: dict[str, Node] = {}
    edges = _graph_edges(ir.g, nodes, end_nodes, _fallbacks(block))
    any_node = _shadowed_edges(block, inside, edges, end_nodes)

    out_nodes = [Node(id=START_ID, label="start", kind="start")] if start in nodes else []
    out_nodes += list(nodes.values())
    if any_node is not None:
        out_nodes.append(any_node)
    out_nodes += [end_nodes[r] for r in sorted(end_nodes)]
    if start in nodes:
        edges.insert(0, Edge(src=START_ID, dst=start, kind="start"))
    return Picture(block=block.name.name, kind=block.kind, title=title, nodes=out_nodes, edges=edges)


def _mark_nodes(g: DiGraph[str], start: Optional[str], nodes: dict[str, Node], inside: list[Diagnostic],
                participants: Sequence[ast.Participant] = ()) -> None:
    """Unreachable and trapped participants; the start node with the cap findings as notes."""

    reach = {start} | dg.descendants(g, start) if start is not None and start in g else set()
    coreach = dg.ancestors(g, END) | {END} if END in g else set()
    # `check` also proves participants unreachable whose incoming rules never fire (TF203 at the
    # declaration; docs/analysis.md, "Dead rules"), though the speaker graph keeps those edges
    dead = {d.span.start for d in inside if d.code == "TF203"}
    dead_names = {p.name.name for p in participants if p.name.span.start in dead}
    for name, node in nodes.items():
        node.unreachable = name not in reach or name in dead_names
        node.trapped = name in reach and name not in coreach and not node.unreachable
    if start in nodes:
        nodes[start].start = True
        for d in inside:
            if d.code in ("TF209", "TF210", "TF211"):
                nodes[start].notes.append(f"{d.code}: {d.message}")


def _graph_edges(g: DiGraph[str], nodes: dict[str, Node], end_nodes: dict[str, Node],
                 fallback: Fallback) -> list[Edge]:
    """The speaker graph's edges in participant order; edges to END split by close reason."""

    edges: list[Edge] = []
    position = {name: i for i, name in enumerate(nodes)}

    def order(name: str) -> tuple[int, Union[int, str]]:
        return (0, position[name]) if name in position else (1, str(name))

    for src, dst, data in sorted(g.edges(data=True), key=lambda e: (order(e[0]), order(e[1]))):
        if src == END:
            continue
        rules = data.get("rules") or [None]
        if dst == END:
            by_reason: dict[str, list[Optional[Statement]]] = {}
            for r in rules:
                by_reason.setdefault(close_reason(r), []).append(r)
            for reason, rs in by_reason.items():
                end_nodes.setdefault(reason, Node(id=end_id(reason), label=reason, kind="end"))
                edges.append(_edge(src, end_id(reason), rs, False, fallback))
        else:
            trapped = src in nodes and dst in nodes and nodes[src].trapped and nodes[dst].trapped
            edges.append(_edge(src, dst, rules, trapped, fallback))
    return edges


def _shadowed_edges(block: ast.Block, inside: list[Diagnostic], edges: list[Edge],
                    end_nodes: dict[str, Node]) -> Optional[Node]:
    """Shadowed rules (TF204): dotted, from their source, labelled with what shadows them;
    returns the "any speaker" node when a `*` rule is among them."""
    any_node = None
    starts = [st.span.start for st in block.statements]
    for d in inside:
        rule = _rule_at(block, starts, d) if d.code == "TF204" else None
        if rule is None:
            continue
        src = rule.source.name if rule.source is not None else "*"
        if src == "*":
            any_node = any_node or Node(id="<any>", label="any speaker", kind="any")
            src = any_node.id
        dst = _target_id(rule.target, src, block, end_nodes)
        if dst is None:
            continue
        edges.append(Edge(src=src, dst=dst, kind="shadowed", labels=[f"shadowed: {rule_label(rule)}"],
                          lines=[rule.span.line], note=d.message))
    return any_node


def _fallbacks(block: ast.Block) -> Fallback:
    """`fallback(src, rule)`: whether an unconditional `rule` is, for speaker `src`, a fallback —
    an earlier rule that applies to `src` has a condition, so this one is taken only *otherwise*
    (drawn and labelled like the `otherwise` edge, not as `always`)."""
    order: dict[int, int] = {}  # id(rule) → its place in evaluation order
    first_conditional: dict[str, int] = {}  # source ("*" = any) → the place of its first conditional rule

    def priority(st: Union[ast.Rule, ast.Handoff]) -> int:
        p = getattr(st, "priority", None)
        return p.value if p is not None else 0

    # evaluation order: ascending priority, ties in file order (docs/language.md)
    for i, st in enumerate(sorted(block.rules, key=priority)):
        order[id(st)] = i
        if isinstance(st, ast.Handoff) or st.terms:
            first_conditional.setdefault(st.source.name if st.source is not None else "*", i)

    def fallback(src: str, rule: Optional[Statement]) -> bool:
        if not isinstance(rule, ast.Rule) or rule.terms or id(rule) not in order:
            return False
        at = order[id(rule)]
        return first_conditional.get(src, at) < at or first_conditional.get("*", at) < at

    return fallback


def _edge(src: str, dst: str, rules: list[Optional[Statement]], trapped: bool,
          fallback: Optional[Fallback] = None) -> Edge:
    def kind_of(r: Optional[Statement]) -> str:
        return "otherwise" if fallback is not None and fallback(src, r) else rule_kind(r)

    kinds = {kind_of(r) for r in rules}
    kind = "always" if "always" in kinds else ("otherwise" if "otherwise" in kinds else "maybe")
    seen: list[str] = []
    for r in rules:
        label = rule_label(r)
        if isinstance(r, ast.Rule) and kind_of(r) == "otherwise":
            label = label.replace("always", "otherwise", 1)  # keeps a `[priority N]` suffix
        if label not in seen:
            seen.append(label)
    lines = sorted({r.span.line for r in rules if r is not None})
    return Edge(src=src, dst=dst, kind=kind, labels=seen, lines=lines, trapped=trapped)


def _target_id(target: ast.Target, src: str, block: ast.Block, end_nodes: dict[str, Node]) -> Optional[str]:
    if target.kind == "participant" and target.name is not None:
        return target.name.name
    if target.kind == "terminate":
        reason = target.reason.value if target.reason else "after_work"
        end_nodes.setdefault(reason, Node(id=end_id(reason), label=reason, kind="end"))
        return end_id(reason)
    if target.kind == "stay":
        return src if src != "<any>" else None
    return None  # next / initiator / previous: no single node for a shadowed rule


def _session_picture(block: ast.Block, title: str) -> Picture:
    """Consulting, conversation and discussion blocks have fixed turn rules."""
    nodes = _participant_nodes(block)
    names = list(nodes)
    edges: list[Edge] = []
    extra: list[Node] = []
    if block.kind == "consulting" and len(names) == 2:
        asker = next((n for n in names if nodes[n].initiator), names[0])
        answerer = next(n for n in names if n != asker)
        nodes[asker].start = True
        extra.append(Node(id=end_id("consulting_complete"), label="consulting_complete", kind="end"))
        edges = [Edge(src=START_ID, dst=asker, kind="start"),
                 Edge(src=asker, dst=answerer, kind="turn", labels=["question"]),
                 Edge(src=answerer, dst=end_id("consulting_complete"), kind="turn", labels=["reply"])]
        return Picture(block.name.name, block.kind, title,
                       [Node(id=START_ID, label="start", kind="start")] + list(nodes.values()) + extra, edges)
    if block.kind == "conversation":
        for a in names:
            for b in names:
                if a != b:
                    edges.append(Edge(src=a, dst=b, kind="turn", labels=["any order"]))
        return Picture(block.name.name, block.kind, title, list(nodes.values()), edges)
    # discussion: strict round robin from the creator
    first = next((n for n in names if nodes[n].initiator), names[0] if names else None)
    if first is None:
        return Picture(block.name.name, block.kind, title, [], [])
    nodes[first].start = True
    order = names[names.index(first):] + names[:names.index(first)]
    edges.append(Edge(src=START_ID, dst=first, kind="start"))
    for a, b in zip(order, order[1:] + order[:1]):
        edges.append(Edge(src=a, dst=b, kind="turn", labels=["round robin"]))
    return Picture(block.name.name, block.kind, title,
                   [Node(id=START_ID, label="start", kind="start")] + list(nodes.values()), edges)
