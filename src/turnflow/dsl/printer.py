"""AST → canonical `.flow` text.

Canonical form: blocks separated by one blank line; one statement per line,
indented four spaces; single spaces between tokens; strings as JSON; numbers
as JSON numbers. Statement order is kept (it is semantic), single blank lines
between statements are kept (runs of blank lines collapse to one), and every
comment is kept: an own-line comment stays above what follows it, a trailing
comment stays at the end of its line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from turnflow.dsl import ast

INDENT = "    "


def string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def literal(lit: ast.Literal) -> str:
    if lit.kind == "string":
        return string(lit.value)
    if lit.kind == "null":
        return "null"
    if lit.kind == "bool":
        return "true" if lit.value else "false"
    return json.dumps(lit.value)


def target(t: ast.Target) -> str:
    if t.kind == "participant":
        return t.name.name
    if t.kind == "terminate":
        return "terminate" + (f" {string(t.reason.value)}" if t.reason is not None else "")
    return t.kind


def term(t) -> str:
    if isinstance(t, ast.ToolTerm):
        return f"tool {t.tool.name}"
    if isinstance(t, ast.ContextTerm):
        return f"context.{t.key.name} == {literal(t.value)}"
    return f"text contains {string(t.text.value)}"


def duration(d: ast.Duration) -> str:
    return f"{d.amount}{d.unit}"


def statement_parts(st) -> list[str]:
    """A statement as columns; `format_flow` aligns the columns of runs of
    consecutive statements of the same type."""
    if isinstance(st, ast.Participant):
        parts = [f"participant {st.name.name}"]
        if st.description is not None:
            parts.append(string(st.description.value))
        rest = []
        if st.role is not None:
            rest.append(st.role)
        if st.tools is not None:
            rest.append("tools [" + ", ".join(t.name for t in st.tools) + "]")
        if rest:
            parts.append(" ".join(rest))
        return parts
    if isinstance(st, ast.Start):
        return [f"start {st.name.name}"]
    if isinstance(st, ast.MaxTurns):
        return [f"max_turns {st.value.value}"]
    if isinstance(st, ast.ContextInit):
        return [f"context {st.key.name}", f"= {literal(st.value)}"]
    if isinstance(st, ast.Rule):
        out = f"-> {target(st.target)}"
        if st.terms:
            out += " when " + " and ".join(term(t) for t in st.terms)
        if st.priority is not None:
            out += f" priority {st.priority.value}"
        return [st.source.name if st.source is not None else "*", out]
    if isinstance(st, ast.Handoff):
        parts = [f"handoff {st.source.name}", f"-> {target(st.target)}", f"via {st.tool.name}"]
        if st.description is not None:
            parts.append(string(st.description.value))
        return parts
    if isinstance(st, ast.Otherwise):
        return [f"otherwise -> {target(st.target)}"]
    if isinstance(st, ast.Ordering):
        return [f"ordering {st.value.name}"]
    if isinstance(st, ast.Expect):
        return [f"expect {st.name.name}", duration(st.duration), st.action.name]
    if isinstance(st, ast.Ttl):
        return [f"ttl {duration(st.duration)}"]
    raise TypeError(f"not a statement: {type(st).__name__}")  # pragma: no cover


def statement(st) -> str:
    return " ".join(statement_parts(st))


def align(rows: list[list[str]]) -> list[str]:
    """Pad every column but a row's last so that the columns line up."""
    widths: dict[int, int] = {}
    for parts in rows:
        for i, part in enumerate(parts[:-1]):
            widths[i] = max(widths.get(i, 0), len(part))
    return [" ".join(part.ljust(widths[i]) if i < len(parts) - 1 else part for i, part in enumerate(parts))
            for parts in rows]


def header(block: ast.Block) -> str:
    out = f"{block.kind} {block.name.name}"
    if block.title is not None:
        out += f" {string(block.title.value)}"
    return out + " {"


# --------------------------------------------------------------------------
#  Layout with comments
# --------------------------------------------------------------------------
@dataclass
class _Item:
    text: str
    start: int  # source offsets (for comments and blank lines); -1 when synthetic
    end: int
    depth: int
    kind: str  # "open", "stmt", "close", "comment"
    trailing: list[str] = field(default_factory=list)
    parts: Optional[list[str]] = None
    group: str = ""


def format_flow(flow: ast.FlowFile, source: Optional[str] = None) -> str:
    """Canonical text for `flow`. With `source` (the text it was parsed from),
    blank lines between statements are kept."""
    items: list[_Item] = []
    for block in flow.blocks:
        head_end = (block.title.span.end if block.title is not None else block.name.span.end)
        items.append(_Item(header(block), block.span.start, head_end, 0, "open"))
        for st in block.statements:
            parts = statement_parts(st)
            items.append(_Item(" ".join(parts), st.span.start, st.span.end, 1, "stmt", parts=parts,
                               group=type(st).__name__))
        items.append(_Item("}", block.close_span.start, block.close_span.end, 0, "close"))

    # place comments: own-line ones lead the next item, others trail the previous one
    import bisect

    ends = [it.end for it in items]
    starts = [it.start for it in items]
    placed: list[_Item] = []
    for c in sorted(flow.comments, key=lambda c: c.span.start):
        if not c.own_line:
            i = bisect.bisect_right(ends, c.span.start) - 1
            if i >= 0:
                items[i].trailing.append(c.text)
                continue
        j = bisect.bisect_left(starts, c.span.end)
        depth = 1 if j < len(items) and items[j].kind in ("stmt", "close") else 0
        placed.append(_Item(c.text, c.span.start, c.span.end, depth, "comment"))
    items = sorted(items + placed, key=lambda it: (it.start, 0 if it.kind == "comment" else 1))

    blank_before = []
    prev = None
    for it in items:
        blank = False
        if prev is not None:
            if source is not None and prev.end >= 0 and it.start >= 0:
                blank = source[prev.end:it.start].count("\n") >= 2
            if prev.kind == "close":
                blank = True  # one blank line after every block
            if prev.kind == "open" or it.kind == "close":
                blank = False  # no blank line just inside the braces
        blank_before.append(blank)
        prev = it

    # align runs of consecutive same-type statements (no blank line or comment between)
    run: list[_Item] = []

    def flush() -> None:
        if len(run) > 1:
            for item, text in zip(run, align([r.parts for r in run])):
                item.text = text
        run.clear()

    for it, blank in zip(items, blank_before):
        if it.kind == "stmt" and run and not blank and run[-1].group == it.group and not run[-1].trailing:
            run.append(it)
        else:
            flush()
            if it.kind == "stmt":
                run.append(it)
    flush()

    lines: list[str] = []
    for it, blank in zip(items, blank_before):
        if blank and lines and lines[-1] != "":
            lines.append("")
        text = INDENT * it.depth + it.text
        if it.trailing:
            text += " " + " ".join(it.trailing)
        lines.append(text)
    return "\n".join(lines) + "\n" if lines else ""


def print_flow(flow: ast.FlowFile) -> str:
    """Canonical text without source-dependent blank lines (for generated ASTs)."""
    return format_flow(flow, None)
