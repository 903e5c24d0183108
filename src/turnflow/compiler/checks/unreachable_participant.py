from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import names
from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF203")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A participant is unreachable from `start`: no run gives it the turn.

    ## What it does
    Reports, at its declaration, each participant that no run ever gives the
    turn: no path of the speaker graph leads to it from the start speaker, or
    every rule that leads to it never fires (TF204, TF212), or it could only
    speak after `max_turns` turns (docs/analysis.md, "Dead rules"). Its rules
    never fire either. The `initiator`, when it is not `start`, is noted by
    TF213 instead: it opens the session even if it never speaks. A `*` rule
    that only such participants could take (its `tool` term rules out the
    others) is reported at the rule as well.

    ## Why is this bad?
    Its rules are dead weight and the agent is configured for nothing; usually
    a handoff or rule to it is missing or misspelt.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        participant reviewer
        start a
        a -> b
        b -> terminate
        reviewer -> terminate
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant a
        participant b
        participant reviewer
        start a
        a -> b
        b -> reviewer
        reviewer -> terminate
    }
    ```
    """
    if graph.start is None:
        return
    speaks = firing(graph).speaks
    reach = graph.reachable()
    seen: set[str] = set()
    for p in block.participants:
        name = p.name.name
        if name in speaks or name in seen or (name == graph.initiator and name != graph.start):
            continue
        seen.add(name)
        if name not in reach:
            why = "no run ever gives it the turn"
        elif name in firing(graph).uncapped_speakers():
            why = f"it could speak only after `max_turns {graph.max_turns}` turns"
        else:
            why = "the rules that lead to it never fire"
        yield Finding(p.name.span, f"participant `{name}` is unreachable from `start` (`{graph.start}`): {why}")
    yield from _star_rules(graph)


def _star_rules(graph: SpeakerGraph) -> Iterator[Finding]:
    """A `*` rule that only unreachable participants could take (the others: a `tool` term rules
    them out) never fires: reported at the rule too, since no declaration names it."""
    f = firing(graph)
    for r in graph.rules:
        if r.source is not None or f.fires_on_some_run(r):
            continue
        takers = [s for s in graph.participants if not graph.never(r, s)]
        if takers and not any(s in f.speaks for s in takers):
            kind = "handoff" if isinstance(r.stmt, ast.Handoff) else "rule"
            yield Finding(r.stmt.span, f"this {kind} never fires: the only participants that can take it "
                          f"({names(takers, limit=5)}) never get the turn")
