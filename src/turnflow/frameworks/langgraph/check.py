from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast
from turnflow.compiler.checks.target_common import target_findings
from turnflow.frameworks.langgraph.writer import FRAMEWORK, TABLE


@rule("TF302")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A construct LangGraph cannot express exactly (`turnflow compile --target langgraph`).

    ## What it does
    Only when compiling with `--target langgraph` (never in `turnflow check`): reports every
    use of a `.flow` construct that the generated LangGraph module could not carry out as
    turnflow's hub does, at the construct, saying what LangGraph lacks. The table of
    docs/targets.md ("LangGraph") lists every construct and what it becomes; the inexact ones
    are `expect` and `ttl` (LangGraph has no turn deadlines nor session lifetime), blocks that
    are not workflows, and a participant named `__start__` or `__end__` (node names LangGraph
    reserves).

    ## Why is this bad?
    The generated graph would run, but not as the flow says: a deadline would never fire, a
    session would never expire. Nothing is emitted silently different.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        start a
        a -> b
        expect turn_within 5m auto_close
    }
    ```

    ## Use instead
    Drop the `expect` / `ttl` for this target (enforce time limits in the code that invokes the
    graph), run the flow on turnflow's hub (`turnflow run`), or silence the finding knowingly
    with `# turnflow: ignore[TF302]` on the statement.
    """

    yield from target_findings(flow, TABLE, FRAMEWORK, "langgraph")
