from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.firing import firing
from turnflow.compiler.speaker_graph import SpeakerGraph, show_path
from turnflow.dsl import ast


@rule("TF211")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """`max_turns` can never bind: every run ends by itself within the cap.

    ## What it does
    Reports `max_turns` when every run ends by a `terminate` within the
    cap: the moves runs make (the rules that fire, read as TF203 and TF204
    read them: docs/analysis.md, "Dead rules") hold no cycle from `start`,
    and the longest run takes no more turns than the cap (a terminate on the
    turn that reaches the cap wins). The message shows the longest run; it
    never passes through a participant that no run gives the turn (TF203)
    nor through a rule that never fires.

    ## Why is this bad?
    It is not wrong, but the cap documents a risk that does not exist, and
    it will silently stop protecting the flow once someone adds a loop with
    a larger bound in mind.

    ## Example
    ```
    max_turns 50
    planner -> coder
    coder -> terminate
    ```

    ## Use instead
    ```
    planner -> coder
    coder -> terminate
    ```
    """
    if graph.max_turns_stmt is None or graph.max_turns is None:
        return
    path = firing(graph).longest_run()
    if path is None or len(path) - 1 > graph.max_turns:
        return
    longest = len(path) - 1
    yield Finding(graph.max_turns_stmt.span,
                  f"max_turns {graph.max_turns} can never bind: every run ends by itself within it; the "
                  f"longest, {show_path(path)}, takes {longest} turn{'s' if longest != 1 else ''}")
