from typing import Iterator

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.dsl import ast
from turnflow.compiler.emit import knobs
from turnflow.frameworks.ag2.writer_builtin import builtin_transitions
from turnflow.compiler.lower import Lowering


@rule("TF301")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A rule compiles to an extension condition that AG2 does not ship (profile `ag2-builtin`).

    To load such knobs on stock AG2 1.2.1, call `turnflow.interop.ag2.register_extensions()` in the AG2 process first.

    ## What it does
    Only with `turnflow compile --profile ag2-builtin` (never in `turnflow
    check`): reports every workflow rule or handoff whose compiled condition
    uses `all_of`, `any_of`, `not`, `text_contains` or `context_compare`, and
    every rule, handoff or `otherwise` whose target is `previous` (the
    extension target `previous_speaker`). A rule needs `all_of` when it
    combines a source participant with a term (unless the term is `tool t`
    and the source is the only participant declaring `t`), or has two or more
    terms; `any_of` for `or`, `not` for `not`; `text_contains` for a
    `text contains` term; `context_compare` for a comparison other than
    `context.KEY == LITERAL` and for every `len(context.KEY)` comparison.
    A block the profile can emit in built-in conditions alone is not reported:
    when one speaker only has guarded rules, reordered transitions express
    them exactly (docs/compiler.md, "Built-in form").

    ## Why is this bad?
    The knobs are meant to load on AG2's own hub without turnflow installed
    there. AG2 1.2.1's `TransitionGraph.loads` refuses an unregistered
    condition name, and its hub refuses to open a store that holds one.

    ## Example
    ```
    reviewer -> coder when context.status == "rejected"
    writer   -> editor when text contains "DRAFT"
    *        -> critic when context.attempts > 3
    user     -> previous
    ```

    ## Use instead
    Express the test with one built-in condition, e.g. a routing tool the
    source alone declares:
    ```
    handoff reviewer -> coder via request_changes "The change needs more work"
    ```
    or keep the rule and call `turnflow.interop.ag2.register_extensions()` in
    the AG2 process before loading the knobs (and compile without the profile).
    """

    for block in flow.blocks:
        if block.kind != "workflow" or builtin_transitions(block) is not None:
            continue  # (the profile then emits the built-in form: frameworks/ag2/writer_builtin.py)
        owners = knobs.tool_owners(block)
        lowering = Lowering()
        lowered: list[tuple[ast.Statement, list[str], knobs.Data]] = [
            (r.stmt, knobs.extensions_used(knobs.emitted_when(r, owners)), knobs.data(r.then))
            for r in knobs.file_order_rules(block, lowering)]
        lowered += [(o, [], knobs.target(o.target, lowering)) for o in block.of_type(ast.Otherwise)]
        for st, conds, then in lowered:
            parts = []
            if conds:
                names = [f"`{n}`" for n in conds]
                parts.append(f"the extension condition{'s' if len(conds) > 1 else ''} "
                             + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]))
            if knobs.is_extension_target(then):
                parts.append(f"the extension target `{then['name']}`")
            if parts:
                word = {ast.Handoff: "handoff", ast.Otherwise: "`otherwise`"}.get(type(st), "rule")
                yield Finding(st.span, f"this {word} compiles to {' and '.join(parts)}, which AG2 1.2.1 does not "
                              "ship (profile `ag2-builtin`): call `turnflow.interop.ag2.register_extensions()` in "
                              "the AG2 process to load it there",
                              help="compile without --profile and call turnflow.interop.ag2.register_extensions() "
                                   "in the AG2 process, or use built-in conditions and targets")


