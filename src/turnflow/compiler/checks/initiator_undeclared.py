from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast


def initiator_targets(block: ast.Block) -> Iterator[ast.Target]:
    for st in block.statements:
        if isinstance(st, (ast.Rule, ast.Handoff, ast.Otherwise)) and st.target.kind == "initiator":
            yield st.target


@rule("TF110")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """The `initiator` target is used but no participant is marked `initiator`.

    ## What it does
    Reports each `-> initiator` in a block that declares no initiator.

    ## Why is this bad?
    `initiator` means "back to whoever opened the session", which is decided
    at run time: the analysis has to assume it can be any participant, and a
    reader cannot tell where the turn goes.

    ## Example
    ```
    participant user
    participant agent
    agent -> initiator
    ```

    ## Use instead
    ```
    participant user initiator
    participant agent
    agent -> initiator
    ```
    """
    for block in flow.blocks:
        if any(p.role == "initiator" for p in block.participants):
            continue
        for t in initiator_targets(block):
            yield Finding(t.span, f"`initiator` is used but no participant of `{block.name.name}` is marked "
                          "`initiator`; any participant may be the one who opened the session",
                          help="mark the session creator, e.g. `participant user initiator`")
