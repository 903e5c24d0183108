"""The typed model of a migrated team, and its one lowering to `.flow`.

A front end recognises a chat and describes it through `common.FlowBuilder`; `FlowBuilder.team()`
turns that description into a `MigratedTeam`: its statements in order (participants, start, caps,
context, rules, handoffs, the group fallback), each with typed targets and its **provenance** —
read from the source, approximated (with the TF4xx notes that say what was lost), or decided at
run time (TF410). `lower(team)` is the only way to a `.flow` block, for every front end and for
live objects (`turnflow.migrate.live_objects` goes through the same front ends).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

from turnflow.dsl import ast
from turnflow.source import Span

# --------------------------------------------------------------------------
#  Targets
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentTarget:
    name: str


@dataclass(frozen=True, slots=True)
class Terminate:
    reason: Optional[str] = None


@dataclass(frozen=True, slots=True)
class Builtin:
    kind: Literal["stay", "next", "initiator", "previous"]


Target = Union[AgentTarget, Terminate, Builtin]


def target(spec: object) -> Target:
    """A typed target from the front ends' spec: "agent", ("terminate", reason), ("stay",), ..."""
    if isinstance(spec, (AgentTarget, Terminate, Builtin)):
        return spec
    if isinstance(spec, str):
        return AgentTarget(spec)
    if isinstance(spec, tuple) and spec and spec[0] == "terminate":
        return Terminate(spec[1] if len(spec) > 1 else None)
    if isinstance(spec, tuple) and spec and spec[0] in ("stay", "next", "initiator", "previous"):
        return Builtin(spec[0])
    raise ValueError(f"not a target: {spec!r}")


# --------------------------------------------------------------------------
#  Provenance
# --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Provenance:
    """`read` from the source; `approximated` (the notes say what was lost); `run_time`: the
    source decides it when it runs (TF410)."""

    kind: Literal["read", "approximated", "run_time"] = "read"
    notes: tuple[tuple[str, str], ...] = ()  # (code, message)

    @staticmethod
    def of(notes: list[tuple[str, str]]) -> "Provenance":
        if not notes:
            return READ
        kind: Literal["approximated", "run_time"] = "run_time" if any(c == "TF410" for c, _ in notes) \
            else "approximated"
        return Provenance(kind, tuple(notes))


READ = Provenance()


# --------------------------------------------------------------------------
#  Statements
# --------------------------------------------------------------------------
@dataclass(kw_only=True, slots=True)
class Statement:
    comments: list[str] = field(default_factory=list)  # `#` lines above it (notes included)
    group: int = 0  # a change of group is a blank line
    provenance: Provenance = READ


@dataclass(kw_only=True, slots=True)
class Participant(Statement):
    name: str
    description: Optional[str] = None
    role: Optional[str] = None
    tools: tuple[str, ...] = ()


@dataclass(kw_only=True, slots=True)
class Start(Statement):
    name: str


@dataclass(kw_only=True, slots=True)
class MaxTurns(Statement):
    value: int


@dataclass(kw_only=True, slots=True)
class Context(Statement):
    key: str
    value: object


@dataclass(kw_only=True, slots=True)
class Ttl(Statement):
    seconds: int


@dataclass(kw_only=True, slots=True)
class Rule(Statement):
    source: Optional[str]  # None: `*`
    target: Target
    terms: tuple = ()  # the front ends' condition terms (see common._terms)


@dataclass(kw_only=True, slots=True)
class Handoff(Statement):
    source: str
    target: Target
    tool: str
    description: Optional[str] = None


@dataclass(kw_only=True, slots=True)
class Otherwise(Statement):
    target: Target


@dataclass(kw_only=True, slots=True)
class Comment(Statement):
    text: str


@dataclass
class MigratedTeam:
    """One migrated chat: a `workflow` block."""

    name: str
    title: Optional[str]
    statements: list[Statement]
    trailing: list[str] = field(default_factory=list)  # comments with no statement below them
    run_time: list[tuple[str, str]] = field(default_factory=list)  # TF410 notes about the whole team

    @property
    def participants(self) -> list[Participant]:
        return [s for s in self.statements if isinstance(s, Participant)]

    @property
    def routing(self) -> list[Union[Rule, Handoff, Otherwise]]:
        return [s for s in self.statements if isinstance(s, (Rule, Handoff, Otherwise))]


# --------------------------------------------------------------------------
#  The lowering
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


def lower(team: MigratedTeam, leading: tuple = ()):
    """The `workflow` block of `team` (`leading`: comments above its header)."""
    statements = []
    pending: list = []
    prev_group: Optional[int] = None
    for st in team.statements:
        blank = prev_group is not None and st.group != prev_group
        prev_group = st.group
        comments = _comments(st.comments + ([st.text] if isinstance(st, Comment) else []), blank)
        if comments:
            blank = False  # the blank line goes above the comments
        pending.extend(comments)
        if isinstance(st, Comment):
            continue
        statements.append(_statement(st, tuple(pending), blank))
        pending = []
    pending.extend(_comments(team.trailing))
    return ast.Block(GENERATED, "workflow", GENERATED, _ident(team.name), _string(team.title or None),
                     tuple(statements), GENERATED, leading=tuple(leading), inner=tuple(pending))


def _ast_target(t: Target):
    if isinstance(t, AgentTarget):
        return ast.Target(GENERATED, "participant", _ident(t.name))
    if isinstance(t, Terminate):
        return ast.Target(GENERATED, "terminate", None, _string(t.reason))
    return ast.Target(GENERATED, t.kind)


def _statement(st: Statement, leading: tuple, blank: bool):
    g = GENERATED
    layout: dict[str, Any] = {"leading": leading, "blank_before": blank}
    if isinstance(st, Participant):
        return ast.Participant(g, _ident(st.name), _string(st.description or None), st.role,  # type: ignore[arg-type]
                               g if st.role else None, tuple(_ident(t) for t in st.tools) if st.tools else None,
                               **layout)
    if isinstance(st, Start):
        return ast.Start(g, _ident(st.name), **layout)
    if isinstance(st, MaxTurns):
        return ast.MaxTurns(g, ast.Number(g, st.value, str(st.value)), **layout)
    if isinstance(st, Context):
        return ast.ContextInit(g, _ident(st.key), _literal(st.value), **layout)
    if isinstance(st, Ttl):
        return ast.Ttl(g, ast.Duration(g, st.seconds, "s"), **layout)
    if isinstance(st, Rule):
        return ast.Rule(g, _ident(st.source) if st.source else None, g, _ast_target(st.target), _terms(list(st.terms)),
                        **layout)
    if isinstance(st, Handoff):
        return ast.Handoff(g, _ident(st.source), _ast_target(st.target), _ident(st.tool),
                           _string(st.description or None), **layout)
    if isinstance(st, Otherwise):
        return ast.Otherwise(g, _ast_target(st.target), **layout)
    raise ValueError(type(st).__name__)  # pragma: no cover
