"""What the target checks (TF302, TF303, TF304: each framework's `check*.py` under
`turnflow/frameworks/`) share: `target_findings`, the findings of one writer's construct `TABLE`."""

from __future__ import annotations

from typing import Iterator

from turnflow.compiler.checks.finding import Finding
from turnflow.compiler.emit.constructs import BY_KEY, refusals
from turnflow.dsl import ast


def target_findings(flow: ast.FlowFile, table: dict[str, tuple[str, bool]], framework: str,
                    target: str) -> Iterator[Finding]:
    """The findings of one target's table over every block (what each target check yields)."""

    for block in flow.blocks:
        for key, span, becomes in refusals(block, table):
            yield Finding(span, f"{BY_KEY[key].written} cannot be compiled to {framework} exactly: {becomes} "
                          f"(--target {target})",
                          help=f"see docs/targets.md ({framework}); remove the construct for this target, "
                               "or run the flow on turnflow's hub")
