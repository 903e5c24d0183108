"""The parser's fast path: a recursive-descent reading of flow.lark for valid files.

lark's LALR parser is the grammar's home and the source of every error
message; driving it costs about 3 µs a token (`feed_token`, the callback
chain, lark `Token` objects). Nearly every file a user checks is valid, so
`parse_source` first tries this reader: it splits the text with the same
master regex `FlowLexer` uses (one `finditer` over the text, the same
terminals in the same order), follows the grammar by hand and builds the same
AST nodes with the same spans through the same literal decoders. On anything
it does not recognise -- a syntax error, a literal that does not decode, a
character no terminal matches -- it gives up (`None`) and the caller parses the
whole text again with lark, so diagnostics never come from here.
A differential property test (tests/test_fastparse.py) keeps the two readings
equal on generated, mutated and fixture files.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields, replace
from functools import lru_cache
from typing import Any, Callable, Optional, TypeVar, Union, final

from turnflow.dsl import ast
from turnflow.dsl.lexer import KEYWORD_TYPES
from turnflow.source import Span

_new = tuple.__new__
_END = "$END"
N = TypeVar("N", bound=ast.Node)


def _builder(cls: type[N]) -> type[N]:
    """`cls(...)` for a node class of `turnflow.dsl.ast` (same parameters) that sets its slots
    directly. A frozen dataclass's `__init__` sets every field through `object.__setattr__`,
    the slowest part of building a node, and this reader builds about 150,000 nodes for 20,000
    rules. Like the dataclass module, the function is generated once per class. Skips
    `__post_init__`: sequences must be tuples already (this reader only passes tuples).
    Typed as the class, so that mypy checks every call against the class's fields: only call it."""
    params, body = [], []
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for f in fields(cls):  # type: ignore[arg-type]  # a dataclass
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__  # the slot's descriptor
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(node, {f.name})")
    source = f"def build({', '.join(params)}):\n    node = _new(_cls)\n" + "\n".join(body) + "\n    return node\n"
    exec(source, namespace)
    build: type[N] = namespace["build"]
    return build


_Ident, _Target, _StringLit, _Literal, _Number, _Duration = (
    _builder(ast.Ident), _builder(ast.Target), _builder(ast.StringLit), _builder(ast.Literal), _builder(ast.Number),
    _builder(ast.Duration))
_ToolTerm, _TextTerm, _ContextTerm, _CompareTerm, _AllTerm, _AnyTerm, _NotTerm = (
    _builder(ast.ToolTerm), _builder(ast.TextTerm), _builder(ast.ContextTerm), _builder(ast.CompareTerm),
    _builder(ast.AllTerm), _builder(ast.AnyTerm), _builder(ast.NotTerm))
_Rule, _Handoff, _Participant, _Start, _MaxTurns, _ContextInit, _Otherwise, _Ordering, _Expect, _Ttl = (
    _builder(ast.Rule), _builder(ast.Handoff), _builder(ast.Participant), _builder(ast.Start),
    _builder(ast.MaxTurns), _builder(ast.ContextInit), _builder(ast.Otherwise), _builder(ast.Ordering),
    _builder(ast.Expect), _builder(ast.Ttl))
_Block, _FlowFile = _builder(ast.Block), _builder(ast.FlowFile)


#: the literal decoders the parser passes in (`parser.decode_string`, `decode_number`,
#: `duration_parts`): raw token text → value
Decoders = tuple[Callable[[str], str], Callable[[str], Union[int, float]], Callable[[str], tuple[int, ast.DurationUnit]]]


class _Bail(Exception):
    """The text is not one the fast path reads: parse it with lark."""


@lru_cache(maxsize=4)
def _scanner(master: "re.Pattern[str]") -> "re.Pattern[str]":
    """`master` with one more alternative, last: any character that is not a blank
    (`_GAP`: a character no terminal matches). Over a text that does not end in
    blanks, `finditer` then matches at every position it reaches, so it never skips
    text: no gap check per token, and no retry at every offset of a blank run."""
    assert master.pattern.endswith(")")
    return re.compile(master.pattern[:-1] + r"|(?P<_GAP>[^ \t\f]))", master.flags)


