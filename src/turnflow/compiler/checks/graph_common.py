"""Helpers shared by the graph rules (TF2xx): spans, names and rule text in messages, the
graph of the participants some run gives the turn (`run_graph`), and the one termination verdict
that TF201 / TF202 / TF206 / TF209 share (docs/analysis.md, precedence)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph, TrapComponent, show_path
from turnflow.diagnostics.listing import MAX_LISTED
from turnflow.dsl import ast, printer
from turnflow.source import Span


def header_span(block: ast.Block) -> Span:
    """`workflow NAME ["title"]`: where block-level diagnostics go."""
    last = block.title.span if block.title is not None else block.name.span
    return block.kind_span.cover(last)


def declaration(block: ast.Block, name: str) -> Span:
    for p in block.participants:
        if p.name.name == name:
            return p.name.span
    return block.name.span


def names(items: Iterable[str], limit: int = MAX_LISTED) -> str:
    """`a`, `b` and `c` (past `limit`, the rest as "and N more")."""
    items = [f"`{n}`" for n in items]
    if len(items) > limit:
        rest = len(items) - limit
        items = items[:limit] + [f"{rest} more"]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def run_graph(graph: SpeakerGraph) -> SpeakerGraph:
    """The speaker graph restricted to the participants some run gives the turn, `max_turns`
    ignored (TF203's exploration, docs/analysis.md "Dead rules"): what TF201, TF202, TF206, TF209
    and TF210 read, so that none of them names a participant no run reaches. The graph itself
    when every participant it reaches from `start` speaks on some run (the common case)."""
    cached = graph._cache.get("run_graph")
    if isinstance(cached, SpeakerGraph):
        return cached
    out = graph
    if graph.start is not None:
        f = firing(graph)
        reach = graph.reachable()
        if not reach <= f.speaks:
            speakers = f.uncapped_speakers()
            if not reach <= speakers:
                out = graph.restricted(speakers)
    graph._cache["run_graph"] = out
    return out


def loop_hint(graph: SpeakerGraph) -> str:
    """`; it loops, e.g. a -> b -> a`: a cycle a run that can never end is bound to repeat
    (empty when there is none to name); the tail of the TF201 / TF209 message."""
    traps = run_graph(graph).trap_components()
    return f"; it loops, e.g. {show_path(traps[0].cycle)}" if traps else ""


def rule_text(stmt: ast.Statement) -> str:
    return printer.statement(stmt)


@dataclass(frozen=True)
class Termination:
    """Which of TF201 / TF202 / TF209 / TF206 fire for a block, decided once."""

    never_ends: bool  # END unreachable from start (TF201 without max_turns, TF209 with)
    traps: tuple[TrapComponent, ...]  # reported (TF202 without max_turns, TF209 with)
    cycle: Optional[tuple[str, ...]]  # TF206: reachable cycle, no cap, nothing above fired
    capped: bool


def termination(graph: SpeakerGraph) -> Termination:
    cached = graph._cache.get("termination")
    if cached is not None:
        return cached  # type: ignore[return-value]
    capped = graph.max_turns is not None
    runs = run_graph(graph)
    never_ends = graph.start is not None and not runs.ends()
    traps: tuple[TrapComponent, ...] = ()
    if not never_ends:
        traps = tuple(runs.trap_components())
    cycle = None
    if not capped and not never_ends and not traps:
        cycle = runs.reachable_cycle()
    result = Termination(never_ends, traps, cycle, capped)
    graph._cache["termination"] = result
    return result

