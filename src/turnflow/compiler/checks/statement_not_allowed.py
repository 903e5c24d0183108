from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast

_WORKFLOW_ONLY = {ast.Start: "start", ast.MaxTurns: "max_turns", ast.ContextInit: "context",
                  ast.Rule: "a transition rule", ast.Handoff: "handoff", ast.Otherwise: "otherwise"}


@rule("TF106")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A statement is not allowed in this kind of block.

    ## What it does
    `start`, `max_turns`, `context`, transition rules, `handoff` and
    `otherwise` belong to `workflow` blocks; `ordering` belongs to
    `discussion` blocks. Anything else in the wrong block is reported.

    ## Why is this bad?
    The other session kinds have fixed turn rules (consulting: ask then
    answer; conversation: any order; discussion: round robin); the statement
    would be dropped by the compiler.

    ## Example
    ```
    discussion panel {
        participant a
        participant b
        a -> b
    }
    ```

    ## Use instead
    ```
    workflow panel {
        participant a
        participant b
        start a
        a -> b
    }
    ```
    """
    for block in flow.blocks:
        for st in block.statements:
            word = _WORKFLOW_ONLY.get(type(st))
            if word is not None and block.kind != "workflow":
                yield Finding(st.span, f"{word if ' ' in word else '`' + word + '`'} is only allowed in a "
                              f"workflow block, not in {block.kind} block `{block.name.name}`")
            elif isinstance(st, ast.Ordering) and block.kind != "discussion":
                yield Finding(st.span, f"`ordering` is only allowed in a discussion block, not in "
                              f"{block.kind} block `{block.name.name}`")
