from typing import Iterator

from turnflow.compiler.checks.finding import Finding, related, rule
from turnflow.dsl import ast

_ONCE = {ast.Start: "start", ast.MaxTurns: "max_turns", ast.Otherwise: "otherwise",
         ast.Ttl: "ttl", ast.Ordering: "ordering"}


@rule("TF104")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A once-only statement is repeated.

    ## What it does
    Reports the second and later `start`, `max_turns`, `otherwise`, `ttl` or
    `ordering` in a block, a `context` key initialised twice in a block, and a
    block name used twice in a file — each pointing back at the first.

    ## Why is this bad?
    Only one value can be compiled; which one wins would be an accident of
    file order.

    ## Example
    ```
    start triage
    start billing
    ```

    ## Use instead
    ```
    start triage
    ```
    """
    blocks: dict[str, ast.Block] = {}
    for block in flow.blocks:
        first_block = blocks.get(block.name.name)
        if first_block is not None:
            yield Finding(block.name.span, f"block name `{block.name.name}` is already used in this file "
                          f"(line {first_block.name.span.line})", related(first_block.name.span, "first used here"))
        else:
            blocks[block.name.name] = block
        seen: dict[str, ast.Node] = {}
        keys: dict[str, ast.ContextInit] = {}
        for st in block.statements:
            word = _ONCE.get(type(st))
            if word is not None:
                if word in seen:
                    yield Finding(st.span, f"`{word}` is already given in block `{block.name.name}` "
                                  f"(line {seen[word].span.line})", related(seen[word].span, "first given here"))
                else:
                    seen[word] = st
            elif isinstance(st, ast.ContextInit):
                first = keys.get(st.key.name)
                if first is not None:
                    yield Finding(st.key.span, f"context key `{st.key.name}` is already initialised "
                                  f"(line {first.span.line})", related(first.key.span, "first initialised here"))
                else:
                    keys[st.key.name] = st
