"""Shared helpers of the migration front ends.

A front end reads its input and fills a `FlowBuilder`: participants,
statements, and TF4xx notes (each note is a diagnostic at a position of the
INPUT file and a `#` comment above the statement it concerns). The builder
turns that into a turnflow AST directly: notes become leading comments of the
statements they concern, a new group of statements is a blank line
(`blank_before`), and the ordinary printer (`turnflow.dsl.printer.format_flow`)
prints the tree. Generated nodes carry the placeholder span `GENERATED` (they
have no position in any `.flow` text until printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence, TypedDict, Union

from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
from turnflow.diagnostics.codes import diagnostic as make_diagnostic
from turnflow.dsl import ast
from turnflow.dsl.printer import format_flow
from turnflow.source import SourceText, Span

NAME_RE = re.compile(r"[^\W\d](?:[\w-]*\w)?\Z")
MAX_ROUTES = 32  # routing tools emitted per speaker: an 800-agent chat stays a bounded, readable file


class MigrateError(Exception):
    """The input cannot be migrated at all; `.diagnostics` says where and why."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        first = diagnostics[0]
        super().__init__(f"{first.path}:{first.where()}: {first.code} {first.message}")


@dataclass(frozen=True)
class Pos:
    """A 1-based line and column in the input file (end exclusive)."""

    line: int = 1
    column: int = 1
    end_line: int = 0
    end_column: int = 0

    def span(self, src: Optional[SourceText] = None) -> Span:
        end_line = self.end_line or self.line
        end_column = self.end_column if self.end_line else self.column + 1
        if end_line == self.line and end_column <= self.column:
            end_column = self.column + 1
        start = end = 0
        if src is not None:
            start = src.offset(self.line, self.column)
            end = max(start + 1, src.offset(end_line, end_column))
        return Span(line=self.line, column=self.column, end_line=end_line, end_column=end_column,
                    start=start, end=end)


def diagnostic(code: str, message: str, pos: Pos, path: str, src: Optional[SourceText] = None) -> Diagnostic:
    return make_diagnostic(code, message, pos.span(src), path)


def fail(code: str, message: str, pos: Pos, path: str, src: Optional[SourceText] = None) -> MigrateError:
    return MigrateError([diagnostic(code, message, pos, path, src)])


