from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast
from turnflow.compiler.checks.target_common import target_findings
from turnflow.frameworks.ag2.writer_groupchat import FRAMEWORK, TABLE


@rule("TF303")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A construct classic AG2 GroupChat cannot express exactly (`turnflow compile --target ag2-groupchat`).

    ## What it does
    Only when compiling with `--target ag2-groupchat` (never in `turnflow check`): reports every
    use of a `.flow` construct the generated GroupChat could not carry out as turnflow's hub
    does, at the construct, saying what GroupChat lacks. The table of docs/targets.md ("AG2
    GroupChat (classic)") lists every construct and what it becomes; the inexact ones are the
    context (`context K = V`, conditions on `context.K`: a classic GroupChat has no shared
    context variables), `expect` and `ttl` (no turn deadlines, no session lifetime), and blocks
    that are not workflows.

    ## Why is this bad?
    The generated chat would run, but not as the flow says: a condition on context could never
    be decided, a deadline would never fire. Nothing is emitted silently different.

    ## Example
    ```
    workflow w {
        participant a
        participant b
        start a
        max_turns 6
        context done = false
        a -> terminate "done" when context.done == true
        a -> b
        b -> a
    }
    ```

    ## Use instead
    Route by what a classic agent's reply carries: its text (`when text contains "DONE"`) or a
    tool it calls (`handoff a -> b via submit`); or compile for a target with shared context
    (`--target langgraph`), or run the flow on turnflow's hub.
    """

    yield from target_findings(flow, TABLE, FRAMEWORK, "ag2-groupchat")
