from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import names
from turnflow.compiler.checks.shadowed_rule import dead_for
from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF212")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A rule's condition holds on no turn: its guard contradicts itself.

    ## What it does
    Reports, at the rule, a rule whose condition no turn of a speaker that
    could take it satisfies, whatever tool it calls, whatever its text says
    and whatever value an agent gives the context: the terms contradict
    each other (`context.k == 1 and context.k == 2`, `tool a and tool b`,
    `context.n > 3 and context.n < 2`, `text contains "DONE" and not text
    contains "DON"`, `len(context.notes) < 0`). Context values are read over
    every JSON value, not only the initial ones: an agent may set any key in
    its round (docs/analysis.md, "Dead rules").

    ## Why is this bad?
    The rule never fires: usually an `and` that should be an `or`, or a
    comparison written the wrong way round.

    ## Example
    ```
    critic -> writer when context.score > 8 and context.score < 5
    ```

    ## Use instead
    ```
    critic -> writer when context.score > 8 or context.score < 5
    ```
    """
    f = firing(graph)
    for r in graph.rules:
        reached = dead_for(graph, f, r)
        if not reached or any(f.can(s, r.when, []) is not False for s in reached):
            continue
        kind = "handoff" if isinstance(r.stmt, ast.Handoff) else "rule"
        whom = "" if r.source is not None else " for " + names(reached, limit=5)
        yield Finding(r.stmt.span, f"this {kind} never fires: its condition holds on no turn{whom}, "
                      "whatever tool, text or context value the speaker gives",
                      help="the terms contradict each other: did you mean `or` instead of `and`?")