# --------------------------------------------------------------------------
#  Names
# --------------------------------------------------------------------------
class Names:
    """Source names → valid, unique turnflow NAMEs (deterministic)."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    @staticmethod
    def clean(raw: str) -> str:
        name = re.sub(r"[^\w-]+", "_", raw.strip(), flags=re.UNICODE)
        name = name.strip("-")
        if not name:
            name = "agent"
        if name[0].isdigit() or name[0] == "-":
            name = "agent_" + name
        if name.endswith("-"):
            name = name.rstrip("-") or "agent"
        if name in ast.KEYWORDS:
            name += "_"
        return name

    def add(self, raw: str) -> tuple[str, bool]:
        """The NAME for `raw` and whether it differs from `raw`."""
        if raw in self.map:
            return self.map[raw], self.map[raw] != raw
        base = raw if NAME_RE.match(raw) and raw not in ast.KEYWORDS else self.clean(raw)
        name, i = base, 2
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self.map[raw] = name
        self.used.add(name)
        return name, name != raw


def tool_name(raw: str) -> str:
    return Names.clean(raw) if not NAME_RE.match(raw) or raw in ast.KEYWORDS else raw


# --------------------------------------------------------------------------
#  The builder
# --------------------------------------------------------------------------
TargetSpec = Union[str, tuple]  # "agent" | ("terminate", reason) | ("stay",) | ("next",) | ("initiator",) | ("previous",)


@dataclass
class Line:
    kind: str  # participant | start | max_turns | context | rule | handoff | otherwise | ttl | comment
    data: dict
    comments: list[str] = field(default_factory=list)
    group: int = 0


@dataclass
class Note:
    code: str
    message: str
    pos: Pos


class FlowBuilder:
    """Collects one block; `notes` become diagnostics and comments."""

    def __init__(self, name: str, title: Optional[str] = None):
        self.name = name
        self.title = title
        self.lines: list[Line] = []
        self.group = 0
        self.pending: list[str] = []
        self.notes: list[Note] = []
        self.participants: list[str] = []
        self.tools: dict[str, list[str]] = {}

    # -- groups and comments ----------------------------------------------
    def section(self, comment: Optional[str] = None) -> None:
        """Start a new group of statements (a blank line), optionally headed by a comment."""
        self.group += 1
        if comment:
            self.pending.append(comment)

    def note(self, code: str, message: str, pos: Pos, *, comment: bool = True, also: tuple = ()) -> None:
        """A TF4xx approximation: a diagnostic (one per position: `pos` and `also`), and a
        comment above the next statement."""
        for p in (pos, *also):
            self.notes.append(Note(code, message, p))
        if comment:
            where = ", ".join(f"{p.line}:{p.column}" for p in (pos, *also))
            self.pending.append(f"{code}: {message} (input {where})")

    def comment(self, text: str) -> None:
        self.pending.append(text)

    def _add(self, kind: str, **data) -> Line:
        line = Line(kind, data, self.pending, self.group)
        self.pending = []
        self.lines.append(line)
        return line

    # -- statements ---------------------------------------------------------
    def participant(self, name: str, description: Optional[str] = None, role: Optional[str] = None) -> None:
        if name in self.participants:
            return
        self.participants.append(name)
        self._add("participant", name=name, description=description, role=role)

    def add_tool(self, owner: str, tool: str) -> None:
        tools = self.tools.setdefault(owner, [])
        if tool not in tools:
            tools.append(tool)

    def start(self, name: str) -> None:
        self._add("start", name=name)

    def max_turns(self, n: int) -> None:
        self._add("max_turns", value=max(1, int(n)))

    def context(self, key: str, value) -> None:
        self._add("context", key=key, value=value)

    def ttl(self, seconds: int) -> None:
        self._add("ttl", seconds=int(seconds))

    def rule(self, source: Optional[str], target: TargetSpec, terms: Optional[list] = None) -> None:
        """`terms`: ("tool", name) | ("context", key, value) | ("text", s)."""
        self._add("rule", source=source, target=target, terms=list(terms or []))

    def handoff(self, source: str, target: TargetSpec, tool: str, description: Optional[str]) -> None:
        self._add("handoff", source=source, target=target, tool=tool, description=description)

    def otherwise(self, target: TargetSpec) -> None:
        self._add("otherwise", target=target)

    def trailing_comment(self, text: str) -> None:
        """A comment line that is not above any statement (kept before `}`)."""
        self._add("comment", text=text)


# --------------------------------------------------------------------------
#  Builder → AST → text
# --------------------------------------------------------------------------
GENERATED = Span.point()  # the span of every generated node


def _comment_lines(text: str, width: int = 92) -> list[str]:
    import textwrap

    out = []
    for raw in text.splitlines() or [""]:
        raw = raw.rstrip()
        if not raw:
            out.append("#")
            continue
        wrapped = textwrap.wrap(raw, width, break_long_words=False, break_on_hyphens=False) or [raw]
        out.append("# " + wrapped[0])
        out.extend("#   " + w for w in wrapped[1:])
    return out


def _comments(texts: list[str], blank: bool = False) -> list[ast.Comment]:
    """Comment nodes for `texts` (wrapped); the first has `blank_before` = `blank`."""
    out: list[ast.Comment] = []
    for text in texts:
        for c in _comment_lines(text):
            out.append(ast.Comment(GENERATED, c, blank and not out))
    return out


def _ident(name: str) -> ast.Ident:
    return ast.Ident(GENERATED, name)


def _string(value: Optional[str]) -> Optional[ast.StringLit]:
    return ast.StringLit(GENERATED, value) if value is not None else None


def _literal(value) -> ast.Literal:
    if value is not None and not isinstance(value, (bool, int, float, str)):
        value = str(value)
    return ast.Literal.of(value, GENERATED)


def _target(spec: TargetSpec) -> ast.Target:
    if isinstance(spec, str):
        return ast.Target(GENERATED, "participant", _ident(spec))
    kind = spec[0]
    if kind == "terminate":
        reason = spec[1] if len(spec) > 1 else None
        return ast.Target(GENERATED, "terminate", None, _string(reason))
    return ast.Target(GENERATED, kind)


def _terms(terms: list) -> tuple:
    """Terms from the front ends' tuples: ("tool", T), ("context", K, V), ("text", S),
    ("compare", K, OP, V[, len]) (OP not "==" unless len), ("any", [term, ...]) (two or
    more), ("all", [term, ...]) (inside "any" / "not"), ("not", term); AST terms pass through."""
    return tuple(_term(t) for t in terms)


def _term(t):
    if isinstance(t, ast.Node):
        return t
    kind = t[0]
    if kind == "tool":
        return ast.ToolTerm(GENERATED, _ident(t[1]))
    if kind == "context":
        return ast.ContextTerm(GENERATED, _ident(t[1]), _literal(t[2]))
    if kind == "compare":
        return ast.CompareTerm(GENERATED, _ident(t[1]), t[2], _literal(t[3]), bool(t[4]) if len(t) > 4 else False)
    if kind == "any":
        return ast.AnyTerm(GENERATED, tuple(_term(x) for x in t[1]))
    if kind == "all":
        return ast.AllTerm(GENERATED, tuple(_term(x) for x in t[1]))
    if kind == "not":
        return ast.NotTerm(GENERATED, _term(t[1]))
    return ast.TextTerm(GENERATED, ast.StringLit(GENERATED, t[1]))


class _Layout(TypedDict):
    """The layout fields every generated statement gets (keyword arguments of its node)."""

    leading: tuple[ast.Comment, ...]
    blank_before: bool


def _statement(b: FlowBuilder, line: Line, leading: list[ast.Comment], blank: bool) -> ast.Statement:
    d, g = line.data, GENERATED
    layout: _Layout = {"leading": tuple(leading), "blank_before": blank}
    if line.kind == "participant":
        tools = b.tools.get(d["name"])
        return ast.Participant(g, _ident(d["name"]), _string(d["description"] or None), d["role"],
                               g if d["role"] else None, tuple(_ident(t) for t in tools) if tools else None,
                               **layout)
    if line.kind == "start":
        return ast.Start(g, _ident(d["name"]), **layout)
    if line.kind == "max_turns":
        return ast.MaxTurns(g, ast.Number(g, d["value"], str(d["value"])), **layout)
    if line.kind == "context":
        return ast.ContextInit(g, _ident(d["key"]), _literal(d["value"]), **layout)
    if line.kind == "ttl":
        return ast.Ttl(g, ast.Duration(g, d["seconds"], "s"), **layout)
    if line.kind == "rule":
        return ast.Rule(g, _ident(d["source"]) if d["source"] else None, g, _target(d["target"]),
                        _terms(d["terms"]), **layout)
    if line.kind == "handoff":
        return ast.Handoff(g, _ident(d["source"]), _target(d["target"]), _ident(d["tool"]),
                           _string(d["description"] or None), **layout)
    if line.kind == "otherwise":
        return ast.Otherwise(g, _target(d["target"]), **layout)
    raise ValueError(line.kind)  # pragma: no cover


def build_block(b: FlowBuilder, leading: Sequence[ast.Comment] = ()) -> ast.Block:
    """The block `b` describes; `leading` comments go above its header. A change of
    group is a blank line before the first comment or statement of the new group."""
    statements = []
    pending: list[ast.Comment] = []
    prev_group: Optional[int] = None
    for line in b.lines:
        blank = prev_group is not None and line.group != prev_group
        prev_group = line.group
        comments = _comments(line.comments + ([line.data["text"]] if line.kind == "comment" else []), blank)
        if comments:
            blank = False  # the blank line goes above the comments
        pending.extend(comments)
        if line.kind == "comment":
            continue
        statements.append(_statement(b, line, pending, blank))
        pending = []
    pending.extend(_comments(b.pending))  # comments with nothing below them
    return ast.Block(GENERATED, "workflow", GENERATED, _ident(b.name), _string(b.title or None),
                     tuple(statements), GENERATED, leading=tuple(leading), inner=tuple(pending))


@dataclass
class Migration:
    """The result of a front end: the printed flow, its AST and the TF4xx diagnostics."""

    text: str
    flow: ast.FlowFile
    diagnostics: list[Diagnostic]
    family: str


def render(builders: list[FlowBuilder], header: list[str], path: str, src: Optional[SourceText],
           family: str) -> Migration:
    head = _comments(header)
    blocks = [build_block(b, head if i == 0 else ()) for i, b in enumerate(builders)]
    flow = ast.FlowFile(GENERATED, tuple(blocks), () if blocks else tuple(head))
    text = format_flow(flow)
    diags = [diagnostic(n.code, n.message, n.pos, path, src) for b in builders for n in b.notes]
    unique = {(d.code, d.message, d.span.line, d.span.column): d for d in diags}
    diags = sorted(unique.values(), key=sort_key)
    return Migration(text=text, flow=flow, diagnostics=diags, family=family)
