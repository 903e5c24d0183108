from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.dsl import ast
import json

# int and float compare equal at run time (1 == 1.0): one kind for the check
_KIND = {"string": "string", "int": "number", "float": "number", "bool": "boolean", "null": "null"}


@rule("TF111")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A `context.KEY OP VALUE` term compares with a value of another type than KEY's initial value.

    ## What it does
    Reports, at the value, each `context.KEY == VALUE` (or `!=`, `<`, `<=`,
    `>`, `>=`; anywhere in the condition, also inside `or`, `not` and
    parentheses) whose VALUE is a string, number or boolean while
    `context KEY = INITIAL` initialises KEY with a value of another of these
    types (`null` on either side is not reported: a key may start or end
    unset; `len(context.KEY)` compares a length and is not checked).

    ## Why is this bad?
    `"true"` is a string and never equals the boolean `true`: unless an agent
    stores a value of the other type, the condition never holds. It is almost
    always a quoting mistake.

    ## Example
    ```
    context approved = false
    reviewer -> terminate when context.approved == "true"
    ```

    ## Use instead
    ```
    context approved = false
    reviewer -> terminate when context.approved == true
    ```
    """
    for block in flow.blocks:
        initial: dict[str, ast.ContextInit] = {}
        for c in block.of_type(ast.ContextInit):
            initial.setdefault(c.key.name, c)
        for st in block.of_type(ast.Rule):
            for t in ast.leaf_terms(st.terms):
                if not isinstance(t, (ast.ContextTerm, ast.CompareTerm)) or t.key.name not in initial:
                    continue
                if isinstance(t, ast.CompareTerm) and t.length:
                    continue  # `len(context.KEY) OP N` compares a length
                init = initial[t.key.name]
                want, got = _KIND[init.value.kind], _KIND[t.value.kind]
                if "null" in (want, got) or want == got:
                    continue
                suggestion = _retyped(t.value, init.value.kind)
                yield Finding(
                    t.value.span,
                    f"`context.{t.key.name}` starts as a {want} ({init.value.raw}) but is compared with a {got} "
                    f"({t.value.raw}): the condition holds only if an agent stores a {got}",
                    related=related(init.span, f"`{t.key.name}` is initialised here"),
                    help=f"did you mean `{suggestion}`?" if suggestion else None)


def _retyped(lit: ast.Literal, kind: str) -> Optional[str]:
    """The literal written as `kind` when its text says so (`"true"` → `true`, `"3"` → `3`)."""

    if lit.kind != "string" or not isinstance(lit.value, str):
        return json.dumps(lit.value) if kind == "string" and lit.kind in ("int", "float", "bool") else None
    text = lit.value.strip()
    if kind == "bool" and text in ("true", "false"):
        return text
    if kind in ("int", "float"):
        try:
            json.loads(text)
        except ValueError:
            return None
        return text if text[:1].isdigit() or text[:1] == "-" else None
    return None
