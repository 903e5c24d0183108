"""The typed AST of a `.flow` file.

Nodes are plain frozen slotted dataclasses; every node carries a `Span`
(first field, so that the parser can build nodes positionally). Sequences are
tuples. Statements keep their file order inside a block (rule order is part
of the semantics).

The tree also holds the layout the formatter keeps: every comment is attached
to what it belongs to at parse time, and every line item remembers whether a
blank line preceded it in the source:

- a statement's `leading` comments are the own-line comments above it,
  its `trailing` comments sit at the end of its line;
- a block's `leading` comments are above its header, `trailing` ones at the end
  of the header line, `inner` ones after its last statement (before `}`),
  `close_trailing` ones after `}` on the same line;
- the file's `trailing` comments follow its last block;
- a statement has `same_line` when it shares its source line with the previous statement and that
  line ends with a `# turnflow: ignore` comment trailing a statement: the formatter keeps such a line
  joined with `;` (splitting it would change which statements the suppression covers). One that
  trails a `}` (`{ a; b }  # turnflow: ignore`) joins nothing: it is printed after the `}`.

`children()` yields the child nodes of any node (generic traversal);
`FlowFile.comments` lists all comments in file order; `strip_spans()` gives a
position-free plain-data copy for comparisons.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Iterable, Iterator, Literal as Lit, Optional, TypeVar, Union

from turnflow.source import Span

from turnflow.dsl.lexical import BLOCK_KINDS as BLOCK_KINDS, KEYWORDS as KEYWORDS  # (their home: lexical.py)

EXPECT_ACTIONS = ("warn", "hide", "audit", "auto_close")
EXPECT_EVALUATORS = ("acks_within", "reply_within", "turn_within", "max_silence")
ORDERINGS = ("round_robin",)


# fields that hold positions, blank lines or source spelling, not meaning (see strip_spans)
POSITION_FIELDS = frozenset({"span", "source_span", "role_span", "kind_span", "close_span", "raw", "blank_before",
                             "same_line"})
# fields that hold comments
COMMENT_FIELDS = frozenset({"leading", "trailing", "inner", "close_trailing"})


def _tuple(obj: Any, *names: str) -> None:
    """Store sequence fields as tuples (callers may pass lists)."""
    for name in names:
        value = getattr(obj, name)
        if value is not None and type(value) is not tuple:
            object.__setattr__(obj, name, tuple(value))


class Node:
    """Base of every AST node (the dataclasses below add `span` and their fields)."""

    __slots__ = ()
    span: Span

    def children(self) -> Iterator["Node"]:
        """The child nodes, in field order (sequences flattened; layout comments included)."""
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif type(value) is tuple:
                for v in value:
                    if isinstance(v, Node):
                        yield v

    def walk(self) -> Iterator["Node"]:
        """This node and all its descendants, depth first, in field order."""
        stack: list[Node] = [self]
        while stack:
            n = stack.pop()
            yield n
            stack.extend(reversed(list(n.children())))


@dataclass(frozen=True, slots=True)
class Comment(Node):
    """A `#` comment (text up to the end of its line, without the line end)."""

    span: Span
    text: str
    blank_before: bool = False  # for a leading comment: a blank line precedes it


@dataclass(frozen=True, slots=True)
class Ident(Node):
    """A NAME as written, with its position."""

    span: Span
    name: str


@dataclass(frozen=True, slots=True)
class StringLit(Node):
    span: Span
    value: str


LiteralValue = Union[str, int, float, bool, None]
#: a duration's unit (the DURATION token's suffix)
DurationUnit = Lit["ms", "s", "m", "h", "d"]


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """A STRING, INT, FLOAT, `true`/`false` or `null`; `raw` is the source text."""

    span: Span
    kind: Lit["string", "int", "float", "bool", "null"]
    value: LiteralValue
    raw: str

    @classmethod
    def of(cls, value: LiteralValue, span: Span) -> "Literal":
        """The literal a JSON scalar (None, bool, int, float, str) is written as."""
        if value is None:
            return cls(span, "null", None, "null")
        if isinstance(value, bool):
            return cls(span, "bool", value, "true" if value else "false")
        if isinstance(value, int):
            return cls(span, "int", value, str(value))
        if isinstance(value, float):
            return cls(span, "float", value, json.dumps(value))
        if isinstance(value, str):
            return cls(span, "string", value, json.dumps(value, ensure_ascii=False))
        raise TypeError(f"not a literal value: {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class Number(Node):
    span: Span
    value: int
    raw: str


_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True, slots=True)
class Duration(Node):
    span: Span
    amount: int
    unit: DurationUnit

    @property
    def seconds(self) -> float:
        value = self.amount * _SECONDS[self.unit]
        return int(value) if float(value).is_integer() else value


@dataclass(frozen=True, slots=True)
class Target(Node):
    """Where a rule sends the turn. `name` is set for `participant`,
    `reason` (optional) for `terminate`."""

    span: Span
    kind: Lit["participant", "terminate", "stay", "next", "initiator", "previous"]
    name: Optional[Ident] = None
    reason: Optional[StringLit] = None


@dataclass(frozen=True, slots=True)
class ToolTerm(Node):
    type: ClassVar[str] = "tool"
    span: Span
    tool: Ident


@dataclass(frozen=True, slots=True)
class ContextTerm(Node):
    type: ClassVar[str] = "context"
    span: Span
    key: Ident
    value: Literal


@dataclass(frozen=True, slots=True)
class TextTerm(Node):
    type: ClassVar[str] = "text"
    span: Span
    text: StringLit


#: the comparison operators of `context.KEY OP LITERAL` / `len(context.KEY) OP LITERAL`
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True, slots=True)
class CompareTerm(Node):
    """`context.KEY OP LITERAL` with OP other than `==` (that one is a `ContextTerm`),
    or, with `length`, `len(context.KEY) OP LITERAL` (any OP)."""

    type: ClassVar[str] = "compare"
    span: Span
    key: Ident
    op: Lit["==", "!=", "<", "<=", ">", ">="]
    value: Literal
    length: bool = False


@dataclass(frozen=True, slots=True)
class AllTerm(Node):
    """A parenthesised conjunction (two or more terms) inside an `or` or a `not`;
    at the top of a rule a conjunction is the rule's own `terms`."""

    type: ClassVar[str] = "all"
    span: Span
    terms: tuple["Term", ...]

    def __post_init__(self) -> None:
        _tuple(self, "terms")


