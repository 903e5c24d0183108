from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import declaration, names, termination
from turnflow.compiler.speaker_graph import SpeakerGraph, show_path
from turnflow.dsl import ast


@rule("TF202")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A participant reachable from `start` can never reach a `terminate` (a trap).

    ## What it does
    Finds the reachable participants from which no path leads to a
    `terminate` and reports each bottom strongly connected component of that
    set once, at the declaration of its first participant, naming its members
    and a cycle the run is bound to repeat. Only without `max_turns` (TF209
    otherwise) and only when the flow can end at all (TF201 otherwise).
    Only participants some run gives the turn count (those TF203 does not
    report, `max_turns` ignored): a loop no run enters is no trap.

    ## Why is this bad?
    Some runs end and some never do: once the turn enters the trap, the
    session loops until something outside the flow kills it.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        participant c
        start a
        a -> terminate when text contains "DONE"
        a -> b
        b -> c
        c -> b
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant a
        participant b
        participant c
        start a
        a -> terminate when text contains "DONE"
        a -> b
        b -> c
        c -> a
    }
    ```
    """
    verdict = termination(graph)
    if verdict.capped:
        return
    for trap in verdict.traps:
        who = names(trap.members, limit=20)
        yield Finding(declaration(block, trap.members[0]),
                      f"trap: once the turn reaches {who}, the run can never end; it loops in "
                      f"{show_path(trap.cycle)} and no rule leads to a terminate",
                      help="add a way out (a rule to `terminate` or to a participant that can end), "
                           "or set `max_turns`")
