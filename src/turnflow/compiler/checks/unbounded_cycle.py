from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import header_span, termination
from turnflow.compiler.speaker_graph import SpeakerGraph, show_path
from turnflow.dsl import ast


@rule("TF206")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A reachable cycle exists and there is no `max_turns`: termination depends on the agents.

    ## What it does
    Reports once, at the block header, a workflow without `max_turns` whose
    speaker graph has a cycle among the participants reachable from `start`
    (a `stay` counts), naming one such cycle; a participant no run gives the
    turn (TF203) is in no cycle. Only when the flow can end from everywhere
    (no TF201 / TF202 / TF209).

    ## Why is this bad?
    Whether a run ends depends on what the agents say or which tools they
    call; a model that never says the magic words loops forever.

    ## Example
    ```
    workflow w {
        participant writer
        participant critic
        start writer
        writer -> critic
        critic -> terminate when text contains "APPROVED"
        critic -> writer
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant writer
        participant critic
        start writer
        max_turns 10
        writer -> critic
        critic -> terminate when text contains "APPROVED"
        critic -> writer
    }
    ```
    """
    verdict = termination(graph)
    if verdict.cycle is None:
        return
    yield Finding(header_span(block),
                  f"workflow `{block.name.name}` has a reachable cycle, {show_path(verdict.cycle)}, and no "
                  "`max_turns`: whether a run ends depends on what the agents do",
                  help="set `max_turns` to bound every run")