@dataclass(frozen=True, slots=True)
class AnyTerm(Node):
    """`A or B or ...` (two or more alternatives; none is itself an `AnyTerm`)."""

    type: ClassVar[str] = "any"
    span: Span
    terms: tuple["Term", ...]

    def __post_init__(self) -> None:
        _tuple(self, "terms")


@dataclass(frozen=True, slots=True)
class NotTerm(Node):
    """`not A`."""

    type: ClassVar[str] = "not"
    span: Span
    term: "Term"


Term = Union[ToolTerm, ContextTerm, TextTerm, CompareTerm, AllTerm, AnyTerm, NotTerm]

# Every later stage (lowering, the printer, the spec model, the compile targets) walks a condition
# recursively: the parser refuses one nested deeper than this (TF002) where it is written.
MAX_CONDITION_DEPTH = 100


def too_deep(terms: Iterable[Term]) -> Optional[Node]:
    """The first node of a rule's condition nested more than MAX_CONDITION_DEPTH levels (`not not
    …`, parenthesised `and` inside `or` inside `and` …), or None; walked with a stack."""
    stack: list[tuple[Node, int]] = [(t, 1) for t in terms if isinstance(t, (NotTerm, AllTerm, AnyTerm))]
    while stack:
        term, depth = stack.pop()
        if depth > MAX_CONDITION_DEPTH:
            return term
        if isinstance(term, NotTerm):
            stack.append((term.term, depth + 1))
        elif isinstance(term, (AllTerm, AnyTerm)):
            stack.extend((t, depth + 1) for t in term.terms)
    return None


def leaf_terms(terms: Iterable[Term]) -> Iterator[Term]:
    """Every non-compound term inside `terms` (a sequence of terms), in source order."""
    for t in terms:
        if isinstance(t, NotTerm):
            yield from leaf_terms((t.term,))
        elif isinstance(t, (AllTerm, AnyTerm)):
            yield from leaf_terms(t.terms)
        else:
            yield t

_NO_COMMENTS: tuple[Comment, ...] = ()


class StatementNode(Node):
    """Base of statements: each ends with the layout fields
    `leading`, `trailing` (comments) and `blank_before`."""

    __slots__ = ()
    type: ClassVar[str]
    leading: tuple[Comment, ...]
    trailing: tuple[Comment, ...]
    blank_before: bool


@dataclass(frozen=True, slots=True)
class Participant(StatementNode):
    type: ClassVar[str] = "participant"
    span: Span
    name: Ident
    description: Optional[StringLit] = None
    role: Optional[Lit["initiator", "respondent"]] = None
    role_span: Optional[Span] = None
    tools: Optional[tuple[Ident, ...]] = None  # None: no `tools [...]` clause
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)

    def __post_init__(self) -> None:
        _tuple(self, "tools", "leading", "trailing")


@dataclass(frozen=True, slots=True)
class Start(StatementNode):
    type: ClassVar[str] = "start"
    span: Span
    name: Ident
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class MaxTurns(StatementNode):
    type: ClassVar[str] = "max_turns"
    span: Span
    value: Number
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class ContextInit(StatementNode):
    type: ClassVar[str] = "context_init"
    span: Span
    key: Ident
    value: Literal
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class Rule(StatementNode):
    """`SOURCE -> TARGET [when COND] [priority INT]`; `source` None means `*`."""

    type: ClassVar[str] = "rule"
    span: Span
    source: Optional[Ident]
    source_span: Span
    target: Target
    terms: tuple[Term, ...] = ()
    priority: Optional[Number] = None
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)

    def __post_init__(self) -> None:
        _tuple(self, "terms", "leading", "trailing")


