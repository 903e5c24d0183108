from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast
from turnflow.compiler.checks.target_common import target_findings
from turnflow.frameworks.autogen.writer_python import FRAMEWORK, TABLE


@rule("TF304")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A construct AutoGen AgentChat cannot express exactly (`turnflow compile --target autogen`).

    ## What it does
    Only when compiling with `--target autogen` (never in `turnflow check`): reports every use
    of a `.flow` construct the generated `SelectorGroupChat` could not carry out as turnflow's
    hub does, at the construct, saying what AgentChat lacks. The table of docs/targets.md
    ("AutoGen AgentChat") lists every construct and what it becomes; the inexact ones are the
    context (`context K = V`, conditions on `context.K`: AgentChat teams share no context
    variables), `expect` and `ttl` (no turn deadlines, no session lifetime), and blocks that
    are not workflows.

    ## Why is this bad?
    The generated team would run, but not as the flow says: a condition on context could never
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
    Route by what an AgentChat turn carries: its text (`when text contains "DONE"`) or a tool
    it calls (`handoff a -> b via submit`); or compile for a target with shared context
    (`--target langgraph`), or run the flow on turnflow's hub.
    """

    yield from target_findings(flow, TABLE, FRAMEWORK, "autogen")
