"""The user-facing functions: plain functions over plain data."""

from __future__ import annotations

from typing import Union

from turnflow.compiler.checks import run_checks
from turnflow.diagnostics import suppress
from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
from turnflow.diagnostics.registry import get_rule
from turnflow.dsl import ast
from turnflow.dsl.parser import ParseError, gc_paused, parse, parse_source

__all__ = ["parse", "check", "ParseError"]


def check(flow: Union[str, ast.FlowFile], path: str = "<string>") -> list[Diagnostic]:
    """Parse (if given text) and analyse a flow; returns sorted diagnostics, suppressions applied.
    Never raises on any input text."""
    with gc_paused():
        if isinstance(flow, str):
            parsed, diags = parse_source(flow, path)
            if parsed is None:
                return _named(diags)
            flow = parsed
        diags = run_checks(flow, path)
    diags = suppress.apply(diags, suppress.suppressions(flow.comments))
    return sorted(_named(diags), key=sort_key)


def _named(diags: list[Diagnostic]) -> list[Diagnostic]:
    from dataclasses import replace

    out = []
    for d in diags:
        if not d.name:
            info = get_rule(d.code)
            if info is not None:
                d = replace(d, name=info.name)
        out.append(d)
    return out
