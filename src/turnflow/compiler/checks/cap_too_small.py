from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.graph_common import run_graph
from turnflow.compiler.speaker_graph import SpeakerGraph, show_path
from turnflow.dsl import ast


@rule("TF210")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """`max_turns` is smaller than the fewest turns from `start` to a `terminate`.

    ## What it does
    A run counts every turn, the start speaker's first one included, so a
    path start → … → X → terminate takes as many turns as it has
    participants. Reports `max_turns` when it is smaller than the shortest
    such path (a terminate on the turn that reaches the cap still wins, so a
    cap equal to the shortest path is fine). The path only passes through
    participants some run gives the turn (TF203 reports the others). The
    message shows the path.

    ## Why is this bad?
    Every run is cut off by the cap before it can end by itself: the flow
    never finishes its work.

    ## Example
    ```
    max_turns 2
    planner -> coder
    coder -> reviewer
    reviewer -> terminate
    ```

    ## Use instead
    ```
    max_turns 6
    planner -> coder
    coder -> reviewer
    reviewer -> terminate
    ```
    """
    if graph.max_turns_stmt is None or graph.max_turns is None:
        return
    runs = run_graph(graph)
    fewest = runs.fewest_turns()
    if fewest is None or graph.max_turns >= fewest:
        return
    path = runs.shortest_path_to_end()
    yield Finding(graph.max_turns_stmt.span,
                  f"max_turns {graph.max_turns} cuts every run short: the shortest way to end, "
                  f"{show_path(path or [])}, takes {fewest} turns",
                  help=f"raise `max_turns` to at least {fewest}")
