"""AST → canonical `.flow` text.

Canonical form: blocks separated by one blank line; one statement per line,
indented four spaces; single spaces between tokens; strings as JSON; numbers
as JSON numbers. Statement order is kept (it is semantic), single blank lines
between statements are kept (runs of blank lines collapse to one), and every
comment is kept where the tree attaches it (`turnflow.dsl.ast`): a leading
comment above its statement, a trailing one at the end of its line. The
printer reads only the tree (no source text).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from turnflow.dsl import ast

INDENT = "    "


#: half a surrogate pair: what a `"\ud800"` escape decodes to, and what UTF-8 cannot hold
_SURROGATE = re.compile("[\ud800-\udfff]")


def string(value: str) -> str:
    """`value` as a JSON string, non-ASCII characters as they are, except a lone surrogate, which
    stays an escape (`\\ud800`): written raw, the file could not hold it."""
    text = json.dumps(value, ensure_ascii=False)
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def literal(lit: ast.Literal) -> str:
    if lit.kind == "string":
        return string(str(lit.value))
    if lit.kind == "null":
        return "null"
    if lit.kind == "bool":
        return "true" if lit.value else "false"
    return json.dumps(lit.value)


def target(t: ast.Target) -> str:
    if t.kind == "participant":
        return t.name.name if t.name is not None else ""
    if t.kind == "terminate":
        return "terminate" + (f" {string(t.reason.value)}" if t.reason is not None else "")
    return t.kind


_OR, _AND, _NOT = 1, 2, 3  # precedence levels: `not` binds tighter than `and`, `and` than `or`


def term(t: ast.Term, level: int = _AND) -> str:
    """A term as text; `level` is the precedence of where it stands (parentheses
    are added only where the precedence needs them)."""
    if isinstance(t, ast.ToolTerm):
        return f"tool {t.tool.name}"
    if isinstance(t, ast.ContextTerm):
        return f"context.{t.key.name} == {literal(t.value)}"
    if isinstance(t, ast.CompareTerm):
        key = f"len(context.{t.key.name})" if t.length else f"context.{t.key.name}"
        return f"{key} {t.op} {literal(t.value)}"
    if isinstance(t, ast.AnyTerm):
        text = " or ".join(term(x, _AND if isinstance(x, ast.AnyTerm) else _OR) for x in t.terms)
        return f"({text})" if level > _OR else text
    if isinstance(t, ast.AllTerm):
        text = " and ".join(term(x, _NOT if isinstance(x, ast.AllTerm) else _AND) for x in t.terms)
        return f"({text})" if level > _AND else text
    if isinstance(t, ast.NotTerm):
        return "not " + term(t.term, _NOT)
    return f"text contains {string(t.text.value)}"


def condition(terms: Sequence[ast.Term]) -> str:
    """A rule's terms (a conjunction) as text."""
    if len(terms) == 1:
        return term(terms[0], _OR)
    return " and ".join(term(t, _AND) for t in terms)


def duration(d: ast.Duration) -> str:
    return f"{d.amount}{d.unit}"


def statement_parts(st: ast.Statement) -> list[str]:
    """A statement as columns; `format_flow` aligns the columns of runs of
    consecutive statements of the same type."""
    if isinstance(st, ast.Participant):
        parts = [f"participant {st.name.name}"]
        if st.description is not None:
            parts.append(string(st.description.value))
        rest: list[str] = []
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
            out += " when " + condition(st.terms)
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


def statement(st: ast.Statement) -> str:
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
#  Layout with comments: a pure function of the tree
# --------------------------------------------------------------------------
@dataclass(slots=True)  # one per output line: no per-instance dict
class _Item:
    text: str
    depth: int
    kind: str  # "open", "stmt", "close", "comment"
    blank: bool = False  # the tree says a blank line precedes it
    trailing: list[str] = field(default_factory=list)
    parts: Optional[list[str]] = None
    group: str = ""


def _comments(items: list[_Item], comments: Iterable[ast.Comment], depth: int) -> None:
    for c in comments:
        items.append(_Item(c.text, depth, "comment", c.blank_before))


def format_flow(flow: ast.FlowFile) -> str:
    """Canonical text for `flow`: comments where the tree attaches them, single
    blank lines where the tree records them, one blank line after every block."""
    items: list[_Item] = []
    for block in flow.blocks:
        _block_items(items, block)
    _comments(items, flow.trailing, 0)
    blank_before = _blank_lines(items)
    _align_runs(items, blank_before)
    lines: list[str] = []
    for i, blank in enumerate(blank_before):
        it = items[i]
        items[i] = None  # type: ignore[call-overload]  # each item is let go once its line is made
        if blank and lines and lines[-1] != "":
            lines.append("")
        text = INDENT * it.depth + it.text
        if it.trailing:
            text += " " + " ".join(it.trailing)
        lines.append(text)
    return "\n".join(lines) + "\n" if lines else ""


def _block_items(items: list[_Item], block: ast.Block) -> None:
    """The lines of one block: its header, statements, comments and closing brace."""
    _comments(items, block.leading, 0)
    items.append(_Item(header(block), 0, "open", block.blank_before, [c.text for c in block.trailing]))
    for st in block.statements:
        _comments(items, st.leading, 1)
        parts = statement_parts(st)
        if st.same_line and items and items[-1].kind == "stmt" and not items[-1].trailing:
            joined = items[-1]  # a `;`-joined line under a suppression stays one line, unaligned
            joined.text += "; " + " ".join(parts)
            joined.parts = [joined.text]
            joined.group = f"joined-{len(items)}"
            joined.trailing = [c.text for c in st.trailing]
            continue
        items.append(_Item(" ".join(parts), 1, "stmt", st.blank_before, [c.text for c in st.trailing],
                           parts, type(st).__name__))
    _comments(items, block.inner, 1)
    items.append(_Item("}", 0, "close", False, [c.text for c in block.close_trailing]))


def _blank_lines(items: list[_Item]) -> list[bool]:
    """Whether a blank line goes before each item: as recorded, always after a block,
    never just inside the braces."""
    out = []
    prev = None
    for it in items:
        blank = False
        if prev is not None:
            blank = it.blank or prev.kind == "close"
            if prev.kind == "open" or it.kind == "close":
                blank = False
        out.append(blank)
        prev = it
    return out


def _align_runs(items: list[_Item], blank_before: list[bool]) -> None:
    """Align runs of consecutive same-type statements (no blank line or comment between)."""
    run: list[_Item] = []

    def flush() -> None:
        if len(run) > 1:
            for item, text in zip(run, align([r.parts or [] for r in run])):
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


print_flow = format_flow


def line_ending(text: str) -> str:
    """The line ending a text uses: that of its first line end (`\\n` when it has none)."""
    i, j = text.find("\n"), text.find("\r")
    if j == -1 or (i != -1 and i < j):
        return "\n"
    return "\r\n" if text.startswith("\n", j + 1) else "\r"


def like_source(formatted: str, source: str) -> str:
    """`formatted` (from `format_flow`, `\\n` line ends) written the way `source` is:
    the same line ending and, when `source` starts with one, the byte order mark."""
    eol = line_ending(source)
    if eol != "\n":
        formatted = formatted.replace("\n", eol)
    if source.startswith("\ufeff"):
        formatted = "\ufeff" + formatted
    return formatted
