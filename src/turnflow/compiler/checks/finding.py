"""What a check yields. Code, name and severity come from the registry, so a
check only says where and what."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from turnflow.diagnostics.diagnostic import Related
from turnflow.diagnostics.registry import rule as rule  # re-exported for rule modules
from turnflow.source import Span


@dataclass(frozen=True)
class Finding:
    span: Span
    message: str
    related: tuple[Related, ...] = field(default_factory=tuple)
    help: Optional[str] = None
    code: Optional[str] = None  # set when one check function reports under several codes


def related(span: Span, message: str) -> tuple[Related, ...]:
    return (Related(span=span, message=message),)
