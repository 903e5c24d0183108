"""The one analysis pipeline: parse → checks (→ profile checks) → suppressions → names → order.

`turnflow.check`, `turnflow.compile`, decompile's verification and every command that reports
diagnostics go through `analyse`, so a flow gets the same diagnostics whichever entry point it
comes in by. Library calls here never touch process-wide state (the garbage collector, caches
on disk): the command-line edge decides that."""

from __future__ import annotations

from collections import Counter
from typing import Optional, Union

from turnflow.compiler.checks import run_checks, run_profile_checks, unanalysed_lines
from turnflow.diagnostics import suppress
from turnflow.diagnostics.codes import PROFILES, lookup
from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
from turnflow.dsl import ast
from turnflow.dsl.parser import parse_source
from turnflow.source import Span
from dataclasses import replace

__all__ = ["PROFILES", "analyse", "check", "findings_changed"]


def analyse(flow: Union[str, ast.FlowFile], path: str = "<string>",
            profile: Optional[str] = None, *,
            compiling: bool = False) -> tuple[Optional[ast.FlowFile], list[Diagnostic]]:
    """Parse (if given text) and check `flow`, plus the checks of `profile` when given; returns
    (the AST, or None when the text does not parse; sorted diagnostics with suppressions applied).
    Never raises on any input text; an unknown profile is a `ValueError` (a caller's bug).
    `compiling=True` (what `compile` uses): an `ignore` comment does not silence an error of
    the checks, so a silenced error still blocks compiling."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    bom = False
    if isinstance(flow, str):
        bom = flow.startswith("\ufeff")
        parsed, diags = parse_source(flow, path)
        if parsed is None:
            return None, sorted(_named(_past_bom(diags) if bom else diags), key=sort_key)
        flow = parsed
    diags = run_checks(flow, path)
    if profile is not None:
        diags += run_profile_checks(flow, path, profile)
    diags = suppress.apply(diags, flow.comments, path, profile, silence_errors=not compiling,
                           unanalysed=unanalysed_lines(flow, diags))
    return flow, sorted(_named(_past_bom(diags) if bom else diags), key=sort_key)


def _past_bom(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Line 1's columns not counting a byte order mark, which editors do not show (the parser reads
    it as a blank to keep offsets): `bom.flow:1:10` is where an editor puts column 10. Offsets
    (`span.start`, `span.end`) stay offsets into the text, BOM included."""

    def shift(span: Span) -> Span:
        if span.line != 1 and span.end_line != 1:
            return span
        return span.at(span.line, span.column - (span.line == 1 and span.column > 1), span.end_line,
                       span.end_column - (span.end_line == 1 and span.end_column > 1), span.start, span.end)

    return [replace(d, span=shift(d.span), related=tuple(replace(r, span=shift(r.span)) for r in d.related))
            for d in diags]


def check(flow: Union[str, ast.FlowFile], path: str = "<string>") -> list[Diagnostic]:
    """Parse (if given text) and analyse a flow; returns sorted diagnostics, suppressions applied.
    Never raises on any input text."""
    return analyse(flow, path)[1]


def _named(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Fill in the kebab-case name of diagnostics built without one (the parser's)."""

    out = []
    for d in diags:
        if not d.name:
            row = lookup(d.code)
            if row is not None:
                d = replace(d, name=row.name)
        out.append(d)
    return out


def findings_changed(before: str, after: str, path: str) -> bool:
    """Whether the text `after` has another set of findings (code and severity, with multiplicity)
    than `before`: the safety net of "fmt never changes the findings" (`turnflow fmt` and the
    language server's formatting leave such a text as it is)."""
    def findings(text: str) -> Counter[tuple[str, str]]:
        return Counter((d.code, d.severity) for d in check(text, path=path))

    return findings(before) != findings(after)
