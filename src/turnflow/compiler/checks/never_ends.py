from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import loop_hint, termination
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF201")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """The flow can never end: no path from `start` reaches a `terminate`.

    ## What it does
    Builds the speaker graph (docs/analysis.md) and reports, at `start`, a
    workflow without `max_turns` in which no sequence of speakers from the
    start speaker leads to a `terminate` (or the default `otherwise`). The
    message names a cycle the run is bound to repeat. With `max_turns` set,
    TF209 is reported instead; when TF201 fires, TF202 and TF206 are not
    reported for the block.

    ## Why is this bad?
    Every run loops forever: the session never closes by itself and burns
    tokens until something outside the flow kills it.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        start a
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
        a -> b
        b -> terminate "done" when text contains "DONE"
        b -> a
    }
    ```
    """
    verdict = termination(graph)
    if not verdict.never_ends or verdict.capped or graph.start_stmt is None:
        return
    loop = loop_hint(graph)
    yield Finding(graph.start_stmt.span,
                  f"workflow `{block.name.name}` can never end: no path from `{graph.start}` reaches a "
                  f"terminate{loop}",
                  help="add a rule that can `terminate`, or set `max_turns` to cut runs off")
