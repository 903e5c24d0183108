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
class CellPos:
    """Where a diagnostic on a Jupyter notebook is, as Jupyter and ruff show it: the cell (1-based,
    counting every cell of the notebook, Markdown ones too), the line and column within the cell's
    source (1-based, `end_column` exclusive), and the text of that line (for the caret display).
    The diagnostic's `span` stays the position in the `.ipynb` file itself."""

    cell: int
    line: int
    column: int
    end_line: int
    end_column: int
    text: str = ""

    def where(self) -> str:
        """`cell 3:5:24`: what follows `path:` in text output (ruff's form)."""
        return f"cell {self.cell}:{self.line}:{self.column}"

    def to_json(self) -> dict[str, int]:
        return {"cell": self.cell, "line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column}


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
    cell: Optional[CellPos] = None  # in a Jupyter notebook: the cell and the line in it

    def where(self) -> str:
        """`line:column`, or `cell N:line:column` in a notebook: what follows `path:` in text output."""
        return self.cell.where() if self.cell is not None else f"{self.span.line}:{self.span.column}"

    def to_json(self) -> dict[str, Any]:
        """The machine form (1-based lines/columns, end_column exclusive; docs/cli.md): what the
        text output shows, including the rule's name, the help line and the related notes; in a
        notebook also `cell` (the cell and the position in it; line/column stay the file's)."""
        out: dict[str, Any] = {
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
        if self.cell is not None:
            out["cell"] = self.cell.to_json()
        return out


def sort_key(d: Diagnostic) -> tuple[Any, ...]:
    """Deterministic report order: path, line, column, code, message."""
    return (d.path, d.span.line, d.span.column, d.code, d.message)
