"""The rule registry: every diagnostic code has a stable code, a kebab-case
name, a default severity and a docstring (What it does / Why is this bad? /
Example / Use instead). Rule modules register themselves on import; the
package root imports the catalogue (`turnflow.compiler.checks`), so every
rule is registered once anything from `turnflow` is imported. This module
imports nothing from later stages."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

CODE_RE = re.compile(r"^TF[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    severity: str
    summary: str
    doc: str
    check: Optional[Callable] = None  # None: emitted by another stage (parser, analysis, profile)


_RULES: dict[str, RuleInfo] = {}


def register(code: str, name: str, severity: str, doc: str, check: Optional[Callable] = None) -> RuleInfo:
    if code in _RULES and _RULES[code].name != name:
        raise ValueError(f"rule code {code} registered twice ({_RULES[code].name}, {name})")
    doc = inspect.cleandoc(doc)
    summary = doc.splitlines()[0] if doc else ""
    info = RuleInfo(code=code, name=name, severity=severity, summary=summary, doc=doc, check=check)
    _RULES[code] = info
    return info


def rule(code: str, name: str, severity: str) -> Callable:
    """Decorator: register a check function whose docstring is the rule's documentation."""

    def deco(fn: Callable) -> Callable:
        register(code, name, severity, fn.__doc__ or "", fn)
        fn.rule_code = code  # type: ignore[attr-defined]
        return fn

    return deco


def get_rule(code: str) -> Optional[RuleInfo]:
    return _RULES.get(code.upper())


def all_rules() -> list[RuleInfo]:
    return [_RULES[c] for c in sorted(_RULES)]


def rules_with_checks() -> Iterable[RuleInfo]:
    return [r for r in all_rules() if r.check is not None]
