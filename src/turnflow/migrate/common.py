"""Shared helpers of the migration front ends.

A front end reads its input and fills a `FlowBuilder`: participants,
statements, and TF4xx notes (each note is a diagnostic at a position of the
INPUT file and a `#` comment above the statement it concerns). `FlowBuilder.team()`
turns that into the typed model (`turnflow.migrate.model.MigratedTeam`: typed
targets, each statement's provenance), which `model.lower` turns into a turnflow
AST — the one lowering of every front end: notes become leading comments of the
statements they concern, a new group of statements is a blank line
(`blank_before`), and the ordinary printer (`turnflow.dsl.printer.format_flow`)
prints the tree. Generated nodes carry the placeholder span `GENERATED` (they
have no position in any `.flow` text until printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from turnflow.diagnostics.diagnostic import Diagnostic, sort_key
from turnflow.diagnostics.codes import diagnostic as make_diagnostic
from turnflow.dsl import ast
from turnflow.dsl.lexical import KEYWORDS, NAME_RE
from turnflow.dsl.printer import format_flow
from turnflow.source import SourceText, Span
from turnflow.diagnostics.listing import bounded

MAX_ROUTES = 32  # routing tools emitted per speaker: an 800-agent chat stays a bounded, readable file


# the notebook being migrated (`notebook.Locator`), if any: comments and messages name cells and
# lines within them, as the diagnostics do, not the JSON file's or the joined code cells' lines
NOTEBOOK: list = []


def input_where(p: "Pos") -> str:
    """`line:column` of a position in the input, or `cell 3:5:24` in a notebook."""
    cell = NOTEBOOK[0].where(p.line, p.column) if NOTEBOOK else None
    return cell or f"{p.line}:{p.column}"


def line_ref(lineno: int) -> str:
    """`line 12` of a Python source (an `ast` line number), or `cell 3, line 5` in a notebook."""
    cell = NOTEBOOK[0].python_line(lineno) if NOTEBOOK else None
    return cell or f"line {lineno}"


def lines_ref(linenos: list[int]) -> str:
    """`lines 3, 7`, or `cell 2, line 3; cell 4, line 1` in a notebook."""
    if NOTEBOOK:
        return bounded((line_ref(n) for n in linenos), "; ")
    return "lines " + bounded(str(n) for n in linenos)


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
        self._raw: dict[str, str] = {}  # NAME -> the source name it was made from
        self._next: dict[str, int] = {}  # base -> the next suffix to try (linear in repeats of one base)

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
        if name in KEYWORDS:
            name += "_"
        return name

    def add(self, raw: str) -> tuple[str, bool]:
        """The NAME for `raw` and whether it differs from `raw`."""
        if raw in self.map:
            return self.map[raw], self.map[raw] != raw
        base = raw if NAME_RE.match(raw) and raw not in KEYWORDS else self.clean(raw)
        name, i = base, self._next.get(base, 2)
        while name in self.used:
            name = f"{base}_{i}"
            i += 1
        self._next[base] = i
        self.map[raw] = name
        self.used.add(name)
        self._raw[name] = raw
        return name, name != raw

    def raw_of(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The source name `name` was made from."""
        return self._raw.get(name, default)


def tool_name(raw: str) -> str:
    return Names.clean(raw) if not NAME_RE.match(raw) or raw in KEYWORDS else raw


# --------------------------------------------------------------------------
#  The builder
# --------------------------------------------------------------------------
TargetSpec = Union[str, tuple]  # "agent" | ("terminate", reason) | ("stay",) | ("next",) | ("initiator",) | ("previous",)


@dataclass(slots=True)
class Line:
    kind: str  # participant | start | max_turns | context | rule | handoff | otherwise | ttl | comment
    data: dict
    comments: list[str] = field(default_factory=list)
    group: int = 0
    notes: list[tuple[str, str]] = field(default_factory=list)  # (code, message) of the notes above it


@dataclass(slots=True)
class Note:
    code: str
    message: str
    pos: Pos


