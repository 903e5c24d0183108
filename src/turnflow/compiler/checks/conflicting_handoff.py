from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.dsl import ast


def target_key(t: ast.Target) -> tuple[str, Optional[str], Optional[str]]:
    return (t.kind, t.name.name if t.name else None, t.reason.value if t.reason else None)


@rule("TF107")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """One participant declares the same routing tool with two different targets.

    ## What it does
    Reports a `handoff` whose source already declares the same tool (via an
    earlier `handoff`) with another target.

    ## Why is this bad?
    The model sees one tool; calling it can route to only one place, so one
    of the two rules is a lie.

    ## Example
    ```
    handoff triage -> billing via transfer "Money"
    handoff triage -> tech    via transfer "Bugs"
    ```

    ## Use instead
    ```
    handoff triage -> billing via transfer_to_billing "Money"
    handoff triage -> tech    via transfer_to_tech    "Bugs"
    ```
    """
    for block in flow.blocks:
        seen: dict[tuple[str, str], ast.Handoff] = {}
        for h in block.of_type(ast.Handoff):
            key = (h.source.name, h.tool.name)
            first = seen.get(key)
            if first is None:
                seen[key] = h
            elif target_key(first.target) != target_key(h.target):
                yield Finding(h.tool.span, f"`{h.source.name}` already declares tool `{h.tool.name}` with another "
                              f"target (line {first.span.line})", related(first.tool.span, "first declared here"))