#: a `_SEP`'s value when it holds a blank line (in a text without comments)
BLANK = "\n\n"

#: tokens that never begin or end a node: kept without a span (and, but for the comparison
#: operators, without their text), so a large file holds less while it is read
_BARE = frozenset({"ARROW", "WHEN", "CONTAINS", "PRIORITY", "VIA", "AND", "OR", "DOT", "EQUAL", "COMMA",
                   "LBRACE", "LSQB", "LPAR", "RPAR", "EQEQ", "CMP"})


def tokens(text: str, master: "re.Pattern[str]") -> Optional[tuple[list[str], list[str], list[Span]]]:
    """The kinds (reserved words resolved), values and spans of the text's tokens,
    `_SEP` included, ending with `$END`; None when a character starts no token. A `_SEP`
    and the `_BARE` tokens have no span, and only a comparison operator keeps its text.
    A `_SEP`'s value is `BLANK` when it holds two line ends or more (in a text without
    comments: a blank line), else None."""
    kinds: list[str] = []
    values: list[str] = []
    spans: list[Span] = []
    add_kind, add_value, add_span = kinds.append, values.append, spans.append
    keyword = KEYWORD_TYPES.get
    line, line_start = 1, 0
    for m in _scanner(master).finditer(text, 0, len(text.rstrip(" \t\f"))):
        kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a named group
        value: str = m[kind]
        end = m.end()
        if kind == "NAME":
            kind = keyword(value, "NAME")
        if kind in _BARE:  # never a node's first or last token: no span, and the text only for an operator
            add_kind(kind)
            add_value(value if kind == "CMP" or kind == "EQEQ" else None)  # type: ignore[arg-type]
            add_span(None)  # type: ignore[arg-type]
            continue
        start = end - len(value)
        if kind == "_SEP":
            newlines = value.count("\n")
            if "\r" in value:  # \r\n is one line end, a lone \r is one too
                newlines += value.count("\r") - value.count("\r\n")
            if newlines:
                line += newlines
                line_start = start + max(value.rfind("\n"), value.rfind("\r")) + 1
            add_kind(kind)
            add_value(BLANK if newlines > 1 else None)  # type: ignore[arg-type]  # never part of a node
            add_span(None)  # type: ignore[arg-type]
            continue
        if kind == "_GAP":
            return None
        column = start - line_start + 1
        add_kind(kind)
        add_value(value)
        add_span(_new(Span, (line, column, line, column + end - start, start, end)))
    kinds.append(_END)
    values.append("")
    spans.append(None)  # type: ignore[arg-type]
    return kinds, values, spans


def _join(a: Span, b: Span) -> Span:
    return _new(Span, (a[0], a[1], b[2], b[3], a[4], b[5]))


_STATEMENTS = {"PARTICIPANT": "participant", "START": "start_stmt", "MAX_TURNS": "max_turns",
               "CONTEXT": "context_init", "NAME": "rule", "STAR": "rule", "HANDOFF": "handoff",
               "OTHERWISE": "otherwise", "ORDERING": "ordering", "EXPECT": "expect_stmt", "TTL": "ttl"}
_BLOCK_KINDS = frozenset({"WORKFLOW", "CONSULTING", "CONVERSATION", "DISCUSSION"})
_SIMPLE_TARGETS = {"STAY": "stay", "NEXT": "next", "INITIATOR": "initiator", "PREVIOUS": "previous"}
_LITERAL_KINDS = frozenset({"STRING", "NUMBER", "TRUE", "FALSE", "NULL"})