class FlowBuilder:
    """Collects one block; `notes` become diagnostics and comments."""

    input_positions = True  # comments say where in the input a note is (not for live objects)

    def __init__(self, name: str, title: Optional[str] = None):
        self.name = name
        self.title = title
        self.lines: list[Line] = []
        self.group = 0
        self.pending: list[str] = []
        self.notes: list[Note] = []
        self.participants: list[str] = []
        self.participant_set: set[str] = set()  # `participants` for membership tests (linear in the agents)
        self.tools: dict[str, list[str]] = {}
        self.pending_notes: list[tuple[str, str]] = []
        self.run_time: list[tuple[str, str]] = []  # TF410 notes about the whole team

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
            self.pending_notes.append((code, message))
            where = bounded(input_where(p) for p in (pos, *also))
            self.pending.append(f"{code}: {message} (input {where})" if self.input_positions else f"{code}: {message}")

    def comment(self, text: str) -> None:
        self.pending.append(text)

    def _add(self, kind: str, **data) -> Line:
        line = Line(kind, data, self.pending, self.group, self.pending_notes)
        self.pending = []
        self.pending_notes = []
        self.lines.append(line)
        return line

    # -- statements ---------------------------------------------------------
    def participant(self, name: str, description: Optional[str] = None, role: Optional[str] = None) -> None:
        if name in self.participant_set:
            return
        self.participants.append(name)
        self.participant_set.add(name)
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

    # -- the typed model ------------------------------------------------------
    def team(self):
        """The `MigratedTeam` this builder describes (turnflow.migrate.model)."""
        from turnflow.migrate import model

        out: list = []
        for line in self.lines:
            d = line.data
            common: dict[str, Any] = {"comments": list(line.comments), "group": line.group,
                      "provenance": model.Provenance.of(line.notes)}
            if line.kind == "participant":
                out.append(model.Participant(name=d["name"], description=d["description"], role=d["role"],
                                             tools=tuple(self.tools.get(d["name"]) or ()), **common))
            elif line.kind == "start":
                out.append(model.Start(name=d["name"], **common))
            elif line.kind == "max_turns":
                out.append(model.MaxTurns(value=d["value"], **common))
            elif line.kind == "context":
                out.append(model.Context(key=d["key"], value=d["value"], **common))
            elif line.kind == "ttl":
                out.append(model.Ttl(seconds=d["seconds"], **common))
            elif line.kind == "rule":
                out.append(model.Rule(source=d["source"], target=model.target(d["target"]), terms=tuple(d["terms"]),
                                      **common))
            elif line.kind == "handoff":
                out.append(model.Handoff(source=d["source"], target=model.target(d["target"]), tool=d["tool"],
                                         description=d["description"], **common))
            elif line.kind == "otherwise":
                out.append(model.Otherwise(target=model.target(d["target"]), **common))
            else:
                out.append(model.Comment(text=d["text"], **common))
        return model.MigratedTeam(self.name, self.title, out, list(self.pending), list(self.run_time))


# --------------------------------------------------------------------------
#  Builder → AST → text
# --------------------------------------------------------------------------
@dataclass
class Migration:
    """The result of a front end: the printed flow, its AST and the TF4xx diagnostics."""

    text: str
    flow: ast.FlowFile
    diagnostics: list[Diagnostic]
    family: str
    teams: list = field(default_factory=list)  # the typed model (turnflow.migrate.model.MigratedTeam), per block


def render(builders: list[FlowBuilder], header: list[str], path: str, src: Optional[SourceText],
           family: str) -> Migration:
    from turnflow.migrate.model import GENERATED, _comments, lower

    head = _comments(header)
    teams = [b.team() for b in builders]
    blocks = [lower(t, tuple(head) if i == 0 else ()) for i, t in enumerate(teams)]
    flow = ast.FlowFile(GENERATED, tuple(blocks), () if blocks else tuple(head))
    text = format_flow(flow)
    diags = [diagnostic(n.code, n.message, n.pos, path, src) for b in builders for n in b.notes]
    unique = {(d.code, d.message, d.span.line, d.span.column): d for d in diags}
    diags = sorted(unique.values(), key=sort_key)
    return Migration(text=text, flow=flow, diagnostics=diags, family=family, teams=teams)


def block_names(keys: list[tuple[Optional[str], Optional[str]]], default: str = "groupchat") -> list[str]:
    """One unique block NAME per chat: its variable, suffixed with its function's name when
    chats in different functions use the same variable; `_2`, `_3` for what still clashes."""
    bases = [var or default for _, var in keys]
    counts: dict[str, int] = {}
    for b in bases:
        counts[b] = counts.get(b, 0) + 1
    used: set[str] = set()
    out = []
    for (scope, _), base in zip(keys, bases):
        if counts[base] > 1 and scope:
            base = f"{base}_{scope}"
        base = Names().add(base)[0]  # a valid NAME
        name, i = base, 2
        while name in used:  # the same variable twice in one scope: `_2`, `_3`
            name = f"{base}_{i}"
            i += 1
        used.add(name)
        out.append(name)
    return out
