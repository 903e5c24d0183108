"""The rule registry: the code table (`diagnostics/codes.py`) joined with each code's
documentation and, for checks, its function.

Check modules attach their function with `@rule(CODE)`; the code must be in the table, which
alone decides name, severity, stage and profile. Documentation is read on demand by importing
the code's `home` module (`turnflow rule`, docs/rules.md, SARIF); names and severities never
need that. This module imports no stage statically."""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from turnflow.diagnostics.codes import BY_CODE, CHECK_STAGES, CODES, Code, Severity, Stage, lookup

CODE_RE = re.compile(r"^TF[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: Severity
    stage: Stage
    profile: Optional[str]
    summary: str
    doc: str
    check: Optional[Callable[..., Any]] = None  # None: emitted by another stage (reader, parser, migrate, suppress)


_CHECKS: dict[str, Callable[..., Any]] = {}


def rule(code: str) -> Callable[..., Any]:
    """Decorator: attach a check function (whose docstring documents the rule) to a table code."""
    row = BY_CODE.get(code)
    if row is None or row.stage not in CHECK_STAGES:
        raise ValueError(f"{code} is not a check code in turnflow.diagnostics.codes")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if code in _CHECKS and _CHECKS[code] is not fn:
            raise ValueError(f"rule code {code} has two check functions")
        _CHECKS[code] = fn
        return fn

    return deco


def check_function(code: str) -> Optional[Callable[..., Any]]:
    """The check of a check code (importing its home module registers it)."""
    row = BY_CODE[code]
    if row.stage in CHECK_STAGES and code not in _CHECKS:
        importlib.import_module(row.home)
    return _CHECKS.get(code)


def _doc(row: Code) -> str:
    if row.stage in CHECK_STAGES:
        fn = check_function(row.code)
        text = (fn.__doc__ if fn is not None else None) or ""
    else:
        text = getattr(importlib.import_module(row.home), "DOCS", {}).get(row.code, "")
    return inspect.cleandoc(text)


def _info(row: Code) -> RuleInfo:
    doc = _doc(row)
    return RuleInfo(code=row.code, name=row.name, severity=row.severity, stage=row.stage, profile=row.profile,
                    summary=doc.splitlines()[0] if doc else "", doc=doc,
                    check=_CHECKS.get(row.code) if row.stage in CHECK_STAGES else None)


def get_rule(code: str) -> Optional[RuleInfo]:
    """Everything about one code (case-insensitive), documentation included; None if unknown."""
    row = lookup(code)
    return _info(row) if row is not None else None


def all_rules() -> list[RuleInfo]:
    return [_info(row) for row in sorted(CODES, key=lambda r: r.code)]


def checks(stage: str, profile: Optional[str] = None) -> list[tuple[Code, Callable[..., Any]]]:
    """The check functions of one stage (and profile), in code order."""
    out = []
    for row in sorted(CODES, key=lambda r: r.code):
        if row.stage == stage and row.profile == profile:
            fn = check_function(row.code)
            if fn is not None:
                out.append((row, fn))
    return out
