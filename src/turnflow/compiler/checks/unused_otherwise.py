from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF205")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """An explicit `otherwise` is never taken.

    ## What it does
    Reports an `otherwise` statement when every speaker that gets the turn
    on some run (those TF203 does not report) has a rule without a condition
    (an *always* rule) that decides before `otherwise` could.

    ## Why is this bad?
    The statement suggests a fallback that can never happen; a reader may
    rely on it.

    ## Example
    ```
    a -> b
    b -> terminate
    otherwise -> a
    ```

    ## Use instead
    ```
    a -> b
    b -> terminate
    ```
    """
    if graph.otherwise is None or graph.start is None:
        return
    speaks = firing(graph).speaks  # TF203's reading: who gets the turn on some run
    if any(s in speaks for s in graph.otherwise_speakers):
        return
    yield Finding(graph.otherwise.span, "`otherwise` is never taken: every speaker that gets the turn has a "
                  "rule without a condition that decides first")
