from typing import Iterator, Optional

from turnflow.compiler.checks.finding import Finding, rule
from turnflow.compiler.checks.suggest import Suggester
from turnflow.dsl import ast


def _did_you_mean(name: str, suggest: Suggester) -> Optional[str]:
    close = suggest(name)
    return f"did you mean `{close}`?" if close else None


@rule("TF102")
def check(flow: ast.FlowFile) -> Iterator[Finding]:
    """A rule, `start`, handoff or `otherwise` names a participant the block does not declare.

    ## What it does
    Checks every participant name used as a rule source or target, as the
    `start` speaker, as a handoff's source or target and as the `otherwise`
    target against the block's `participant` declarations, and suggests the
    closest declared name.

    ## Why is this bad?
    At run time the transition would route to nobody: AG2 stalls the session,
    turnflow's hub rejects it.

    ## Example
    ```
    participant writer
    participant critic
    start writter
    ```

    ## Use instead
    ```
    start writer
    ```
    """
    for block in flow.blocks:
        declared = [p.name.name for p in block.participants]
        known = set(declared)
        suggest = Suggester(declared)  # indexed once per block; bounded work per query

        def finding(ident: ast.Ident, role: str) -> Finding:
            return Finding(ident.span, f"{role} `{ident.name}` is not a participant of block `{block.name.name}`",
                           help=_did_you_mean(ident.name, suggest))

        for st in block.statements:
            if type(st) is ast.Rule or type(st) is ast.Handoff:
                source, target = st.source, st.target
                if source is not None and source.name not in known:
                    yield finding(source, "rule source" if type(st) is ast.Rule else "handoff source")
                if target.name is not None and target.name.name not in known and target.kind == "participant":
                    yield finding(target.name, "target")
            elif type(st) is ast.Start:
                if st.name.name not in known:
                    yield finding(st.name, "start speaker")
            elif type(st) is ast.Otherwise:
                target = st.target
                if target.name is not None and target.name.name not in known and target.kind == "participant":
                    yield finding(target.name, "`otherwise` target")
