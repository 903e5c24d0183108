"""Jupyter notebooks (`.ipynb`, as AG2's and AutoGen's examples are published): the code
cells are read as one Python source, each line mapped back to its place in the notebook's
JSON so that diagnostics point into the file the user gave, and (`relocate`) to its cell and
line within the cell, as Jupyter and ruff number them (`nb.ipynb:cell 3:5:24`). IPython
magics (`%pip ...`, `!pip ...`) become comments; top-level `await` is accepted. Nothing is
executed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, NamedTuple, Optional, Sequence

from turnflow.diagnostics.diagnostic import CellPos, Diagnostic
from turnflow.source import SourceText


class Cells(NamedTuple):
    """A notebook's code cells as one Python source."""

    code: str
    where: list[tuple[int, int]]  # per Python line: the JSON file's line and column of its first character
    lines: list[Optional[tuple[int, int, str]]]  # per Python line: (cell, line in the cell, its text); None between cells


def is_notebook(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("cells"), list) and "nbformat" in data


def _line_starts(text: str, quote: int) -> list[int]:
    """The offsets in `text` where each line of the JSON string opening at `quote` starts: after
    the quote and after every escaped newline (`\\n`, `\\u000a`)."""
    starts = [quote + 1]
    i, n = quote + 1, len(text)
    while i < n and text[i] != '"':
        if text[i] != "\\":
            i += 1
            continue
        esc = text[i + 1:i + 2]
        if esc == "u":
            newline = text[i + 2:i + 6].lower() == "000a"
            i += 6
        else:
            newline = esc == "n"
            i += 2
        if newline:
            starts.append(i)
    return starts


def _cell_lines(text: str, cell: dict, positions: Any, src: SourceText) -> list[tuple[str, tuple[int, int]]]:
    """A code cell's lines, each with the JSON line and column where it starts."""
    source = cell.get("source")
    parts = source if isinstance(source, list) else [source] if isinstance(source, str) else []
    out: list[tuple[str, tuple[int, int]]] = []
    continues = False  # the previous part did not end its line
    for k, part in enumerate(parts):
        if not isinstance(part, str):
            continue
        at = positions.of(source, f"#{k}") if isinstance(source, list) else positions.of(cell, "source")
        starts = _line_starts(text, src.offset(at.line, at.column))
        pieces = part.split("\n")
        if part.endswith("\n"):
            pieces.pop()
        for j, line in enumerate(pieces):
            if j == 0 and continues and out:
                out[-1] = (out[-1][0] + line, out[-1][1])  # columns past the join are approximate
            else:
                out.append((line, src.position(starts[min(j, len(starts) - 1)])))
        continues = not part.endswith("\n")
    return out


def extract(text: str, path: str, src: SourceText) -> Optional[Cells]:
    """The code cells as Python, each line's place in the JSON file and in its cell; None when
    `text` is not a notebook."""
    from turnflow.migrate.jsonpos import load

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not is_notebook(data):
        return None
    data, positions = load(text, path, src)
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    cells: list[Optional[tuple[int, int, str]]] = []
    for number, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        for k, (line, at) in enumerate(_cell_lines(text, cell, positions, src), 1):
            cells.append((number, k, line))
            stripped = line.lstrip()
            if stripped.startswith(("%", "!")):  # IPython magics and shell escapes
                line = line[: len(line) - len(stripped)] + "# " + stripped
            lines.append(line)
            where.append(at)
        lines.append("")  # a blank line between cells
        where.append(where[-1] if where else (1, 1))
        cells.append(None)
    return Cells("\n".join(lines) + "\n", where, cells)


class Locator:
    """JSON positions of a notebook's code → cell positions; the inverse of the mapping `extract`
    gives `pyread` (JSON column = line start + Python column - 1)."""

    def __init__(self, cells: Cells):
        self.cells = cells
        self.index: dict[int, list[tuple[int, int]]] = {}  # JSON line -> (JSON column of a Python line's start, its index)
        for i, (at, info) in enumerate(zip(cells.where, cells.lines)):
            if info is not None:
                self.index.setdefault(at[0], []).append((at[1], i))

    def find(self, line: int, column: int) -> Optional[tuple[int, tuple[int, int, str]]]:
        """(the Python column, (cell, line in the cell, its text)) of a JSON position on a code cell's line."""
        best = max(((c, i) for c, i in self.index.get(line, ()) if c <= column), default=None)
        if best is None:
            return None
        info = self.cells.lines[best[1]]
        return (column - best[0] + 1, info) if info is not None else None

    def where(self, line: int, column: int) -> Optional[str]:
        """`cell 3:5:24` (as the diagnostics print it) for a JSON position, or None."""
        found = self.find(line, column)
        return f"cell {found[1][0]}:{found[1][1]}:{found[0]}" if found is not None else None

    def python_line(self, lineno: int) -> Optional[str]:
        """`cell 3, line 5` for a line of the Python the code cells make, or None."""
        info = self.cells.lines[lineno - 1] if 1 <= lineno <= len(self.cells.lines) else None
        return f"cell {info[0]}, line {info[1]}" if info is not None else None


def relocate(diags: Sequence[Diagnostic], cells: Cells, path: str) -> list[Diagnostic]:
    """`diags` with the cell position of each one on a code cell's line (`Diagnostic.cell`)."""
    find = Locator(cells).find
    out = []
    for d in diags:
        start = find(d.span.line, d.span.column) if d.path == path and d.cell is None else None
        if start is None:
            out.append(d)
            continue
        column, (cell, line, text) = start
        end = find(d.span.end_line, d.span.end_column)
        if end is not None and end[1][0] == cell and (end[1][1], end[0]) > (line, column):
            end_line, end_column = end[1][1], end[0]
        else:
            end_line, end_column = line, column + 1
        out.append(replace(d, cell=CellPos(cell, line, column, end_line, end_column, text)))
    return out
