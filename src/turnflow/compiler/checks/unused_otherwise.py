from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF205")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """An explicit `otherwise` is never taken.

    ## What it does
    Reports an `otherwise` statement when every speaker reachable from
    `start` has a rule without a condition (an *always* rule) that decides
    before `otherwise` could.

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
    reach = graph.reachable()
    if any(s in reach for s in graph.otherwise_speakers):
        return
    yield Finding(graph.otherwise.span, "`otherwise` is never taken: every reachable speaker has a rule "
                  "without a condition that decides first")
