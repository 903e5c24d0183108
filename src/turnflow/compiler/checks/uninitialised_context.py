from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.suggest import Suggester
from turnflow.compiler.speaker_graph import SpeakerGraph
from turnflow.dsl import ast


@rule("TF208")
def check(block: ast.Block, graph: SpeakerGraph) -> Iterator[Finding]:
    """A `context.KEY` term reads a key that is never initialised with `context`.

    ## What it does
    Reports, at the term, each `context.KEY == VALUE` condition, and each
    comparison (`context.KEY > 3`, `len(context.KEY) > 0`, also inside `or`,
    `not` and parentheses), whose KEY has no `context KEY = LITERAL`
    statement in the block.

    ## Why is this bad?
    A missing key reads as `null`; a misspelt key silently never matches, and
    a reader cannot tell which context the flow expects.

    ## Example
    ```
    context resolved = false
    user -> terminate when context.resovled == true
    ```

    ## Use instead
    ```
    context resolved = false
    user -> terminate when context.resolved == true
    ```
    """

    keys = {c.key.name for c in block.of_type(ast.ContextInit)}
    suggest = Suggester(sorted(keys))  # indexed once per block: bounded work per term
    for st in block.of_type(ast.Rule):
        for t in ast.leaf_terms(st.terms):
            if isinstance(t, (ast.ContextTerm, ast.CompareTerm)) and t.key.name not in keys:
                yield Finding(t.span, f"`context.{t.key.name}` is never initialised with `context {t.key.name} = "
                              "...`; it reads as null until an agent sets it",
                              help=_suggest(t.key.name, suggest)
                              or f"add `context {t.key.name} = <initial value>` or fix the key")


def _suggest(name: str, suggest: Suggester) -> Optional[str]:
    close = suggest(name)
    return f"did you mean `{close}`?" if close else None
