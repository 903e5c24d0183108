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


def statement(st) -> str:
    if isinstance(st, ast.Participant):
        out = f"participant {st.name.name}"
        if st.description is not None:
            out += f" {string(st.description.value)}"
        if st.role is not None:
            out += f" {st.role}"
        if st.tools is not None:
            out += " tools [" + ", ".join(t.name for t in st.tools) + "]"
        return out
    if isinstance(st, ast.Start):
        return f"start {st.name.name}"
    if isinstance(st, ast.MaxTurns):
        return f"max_turns {st.value.value}"
    if isinstance(st, ast.ContextInit):
        return f"context {st.key.name} = {literal(st.value)}"
    if isinstance(st, ast.Rule):
        out = f"{st.source.name if st.source is not None else '*'} -> {target(st.target)}"
        if st.terms:
            out += " when " + " and ".join(term(t) for t in st.terms)
        if st.priority is not None:
            out += f" priority {st.priority.value}"
        return out
    if isinstance(st, ast.Handoff):
        out = f"handoff {st.source.name} -> {target(st.target)} via {st.tool.name}"
        if st.description is not None:
            out += f" {string(st.description.value)}"
        return out
    if isinstance(st, ast.Otherwise):
        return f"otherwise -> {target(st.target)}"
    if isinstance(st, ast.Ordering):
        return f"ordering {st.value.name}"
    if isinstance(st, ast.Expect):
        return f"expect {st.name.name} {duration(st.duration)} {st.action.name}"
    if isinstance(st, ast.Ttl):
        return f"ttl {duration(st.duration)}"
    raise TypeError(f"not a statement: {type(st).__name__}")  # pragma: no cover


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


def format_flow(flow: ast.FlowFile, source: Optional[str] = None) -> str:
    """Canonical text for `flow`. With `source` (the text it was parsed from),
    blank lines between statements are kept."""
    items: list[_Item] = []
    for block in flow.blocks:
        head_end = (block.title.span.end if block.title is not None else block.name.span.end)
        items.append(_Item(header(block), block.span.start, head_end, 0, "open"))
        for st in block.statements:
            items.append(_Item(statement(st), st.span.start, st.span.end, 1, "stmt"))
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

    lines: list[str] = []
    prev: Optional[_Item] = None
    for it in items:
        if prev is not None:
            blank = False
            if source is not None and prev.end >= 0 and it.start >= 0:
                gap = source[prev.end:it.start]
                blank = gap.count("\n") >= 2
            if prev.kind == "close":
                blank = True  # one blank line after every block
            if prev.kind == "open" or it.kind == "close":
                blank = False  # no blank line just inside the braces
            if blank and lines and lines[-1] != "":
                lines.append("")
        text = INDENT * it.depth + it.text
        if it.trailing:
            text += " " + " ".join(it.trailing)
        lines.append(text)
        prev = it
    return "\n".join(lines) + "\n" if lines else ""


def print_flow(flow: ast.FlowFile) -> str:
    """Canonical text without source-dependent blank lines (for generated ASTs)."""
    return format_flow(flow, None)
