"""The rule catalogue: one module per check (its `check` function's docstring is the rule's
documentation). Which code a check reports, its name, severity, stage and profile are rows of
`turnflow.diagnostics.codes`; this package only imports the check modules and runs them (the
target checks and TF301 live beside their writers, `turnflow/frameworks/<name>/check*.py`).

File checks (stage "file") take the whole `FlowFile` and yield `Finding`s. Graph checks
(stage "graph") take one workflow block and its speaker graph; they run only on blocks that
have no errors (docs/analysis.md, precedence). Profile checks (stage "profile") run only when
compiling with their profile (`run_profile_checks`), never in `turnflow check`.
"""

from __future__ import annotations

from turnflow.compiler.checks import (  # noqa: F401  (each module attaches its check function)
    cap_never_binds,
    cap_too_small,
    conflicting_handoff,
    context_type,
    duplicate_participant,
    ends_only_by_cap,
    impossible_condition,
    initiator_never_speaks,
    initiator_undeclared,
    invalid_value,
    missing_start,
    never_ends,
    participant_roles,
    repeated_statement,
    shadowed_rule,
    statement_not_allowed,
    trap,
    unbounded_cycle,
    undeclared_participant,
    undeclared_tool,
    uninitialised_context,
    unreachable_participant,
    unused_otherwise,
)
from turnflow.frameworks.ag2 import check_builtin, check_groupchat  # noqa: F401  (the framework's TF3xx checks)
from turnflow.frameworks.autogen import check as autogen_check, check_json  # noqa: F401  (the framework's TF3xx checks)
from turnflow.frameworks.langgraph import check as langgraph_check  # noqa: F401  (the framework's TF3xx checks)
from typing import Sequence

from turnflow.compiler.checks.finding import Finding
from turnflow.diagnostics.codes import BY_CODE, Code, Stage, diagnostic
from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.diagnostics.registry import checks
from turnflow.dsl import ast
import bisect
from turnflow.compiler.speaker_graph import build_graph


def _to_diagnostic(row: Code, f: Finding, path: str) -> Diagnostic:
    return diagnostic(f.code or row.code, f.message, f.span, path, related=f.related, help=f.help)


def _inside(block: ast.Block, d: Diagnostic) -> bool:
    return block.span.start <= d.span.start < block.span.end


def _blocks_with_errors(blocks: Sequence[ast.Block], found: list[Diagnostic]) -> set[int]:
    """The indexes of `blocks` (not overlapping) that hold an error of `found`."""

    order = sorted(range(len(blocks)), key=lambda k: blocks[k].span.start)
    starts = [blocks[k].span.start for k in order]
    out: set[int] = set()
    for d in found:
        if d.severity != "error":
            continue
        j = bisect.bisect_right(starts, d.span.start) - 1
        if j >= 0 and _inside(blocks[order[j]], d):
            out.add(order[j])
    return out


def run_checks(flow: ast.FlowFile, path: str = "<string>") -> list[Diagnostic]:
    """Every file and graph check over a parsed file (unsorted, unsuppressed)."""
    out: list[Diagnostic] = []
    for row, fn in checks("file"):
        out.extend(_to_diagnostic(row, f, path) for f in fn(flow))
    graph_checks = checks("graph")
    if graph_checks:
        # the blocks holding a file-check error, found once (bisect over the block starts): a scan
        # of every finding so far for every block made checks quadratic in the number of blocks
        blocked = _blocks_with_errors(flow.blocks, out)
        for i, block in enumerate(flow.blocks):
            if block.kind != "workflow" or i in blocked:
                continue
            graph = build_graph(block)
            for row, fn in graph_checks:
                out.extend(_to_diagnostic(row, f, path) for f in fn(block, graph))
    return out


def unanalysed_lines(flow: ast.FlowFile, found: Sequence[Diagnostic]) -> list[tuple[int, int]]:
    """The first and last lines of the workflow blocks whose graph checks did not run (`run_checks`:
    a file-check error in the block), from what `run_checks` returned."""
    file_errors = [d for d in found if (row := BY_CODE.get(d.code)) is not None and row.stage == Stage.FILE]
    if not file_errors:
        return []
    blocked = _blocks_with_errors(flow.blocks, file_errors)
    return [(b.span.line, b.span.end_line) for i, b in enumerate(flow.blocks) if i in blocked and b.kind == "workflow"]


def run_profile_checks(flow: ast.FlowFile, path: str, profile: str) -> list[Diagnostic]:
    """The checks of one compile profile (e.g. TF301 for "ag2-builtin"), unsorted."""
    out: list[Diagnostic] = []
    for row, fn in checks("profile", profile):
        out.extend(_to_diagnostic(row, f, path) for f in fn(flow))
    return out