@dataclass(frozen=True, slots=True)
class Handoff(StatementNode):
    """`handoff SOURCE -> TARGET via TOOL [STRING]`."""

    type: ClassVar[str] = "handoff"
    span: Span
    source: Ident
    target: Target
    tool: Ident
    description: Optional[StringLit] = None
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class Otherwise(StatementNode):
    type: ClassVar[str] = "otherwise"
    span: Span
    target: Target
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class Ordering(StatementNode):
    type: ClassVar[str] = "ordering"
    span: Span
    value: Ident
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class Expect(StatementNode):
    type: ClassVar[str] = "expect"
    span: Span
    name: Ident
    duration: Duration
    action: Ident
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


@dataclass(frozen=True, slots=True)
class Ttl(StatementNode):
    type: ClassVar[str] = "ttl"
    span: Span
    duration: Duration
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    same_line: bool = False  # kept on the previous statement's line (see attach_layout)


Statement = Union[Participant, Start, MaxTurns, ContextInit, Rule, Handoff, Otherwise, Ordering, Expect, Ttl]
#: one kind of statement (`Block.of_type`)
S = TypeVar("S", bound=Statement)


#: `Block.by_type`'s key for the rules and handoffs together
_RULES = "rules"


@dataclass(frozen=True, slots=True)
class Block(Node):
    span: Span
    kind: Lit["workflow", "consulting", "conversation", "discussion"]
    kind_span: Span
    name: Ident
    title: Optional[StringLit]
    statements: tuple[Statement, ...]
    close_span: Span  # the closing brace
    leading: tuple[Comment, ...] = ()
    trailing: tuple[Comment, ...] = ()
    inner: tuple[Comment, ...] = ()
    close_trailing: tuple[Comment, ...] = ()
    blank_before: bool = False
    #: the statements by class (and the rules under `_RULES`), built at the first view: the
    #: checks ask a block for its participants, rules, ... a dozen times
    _by_type: Optional[dict[Any, list[Any]]] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _tuple(self, "statements", "leading", "trailing", "inner", "close_trailing")

    # -- convenience views (file order) ------------------------------------
    def by_type(self) -> dict[Any, list[Any]]:
        """The statements by class, each list in file order (built once; read, never change it)."""
        index = self._by_type
        if index is None:
            index = {_RULES: []}
            rules = index[_RULES]
            for st in self.statements:
                kind = type(st)
                found = index.get(kind)
                if found is None:
                    index[kind] = [st]
                else:
                    found.append(st)
                if kind is Rule or kind is Handoff:
                    rules.append(st)
            object.__setattr__(self, "_by_type", index)  # a frozen node: a memo of its statements
        return index

    def of_type(self, cls: type[S]) -> list[S]:
        """The statements of class `cls`, in file order (a new list)."""
        return list(self.by_type().get(cls, ()))

    @property
    def participants(self) -> list[Participant]:
        return self.of_type(Participant)

    @property
    def rules(self) -> list[Union[Rule, Handoff]]:
        """Transition rules in file order: plain rules and handoffs."""
        return list(self.by_type()[_RULES])

    @property
    def comments(self) -> list[Comment]:
        """Every comment of the block, in file order."""
        out = [*self.leading, *self.trailing]
        for st in self.statements:
            out.extend(st.leading)
            out.extend(st.trailing)
        out.extend(self.inner)
        out.extend(self.close_trailing)
        return out


@dataclass(frozen=True, slots=True)
class FlowFile(Node):
    span: Span
    blocks: tuple[Block, ...] = ()
    trailing: tuple[Comment, ...] = ()  # comments after the last block (or in a file without blocks)

    def __post_init__(self) -> None:
        _tuple(self, "blocks", "trailing")

    def block(self, name: str) -> Optional[Block]:
        for b in self.blocks:
            if b.name.name == name:
                return b
        return None

    @property
    def comments(self) -> list[Comment]:
        """Every comment of the file, in file order (for suppressions)."""
        out: list[Comment] = []
        for b in self.blocks:
            out.extend(b.comments)
        out.extend(self.trailing)
        return out


def strip_spans(node: Any, comments: bool = True) -> Any:
    """A plain-data copy of `node` without any position information or blank
    lines (and, with `comments=False`, without comments)."""
    if isinstance(node, Node):
        out: dict[str, Any] = {}
        t = getattr(node, "type", None)
        if t is not None:
            out["type"] = t
        for f in fields(node):  # type: ignore[arg-type]
            name = f.name
            if not f.compare:  # a memo (`Block._by_type`), not the node's content
                continue
            if name in POSITION_FIELDS or (not comments and name in COMMENT_FIELDS):
                continue
            out[name] = strip_spans(getattr(node, name), comments)
        return out
    if isinstance(node, (list, tuple)):
        return [strip_spans(v, comments) for v in node]
    return node
