from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import declaration, loop_hint, names, termination
from turnflow.compiler.speaker_graph import SpeakerGraph, show_path
from turnflow.dsl import ast


@rule("TF209")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """The flow, or a reachable trap, ends only through `max_turns`.

    ## What it does
    With `max_turns` set: when no path from `start` reaches a `terminate`,
    reports once at `start` (what TF201 reports without a cap); otherwise
    reports each trap (a bottom strongly connected component of the reachable
    participants that cannot reach a `terminate`) once, at the declaration of
    its first participant, naming its members and a cycle.

    ## Why is this bad?
    The cap is a safety net, not a way to finish: runs that end by it close
    with reason `max_turns`, which usually means the work was not done.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        start a
        max_turns 10
        a -> b
        b -> a
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant a
        participant b
        start a
        max_turns 10
        a -> b
        b -> terminate "done" when text contains "DONE"
        b -> a
    }
    ```
    """
    verdict = termination(graph)
    if not verdict.capped:
        return
    cap = graph.max_turns
    if verdict.never_ends:
        if graph.start_stmt is None:
            return
        loop = loop_hint(graph)
        yield Finding(graph.start_stmt.span,
                      f"workflow `{block.name.name}` ends only through max_turns {cap}: no path from "
                      f"`{graph.start}` reaches a terminate{loop}",
                      help="add a rule that can `terminate`")
        return
    for trap in verdict.traps:
        yield Finding(declaration(block, trap.members[0]),
                      f"once the turn reaches {names(trap.members, limit=20)}, the run ends only through "
                      f"max_turns {cap}; it loops in {show_path(trap.cycle)} and no rule leads to a terminate",
                      help="add a way out (a rule to `terminate` or to a participant that can end)")
