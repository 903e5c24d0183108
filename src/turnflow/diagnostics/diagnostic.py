"""The `Diagnostic` value: what a check found, where, and how bad it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from turnflow.source import Span

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Related:
    """A secondary location that is part of the evidence (e.g. the shadowing rule)."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: str
    message: str
    span: Span
    path: str = "<string>"
    name: str = ""
    related: tuple[Related, ...] = field(default_factory=tuple)
    help: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        """The machine form (1-based lines/columns, end_column exclusive; docs/cli.md): what the
        text output shows, including the rule's name, the help line and the related notes."""
        return {
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "help": self.help,
            "related": [{"line": r.span.line, "column": r.span.column, "end_line": r.span.end_line,
                         "end_column": r.span.end_column, "message": r.message} for r in self.related],
        }


def sort_key(d: Diagnostic) -> tuple[Any, ...]:
    """Deterministic report order: path, line, column, code, message."""
    return (d.path, d.span.line, d.span.column, d.code, d.message)
