from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast


@rule("TF103")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A workflow block has no `start` statement.

    ## What it does
    Reports a `workflow` block that never says who speaks first, at the block's name.

    ## Why is this bad?
    The transition graph's `initial_speaker` is required: the session cannot begin.

    ## Example
    ```
    workflow review {
        participant writer
        participant critic
        writer -> critic
    }
    ```

    ## Use instead
    ```
    workflow review {
        participant writer
        participant critic
        start writer
        writer -> critic
    }
    ```
    """
    for block in flow.blocks:
        if block.kind == "workflow" and not block.of_type(ast.Start):
            yield Finding(block.name.span, f"workflow `{block.name.name}` has no `start` statement",
                          help="add `start NAME` naming the participant who speaks first")
