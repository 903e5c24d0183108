from typing import Iterator

from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.dsl import ast


@rule("TF101")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A participant is declared twice in one block.

    ## What it does
    Reports every `participant` declaration whose name was already declared
    earlier in the same block, pointing back at the first declaration.

    ## Why is this bad?
    Participant order drives `next`, round robin and the compiled `order`;
    a second declaration makes both ambiguous, and its description, role or
    tools would silently fight with the first.

    ## Example
    ```
    participant writer "Drafts"
    participant writer "Edits"
    ```

    ## Use instead
    ```
    participant writer "Drafts"
    participant editor "Edits"
    ```
    """
    for block in flow.blocks:
        seen: dict[str, ast.Participant] = {}
        for p in block.participants:
            first = seen.get(p.name.name)
            if first is not None:
                yield Finding(p.name.span, f"participant `{p.name.name}` is already declared in block "
                              f"`{block.name.name}` (line {first.name.span.line})",
                              related(first.name.span, "first declared here"))
            else:
                seen[p.name.name] = p