class FastParser:
    """One parse of one token list (see `parse`)."""

    def __init__(self, kinds: list[str], values: list[str], spans: list[Span], decoders: Decoders,
                 blank_lines: bool = False) -> None:
        self.k, self.v, self.s = kinds, values, spans
        self.i = 0
        self.decode_string, self.decode_number, self.decode_duration = decoders
        #: mark the blocks and statements a blank line precedes (`blank_before`): what
        #: `parser.attach_layout` does for a text without comments
        self.blank_lines = blank_lines

    def separator(self) -> bool:
        """Skip a `_SEP` if one comes next: does it hold a blank line (when blank lines are marked)?"""
        i = self.i
        if self.k[i] != "_SEP":
            return False
        self.i = i + 1
        return self.blank_lines and self.v[i] is BLANK

    # -- tokens ------------------------------------------------------------------
    def expect(self, kind: str) -> int:
        i = self.i
        if self.k[i] != kind:
            raise _Bail
        self.i = i + 1
        return i

    def ident(self) -> ast.Ident:
        i = self.i
        if self.k[i] != "NAME":
            raise _Bail
        self.i = i + 1
        return _Ident(self.s[i], self.v[i])

    def string(self, i: int) -> ast.StringLit:
        return _StringLit(self.s[i], self.decode_string(self.v[i]))

    def whole_number(self, i: int) -> ast.Number:
        value = self.decode_number(self.v[i])
        if not isinstance(value, int):
            raise _Bail
        return _Number(self.s[i], value, self.v[i])

    # -- file and blocks ----------------------------------------------------------
    def file(self) -> ast.FlowFile:
        k = self.k
        blank = self.separator()
        blocks: list[ast.Block] = []
        while k[self.i] != _END:
            blocks.append(self.block(blank))
            blank = self.separator()
        span = _join(blocks[0].span, blocks[-1].span) if blocks else Span.point()
        return _FlowFile(span, tuple(blocks))

    def block(self, blank_before: bool) -> ast.Block:
        k, s = self.k, self.s
        kind_i = self.i
        if k[kind_i] not in _BLOCK_KINDS:
            raise _Bail
        self.i += 1
        name = self.ident()
        title = None
        if k[self.i] == "STRING":
            title = self.string(self.i)
            self.i += 1
        self.expect("LBRACE")
        blank = self.separator()
        statements: list[ast.Statement] = []
        statement = self.statement
        while k[self.i] != "RBRACE":
            stmt = statement()
            statements.append(replace(stmt, blank_before=True) if blank else stmt)
            kind = k[self.i]
            if kind == "_SEP":
                blank = self.separator()
            elif kind != "RBRACE":
                raise _Bail
        close = self.i
        self.i += 1
        return _Block(_join(s[kind_i], s[close]), self.v[kind_i], s[kind_i], name,  # type: ignore[arg-type]
                         title, tuple(statements), s[close], blank_before=blank_before)

    def statement(self) -> ast.Statement:
        method = _STATEMENTS.get(self.k[self.i])
        if method is None:
            raise _Bail
        stmt: ast.Statement = getattr(self, method)()  # the method named for the statement's first token
        return stmt

    # -- statements -----------------------------------------------------------------
    def rule(self) -> ast.Rule:
        k, s = self.k, self.s
        i = self.i
        source = None if k[i] == "STAR" else _Ident(s[i], self.v[i])
        if k[i + 1] != "ARROW":
            raise _Bail
        self.i = i + 2
        target = self.target()
        end = target.span
        terms: tuple[ast.Term, ...] = ()
        if k[self.i] == "WHEN":
            self.i += 1
            cond = self.disjunction()
            if type(cond) is _Conj:
                terms = tuple(cond)
                end = cond[-1].span
            else:
                terms = (cond,)
                end = cond.span
        priority = None
        if k[self.i] == "PRIORITY":
            p = self.i + 1
            if k[p] != "NUMBER":
                raise _Bail
            priority = self.whole_number(p)
            end = s[p]
            self.i = p + 1
        if terms and ast.too_deep(terms) is not None:
            raise _Bail  # lark's reading reports it (TF002)
        return _Rule(_join(s[i], end), source, s[i], target, terms, priority)

    def participant(self) -> ast.Participant:
        k, s, v = self.k, self.s, self.v
        kw = self.i
        self.i += 1
        name = self.ident()
        end = name.span
        desc = role = role_span = None
        tools: Optional[tuple[ast.Ident, ...]] = None
        if k[self.i] == "STRING":
            desc = self.string(self.i)
            end = desc.span
            self.i += 1
        if k[self.i] in ("INITIATOR", "RESPONDENT"):
            role, role_span = v[self.i], s[self.i]
            end = role_span
            self.i += 1
        if k[self.i] == "TOOLS":
            self.i += 1
            self.expect("LSQB")
            names: list[ast.Ident] = []
            if k[self.i] == "NAME":
                names.append(self.ident())
                while k[self.i] == "COMMA":
                    self.i += 1
                    names.append(self.ident())
            end = s[self.expect("RSQB")]
            tools = tuple(names)
        return _Participant(_join(s[kw], end), name, desc, role, role_span, tools)  # type: ignore[arg-type]

    def start_stmt(self) -> ast.Start:
        kw = self.i
        self.i += 1
        name = self.ident()
        return _Start(_join(self.s[kw], name.span), name)

    def max_turns(self) -> ast.MaxTurns:
        kw = self.i
        self.i += 1
        n = self.expect("NUMBER")
        return _MaxTurns(_join(self.s[kw], self.s[n]), self.whole_number(n))

    def context_init(self) -> ast.ContextInit:
        kw = self.i
        self.i += 1
        key = self.ident()
        self.expect("EQUAL")
        value = self.literal()
        return _ContextInit(_join(self.s[kw], value.span), key, value)

    def handoff(self) -> ast.Handoff:
        kw = self.i
        self.i += 1
        source = self.ident()
        self.expect("ARROW")
        target = self.target()
        self.expect("VIA")
        tool = self.ident()
        end = tool.span
        desc = None
        if self.k[self.i] == "STRING":
            desc = self.string(self.i)
            end = desc.span
            self.i += 1
        return _Handoff(_join(self.s[kw], end), source, target, tool, desc)

    def otherwise(self) -> ast.Otherwise:
        kw = self.i
        self.i += 1
        self.expect("ARROW")
        target = self.target()
        return _Otherwise(_join(self.s[kw], target.span), target)

    def ordering(self) -> ast.Ordering:
        kw = self.i
        self.i += 1
        value = self.ident()
        return _Ordering(_join(self.s[kw], value.span), value)

    def expect_stmt(self) -> ast.Expect:
        kw = self.i
        self.i += 1
        name = self.ident()
        duration = self.duration()
        action = self.ident()
        return _Expect(_join(self.s[kw], action.span), name, duration, action)

    def ttl(self) -> ast.Ttl:
        kw = self.i
        self.i += 1
        duration = self.duration()
        return _Ttl(_join(self.s[kw], duration.span), duration)

    def duration(self) -> ast.Duration:
        i = self.expect("DURATION")
        amount, unit = self.decode_duration(self.v[i])
        return _Duration(self.s[i], amount, unit)

    # -- targets, literals ---------------------------------------------------------------
    def target(self) -> ast.Target:
        k, s = self.k, self.s
        i = self.i
        kind = k[i]
        self.i = i + 1
        if kind == "NAME":
            span = s[i]
            return _Target(span, "participant", _Ident(span, self.v[i]))
        if kind == "TERMINATE":
            if k[i + 1] == "STRING":
                self.i = i + 2
                reason = self.string(i + 1)
                return _Target(_join(s[i], s[i + 1]), "terminate", None, reason)
            return _Target(s[i], "terminate", None, None)
        simple = _SIMPLE_TARGETS.get(kind)
        if simple is None:
            raise _Bail
        return _Target(s[i], simple)  # type: ignore[arg-type]  # a value of _SIMPLE_TARGETS

    def literal(self) -> ast.Literal:
        i = self.i
        kind = self.k[i]
        span, raw = self.s[i], self.v[i]
        self.i = i + 1
        if kind == "STRING":
            return _Literal(span, "string", self.decode_string(raw), raw)
        if kind == "NUMBER":
            value = self.decode_number(raw)
            return _Literal(span, "int" if isinstance(value, int) else "float", value, raw)
        if kind == "NULL":
            return _Literal(span, "null", None, "null")
        if kind == "TRUE" or kind == "FALSE":
            return _Literal(span, "bool", kind == "TRUE", raw)
        raise _Bail

    # -- conditions (as AstBuilder shapes them: see parser.AstBuilder) ----------------------
    def disjunction(self) -> _Condition:
        first = self.conjunction()
        if self.k[self.i] != "OR":
            return first
        parts = [first]
        while self.k[self.i] == "OR":
            self.i += 1
            parts.append(self.conjunction())
        flat: list[ast.Term] = []
        for c in parts:
            if type(c) is ast.AnyTerm:
                flat.extend(c.terms)
            else:
                flat.append(_one(c))
        return _AnyTerm(_join(flat[0].span, flat[-1].span), tuple(flat))

    def conjunction(self) -> _Condition:
        first = self.negation()
        if self.k[self.i] != "AND":
            return first
        out = _Conj()
        for c in self._and_operands(first):
            if type(c) is _Conj:
                out.extend(c)
            else:
                out.append(c)
        return out

    def _and_operands(self, first: _Condition) -> list[_Condition]:
        operands = [first]
        while self.k[self.i] == "AND":
            self.i += 1
            operands.append(self.negation())
        return operands

    def negation(self) -> _Condition:
        k = self.k
        i = self.i
        kind = k[i]
        if kind == "NOT":
            self.i = i + 1
            inner = _one(self.negation())
            return _NotTerm(_join(self.s[i], inner.span), inner)
        if kind == "LPAR":
            self.i = i + 1
            group = self.disjunction()
            self.expect("RPAR")
            return group
        return self.term()

    def term(self) -> ast.Term:
        k, s = self.k, self.s
        i = self.i
        kind = k[i]
        if kind == "TOOL":
            self.i = i + 1
            tool = self.ident()
            return _ToolTerm(_join(s[i], tool.span), tool)
        if kind == "TEXT":
            if k[i + 1] != "CONTAINS" or k[i + 2] != "STRING":
                raise _Bail
            self.i = i + 3
            text = self.string(i + 2)
            return _TextTerm(_join(s[i], text.span), text)
        if kind == "CONTEXT":
            self.i = i + 1
            self.expect("DOT")
            return self.comparison(i, self.ident(), False)
        if kind == "LEN":
            self.i = i + 1
            self.expect("LPAR")
            self.expect("CONTEXT")
            self.expect("DOT")
            key = self.ident()
            self.expect("RPAR")
            return self.comparison(i, key, True)
        raise _Bail

    def comparison(self, kw: int, key: ast.Ident, length: bool) -> Union[ast.ContextTerm, ast.CompareTerm]:
        op = self.i
        kind = self.k[op]
        if kind == "EQEQ" and not length:
            self.i = op + 1
            value = self.literal()
            return _ContextTerm(_join(self.s[kw], value.span), key, value)
        if kind != "EQEQ" and kind != "CMP":
            raise _Bail
        self.i = op + 1
        value = self.literal()
        return _CompareTerm(_join(self.s[kw], value.span), key, self.v[op], value,  # type: ignore[arg-type]
                               length)


@final  # the parser tests `type(c) is _Conj`: final, so the other branch is a term
class _Conj(list[ast.Term]):
    """The terms of an `and` while parsing."""


#: a parsed condition: one term, or the terms of an `and`
_Condition = Union[ast.Term, _Conj]


def _one(cond: _Condition) -> ast.Term:
    if type(cond) is _Conj:
        return _AllTerm(_join(cond[0].span, cond[-1].span), tuple(cond))
    return cond


def parse(text: str, master: "re.Pattern[str]", decoders: Decoders) -> Optional[ast.FlowFile]:
    """The AST of `text`, or None when lark must read it. Its layout is complete when the
    text has no comment (`#` nowhere in it): blank lines are marked as `parser.attach_layout`
    marks them; otherwise the caller attaches the layout. `decoders`: (string, number,
    duration) functions from raw token text; any exception they raise means "let lark read it"."""
    toks = tokens(text, master)
    if toks is None:
        return None
    try:
        return FastParser(*toks, decoders, blank_lines="#" not in text).file()
    except _Bail:
        return None
    except Exception:  # a literal that does not decode: lark reports it
        return None
