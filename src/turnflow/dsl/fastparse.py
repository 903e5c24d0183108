"""The parser's fast path: a reading of flow.lark for valid files, a statement at a time.

lark's LALR parser is the grammar's home and the source of every error
message; driving it costs about 3 µs a token (`feed_token`, the callback
chain, lark `Token` objects). Nearly every file a user checks is valid, so
`parse_source` first tries this reader, which builds the same AST nodes with
the same spans through the same literal decoders:

- the common statements (a rule whose condition is up to three `tool`, `text
  contains` and `context.KEY OP LITERAL` terms joined by `and`; a participant, a
  handoff, `start`, `max_turns`, `context`, `otherwise`), a block's header and its
  closing brace are each matched by ONE compiled regex (`_Shapes`), written with the
  grammar's own terminals (NAME, STRING, the separator, the blanks) so that it
  accepts a statement only where the lexer would cut the same tokens; the nodes' spans
  come from the groups' positions, and the line from the separators the reader steps
  over (a statement never spans two lines);
- any other statement (`or`, `not`, parentheses, `len(...)`, a fourth term,
  `expect`, `ttl`, `ordering`, a spelling the shapes do not cover) is read by
  recursive descent over its tokens (`FastParser`): the lexer's master regex (one
  `finditer` from the statement's start to its separator, the same terminals in the
  same order).

On anything it does not recognise -- a syntax error, a literal that does not decode,
a character no terminal matches -- it gives up (`None`) and the caller parses the
whole text again with lark, so diagnostics never come from here.
A differential property test (tests/test_fastparse.py) keeps three readings equal
on generated, mutated, respaced and fixture files: lark's, this one by the shapes where
they apply, and this one by tokens only (`parse(..., shapes=False)`).
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields, replace
from functools import lru_cache
from typing import Any, Callable, Optional, TypeVar, Union, final

from turnflow.dsl import ast
from turnflow.dsl.lexer import KEYWORD_TYPES, FlowLexer
from turnflow.dsl.lexical import BLOCK_KINDS, KEYWORDS, PLAIN_STRING
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


class _ByTokens(Exception):
    """This statement is not one of the shapes: read it token by token."""


# -- the tokens of one statement (the statements the shapes do not cover) -------------------

@lru_cache(maxsize=4)
def _scanner(master: "re.Pattern[str]") -> "re.Pattern[str]":
    """`master` with one more alternative, last: any character that is not a blank
    (`_GAP`: a character no terminal matches). Over a text that does not end in
    blanks, `finditer` then matches at every position it reaches, so it never skips
    text: no gap check per token, and no retry at every offset of a blank run."""
    assert master.pattern.endswith(")")
    return re.compile(master.pattern[:-1] + r"|(?P<_GAP>[^ \t\f]))", master.flags)


def statement_tokens(text: str, scanner: "re.Pattern[str]", pos: int, stop: int, line: int,
                     line_start: int) -> tuple[list[str], list[str], list[Span], int]:
    """The kinds (reserved words resolved), values and spans of the tokens of the statement
    that starts at `pos` on line `line` (whose first character is at `line_start`): up to the
    next separator or `}` (excluded), ending with `$END`; and where its last token ends.
    `scanner`: `_scanner(master)`; `stop`: where the text's trailing blanks begin.
    Raises `_Bail` at a character that starts no token."""
    kinds: list[str] = []
    values: list[str] = []
    spans: list[Span] = []
    keyword = KEYWORD_TYPES.get
    col0 = line_start - 1
    end = pos
    for m in scanner.finditer(text, pos, stop):
        kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a named group
        if kind == "_SEP" or kind == "RBRACE":
            break
        if kind == "_GAP":
            raise _Bail
        start, end = m.span(kind)
        value = text[start:end]
        kinds.append(keyword(value, "NAME") if kind == "NAME" else kind)
        values.append(value)
        spans.append(_new(Span, (line, start - col0, line, end - col0, start, end)))
    kinds.append(_END)
    values.append("")
    spans.append(None)  # type: ignore[arg-type]
    return kinds, values, spans, end


# -- the statement shapes --------------------------------------------------------------------
#
# Each shape matches only a run of text that the lexer cuts into the same tokens:
#
# - a name is `[A-Za-z_][A-Za-z0-9_]*`: where it stops, the grammar's NAME stops too, unless the
#   next character is `-` or a non-ASCII word character; what a shape lets follow a name never
#   starts with either (a blank, punctuation, or `->`, which a NAME never runs into), except at
#   the end of the shape, where `_Reader.statements` requires a separator or `}`: so a name with a
#   `-` or a non-ASCII letter sends its statement to the token reader;
# - a word followed by a word has blanks between them (`+`);
# - a number is `-?[0-9]+` (with `.[0-9]+` in a literal), which the lexer reads as a NUMBER of
#   exactly that text when what follows is not `[\w.]` (not a DURATION: no unit; not an
#   exponent: no `e`): what follows it is a blank, or the end of the shape;
# - a string is `lexical.PLAIN_STRING`, a STRING without escapes: a string with escapes sends
#   its statement to the token reader;
# - in a text without `#`, the separator (the grammar's `_SEP`, which then holds no comment) is
#   last in the pattern, written as one character class repeated, so it is matched as greedily as
#   the lexer matches it; in a text with a `#`, `_Reader.statements` matches the separator after the
#   statement with the grammar's own `_SEP` (`_Shapes.gap`).
#
# No group is repeated: the engine keeps a frame, with a copy of the groups' marks, for each
# repetition of a group, so a long string dense with escapes, a long run of comments or a long
# tool list read by a pattern of many groups would cost several times its size in memory
# (tests/test_limits_lexer_memory.py); a tool list is one character class repeated, split by
# `_Reader.tool_list`.
#
# The shapes use no lookahead, and an optional part is written `(?:X|)`, not `(?:X)?` (which
# Python's regex engine runs as a counted repeat, several times dearer): the regex costs
# about what the lexer's `finditer` costs for the same tokens. They do not check reserved
# words: a name that is one (`start -> x`, `tools [via]`) sends the statement to the token
# reader, which gives up where lark reports an error.

#: the literals a word can be (`true`, `false`, `null`): kind and value
_WORD_LITERALS: dict[str, tuple[str, Any]] = {"true": ("bool", True), "false": ("bool", False),
                                              "null": ("null", None)}
_SIMPLE_TARGET_WORDS = {"stay": "stay", "next": "next", "initiator": "initiator", "previous": "previous"}
_KEYWORDS = KEYWORDS
#: the grammar's `_SEP` in a text without comments: a line end or `;`, then blanks, line ends and
#: `;` (tests/test_fastparse.py checks the grammar's `_SEP` against this reading)
PLAIN_SEP = r"[;\n\r][ \t\f;\n\r]*"
#: terms of a rule's condition the statement shape reads (`when T1 and T2 and T3`)
_SHAPE_TERMS = 3


@final
class _Shapes:
    """The compiled statement shapes of one lexer (see the comment above) and their groups' indexes;
    `commented`: for a text that holds a `#` (a comment may be part of a separator)."""

    def __init__(self, lexer: FlowLexer, commented: bool) -> None:
        t = {name: term.pattern.to_regexp() for name, term in lexer.terminals_by_name.items()}
        assert all(re.compile(t[n]).groups == 0 for n in ("_SEP", "ARROW", "EQEQ", "CMP", "EQUAL", "STAR",
                                                             "LBRACE"))  # no group of their own
        blank = lexer.blank
        b0, b1 = f"{blank}*", f"{blank}+"
        name = "[A-Za-z_][A-Za-z0-9_]*"
        string = PLAIN_STRING
        sep = f"(?:(?P<sep>{t['_SEP'] if commented else PLAIN_SEP})|)"
        number = "-?[0-9]+"
        literal = rf"{string}|-?[0-9]+(?:\.[0-9]+|)|{name}"  # a word: true, false or null
        arrow = f"{b0}{t['ARROW']}{b0}"
        op = f"{t['EQEQ']}|{t['CMP']}"

        def target(p: str) -> str:
            return f"(?P<{p}tgt>{name})(?:{b0}(?P<{p}reason>{string})|)"

        def term(i: int) -> str:
            return (f"(?P<t{i}>tool{b1}(?P<t{i}tool>{name})|text{b1}contains{b0}(?P<t{i}text>{string})"
                    f"|context{b0}\\.{b0}(?P<t{i}key>{name}){b0}(?P<t{i}op>{op}){b0}(?P<t{i}lit>{literal}))")

        terms = term(_SHAPE_TERMS)
        for i in range(_SHAPE_TERMS - 1, 0, -1):
            terms = f"{term(i)}(?:{b1}and{b1}{terms}|)"
        shapes = [  # `otherwise -> ...` before the rule, the most frequent; the others start with their keyword
            f"otherwise{arrow}{target('o')}",
            f"(?P<rsrc>{name}|{t['STAR']}){arrow}{target('r')}(?:{b1}when{b1}{terms}|)"
            f"(?:{b1}priority{b1}(?P<rprio>{number})|)",
            f"participant{b1}(?P<pname>{name})(?:{b0}(?P<pdesc>{string})|)(?:{b1}(?P<prole>initiator|respondent)|)"
            f"(?:{b1}tools{b0}\\[{b0}(?P<plist>[A-Za-z0-9_, \\t\\f]*)\\]|)",  # names: `participant`
            f"handoff{b1}(?P<hsrc>{name}){arrow}{target('h')}{b1}via{b1}(?P<htool>{name})"
            f"(?:{b0}(?P<hdesc>{string})|)",
            f"context{b1}(?P<ckey>{name}){b0}{t['EQUAL']}{b0}(?P<clit>{literal})",
            f"start{b1}(?P<sname>{name})",
            f"max_turns{b1}(?P<mvalue>{number})",
        ]
        flags = lexer.master.flags
        tail = f"(?P<tail>{b0}{sep})"
        #: one statement (any shape: `stmt`), and in a text without comments the blanks after it and
        #: the separator, if one follows (`tail`)
        self.statement = re.compile(f"(?P<stmt>{'|'.join(shapes)})" + ("" if commented else tail), flags)
        #: whether `statement` reads the separator
        self.separated = not commented
        #: a block's header, its `{`, the blanks after it and the separator, if one follows
        self.header = re.compile(f"(?P<kind>{'|'.join(BLOCK_KINDS)}){b1}(?P<name>{name})"
                                 f"(?:{b0}(?P<title>{string})|){b0}{t['LBRACE']}{tail}", flags)
        #: the blanks and the separator, if one follows, after a `}` or a statement read by tokens
        self.gap = re.compile(tail, flags)
        self.name = re.compile(f"{name}\\Z", flags)
        self.scanner = _scanner(lexer.master)
        # Each group's index in `Match.groups()` (its number, for `Match.start`, is one more): the
        # reader takes a match's groups at once and asks only for the starts it cannot work out
        # (`Match.regs` builds every group's span, ~2.5 µs for this pattern).
        g = {name: number - 1 for name, number in self.statement.groupindex.items()}
        self.stmt, self.tail, self.sep = g["stmt"], g.get("tail", 0), g.get("sep", 0)
        self.rule, self.participant, self.handoff = g["rsrc"], g["pname"], g["hsrc"]
        self.rule_groups = g["rsrc"], g["rtgt"], g["rreason"], g["rprio"]
        self.terms = [tuple(g[f"t{i}{part}"] for part in ("", "tool", "text", "key", "op", "lit"))
                      for i in range(1, _SHAPE_TERMS + 1)]
        self.participant_groups = g["pname"], g["pdesc"], g["prole"], g["plist"]
        self.handoff_groups = g["hsrc"], g["htgt"], g["hreason"], g["htool"], g["hdesc"]
        self.context_groups = g["ckey"], g["clit"]
        self.start_group, self.max_turns_group = g["sname"], g["mvalue"]
        self.otherwise_groups = g["otgt"], g["oreason"]
        h = {name: number - 1 for name, number in self.header.groupindex.items()}
        self.header_groups = h["kind"], h["name"], h["title"], h["sep"]


@lru_cache(maxsize=8)
def _shapes(lexer: FlowLexer, commented: bool) -> _Shapes:
    return _Shapes(lexer, commented)


def _join(a: Span, b: Span) -> Span:
    return _new(Span, (a[0], a[1], b[2], b[3], a[4], b[5]))


_STATEMENTS = {"PARTICIPANT": "participant", "START": "start_stmt", "MAX_TURNS": "max_turns",
               "CONTEXT": "context_init", "NAME": "rule", "STAR": "rule", "HANDOFF": "handoff",
               "OTHERWISE": "otherwise", "ORDERING": "ordering", "EXPECT": "expect_stmt", "TTL": "ttl"}
_SIMPLE_TARGETS = {"STAY": "stay", "NEXT": "next", "INITIATOR": "initiator", "PREVIOUS": "previous"}
_LITERAL_KINDS = frozenset({"STRING", "NUMBER", "TRUE", "FALSE", "NULL"})


class FastParser:
    """The recursive-descent reading of one statement's tokens (see `statement_tokens`)."""

    def __init__(self, kinds: list[str], values: list[str], spans: list[Span], decoders: Decoders) -> None:
        self.k, self.v, self.s = kinds, values, spans
        self.i = 0
        self.decode_string, self.decode_number, self.decode_duration = decoders

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



# -- the reader ---------------------------------------------------------------------------------

class _Reader:
    """One parse of one text (see `parse`): blocks and statements by their shapes, a statement
    of no shape by its tokens. `line` and `col0` (the offset of the line end before the line's
    first character) are those of the statement being read: a statement is on one line.
    The shapes' methods take the match `m`, its groups `g` (`m.groups()`), where the statement
    starts (`pos`) and ends (`end`, before the blanks after it)."""

    def __init__(self, text: str, lexer: FlowLexer, decoders: Decoders, by_shapes: bool = True) -> None:
        self.text = text
        self.shapes = _shapes(lexer, "#" in text)
        #: False: read every statement by its tokens (the tests compare both readings)
        self.by_shapes = by_shapes
        self.decoders = decoders
        self.decode_string, self.decode_number, _ = decoders
        self.stop = len(text.rstrip(" \t\f"))
        #: mark the blocks and statements a blank line precedes (`blank_before`): what
        #: `parser.attach_layout` does for a text without comments
        self.blank_lines = "#" not in text
        self.cr = "\r" in text  # \r\n is one line end, a lone \r is one too
        self.line, self.col0 = 1, -1

    def separator(self, sep: Optional[str], after: int) -> bool:
        """Step over the separator `sep` (None: no separator), which ends at `after`: count its line
        ends; does it hold a blank line (when blank lines are marked)?"""
        if sep is None:
            return False
        newlines = sep.count("\n")
        if self.cr:
            newlines += sep.count("\r") - sep.count("\r\n")
            if newlines:
                self.col0 = after - len(sep) + max(sep.rfind("\n"), sep.rfind("\r"))
        elif newlines:
            self.col0 = after - len(sep) + sep.rfind("\n")
        self.line += newlines
        return newlines > 1 and self.blank_lines

    def span(self, start: int, end: int) -> Span:
        """The span of `text[start:end]`, on the current line."""
        line, col0 = self.line, self.col0
        return _new(Span, (line, start - col0, line, end - col0, start, end))

    # -- file and blocks ----------------------------------------------------------------------
    def file(self) -> ast.FlowFile:
        text, n = self.text, len(self.text)
        m = self.shapes.gap.match(text)
        assert m is not None  # every part of it is optional
        pos = m.end()
        blank = self.separator(m.group("sep"), pos)
        blocks: list[ast.Block] = []
        while pos < n:
            block, pos, next_blank = self.block(pos, blank)
            blocks.append(block)
            blank = next_blank
        span = _join(blocks[0].span, blocks[-1].span) if blocks else Span.point()
        return _FlowFile(span, tuple(blocks))

    def block(self, pos: int, blank_before: bool) -> tuple[ast.Block, int, bool]:
        """The block at `pos`, where the text after it continues, and whether a blank line follows it."""
        text, shapes = self.text, self.shapes
        m = shapes.header.match(text, pos)
        if m is None:
            raise _Bail
        g = m.groups()
        kind_group, name_group, title_group, sep_group = shapes.header_groups
        kind, name, title, sep = g[kind_group], g[name_group], g[title_group], g[sep_group]
        if name in _KEYWORDS:
            raise _Bail
        kind_span = self.span(pos, pos + len(kind))
        start = m.start(name_group + 1)
        block_name = _Ident(self.span(start, start + len(name)), name)
        if title is not None:
            start = m.start(title_group + 1)
            title = _StringLit(self.span(start, start + len(title)), self.decode_string(title))
        pos = m.end()
        statements, pos = self.statements(pos, self.separator(sep, pos))
        close_span = self.span(pos, pos + 1)
        m = shapes.gap.match(text, pos + 1)
        assert m is not None  # every part of it is optional
        pos = m.end()
        blank = self.separator(m.group("sep"), pos)
        block = _Block(_join(kind_span, close_span), kind, kind_span, block_name, title,  # type: ignore[arg-type]
                       tuple(statements), close_span, blank_before=blank_before)
        return block, pos, blank

    def statements(self, pos: int, blank: bool) -> tuple[list[ast.Statement], int]:
        """The statements of the block body at `pos` (`blank`: a blank line precedes it), and where
        its `}` is."""
        text, shapes = self.text, self.shapes
        match = shapes.statement.match
        by_shapes, separated, rule = self.by_shapes, shapes.separated, shapes.rule
        stmt_group, tail_group, sep_group = shapes.stmt, shapes.tail, shapes.sep
        plain_lines = not self.cr  # line ends are `\n` alone: step over separators here
        blank_lines = self.blank_lines
        statements: list[ast.Statement] = []
        while not text.startswith("}", pos):
            m = match(text, pos) if by_shapes else None
            stmt: Optional[ast.Statement] = None
            if m is not None:
                g = m.groups()
                end = pos + len(g[stmt_group])
                if separated:
                    sep, after = g[sep_group], end + len(g[tail_group])
                else:
                    gap = shapes.gap.match(text, end)
                    assert gap is not None  # every part of it is optional
                    sep, after = gap.group("sep"), gap.end()
                if sep is not None or text.startswith("}", after):  # else a longer statement, or an error
                    try:
                        stmt = self.rule(m, g, pos, end) if g[rule] is not None else self.shaped(m, g, pos, end)
                    except _ByTokens:
                        pass
            if stmt is None:
                stmt, sep, after = self.by_tokens(pos)
            statements.append(replace(stmt, blank_before=True) if blank else stmt)
            if sep is None:
                blank = False
            elif plain_lines:  # `separator`, inline
                newlines = sep.count("\n")
                if newlines:
                    self.line += newlines
                    self.col0 = after - len(sep) + sep.rfind("\n")
                blank = newlines > 1 and blank_lines
            else:
                blank = self.separator(sep, after)
            pos = after
        return statements, pos

    # -- statements by their shapes ----------------------------------------------------------------
    def joined(self, start: int, last: Span) -> Span:
        """The span from `start` (on the current line) to the end of `last`, sharing `last`'s end
        (as lark's reading joins a node's first and last tokens: the same int objects, so an AST
        holds no more of them)."""
        line = self.line
        return _new(Span, (line, start - self.col0, line, last[3], start, last[5]))

    def shaped(self, m: "re.Match[str]", g: tuple[Any, ...], pos: int, end: int) -> ast.Statement:
        """The statement of a shape other than the rule's."""
        shapes = self.shapes
        if g[shapes.participant] is not None:
            return self.participant(m, g, pos, end)
        if g[shapes.handoff] is not None:
            return self.handoff(m, g, pos)
        key, lit = shapes.context_groups
        if g[key] is not None:
            value = self.literal(g[lit], end)
            return _ContextInit(self.joined(pos, value.span), self.ident(g[key], m.start(key + 1)), value)
        name = g[shapes.start_group]
        if name is not None:
            ident = self.ident(name, end - len(name))
            return _Start(self.joined(pos, ident.span), ident)
        raw = g[shapes.max_turns_group]
        if raw is not None:
            number = self.decode_number(raw)
            if not isinstance(number, int):
                raise _Bail
            value_span = self.span(end - len(raw), end)
            return _MaxTurns(self.joined(pos, value_span), _Number(value_span, number, raw))
        tgt, reason = shapes.otherwise_groups
        target = self.target(g[tgt], m.start(tgt + 1), g[reason])
        return _Otherwise(self.joined(pos, target.span), target)

    def rule(self, m: "re.Match[str]", g: tuple[Any, ...], pos: int, end: int) -> ast.Rule:
        line, col0 = self.line, self.col0
        src, tgt, reason, prio = self.shapes.rule_groups
        name = g[src]
        stop = pos + len(name)
        column = pos - col0
        source_span = _new(Span, (line, column, line, stop - col0, pos, stop))
        if name == "*":
            source = None
        elif name in _KEYWORDS:
            raise _ByTokens
        else:
            source = _Ident(source_span, name)
        name = g[tgt]
        start = m.start(tgt + 1)
        if name in _KEYWORDS or g[reason] is not None:
            target = self.target(name, start, g[reason])
        else:  # a participant: the common case, inline
            stop = start + len(name)
            span = _new(Span, (line, start - col0, line, stop - col0, start, stop))
            target = _Target(span, "participant", _Ident(span, name))
        last = target.span
        terms: tuple[ast.Term, ...] = ()
        if g[self.shapes.terms[0][0]] is not None:
            terms = self.conjunction(m, g)
            last = terms[-1].span
        priority = None
        raw = g[prio]
        if raw is not None:  # the rule's last token
            value = self.decode_number(raw)
            if not isinstance(value, int):
                raise _Bail
            start = end - len(raw)
            last = _new(Span, (line, start - col0, line, end - col0, start, end))
            priority = _Number(last, value, raw)
        return _Rule(_new(Span, (line, column, line, last[3], pos, last[5])), source, source_span, target, terms,
                     priority)

    def conjunction(self, m: "re.Match[str]", g: tuple[Any, ...]) -> tuple[ast.Term, ...]:
        """The terms of a rule's `when T1 and T2 ...` (each term's last token ends it)."""
        line, col0 = self.line, self.col0
        terms: list[ast.Term] = []
        for whole, tool, text, key, op, lit in self.shapes.terms:
            term = g[whole]
            if term is None:
                break
            start = m.start(whole + 1)
            column, end = start - col0, start + len(term)
            last_column = end - col0  # a term's span shares its end with its last token's
            name = g[tool]
            if name is not None:
                if name in _KEYWORDS:
                    raise _ByTokens
                first = end - len(name)
                terms.append(_ToolTerm(_new(Span, (line, column, line, last_column, start, end)),
                                       _Ident(_new(Span, (line, first - col0, line, last_column, first, end)), name)))
                continue
            raw = g[text]
            if raw is not None:
                first = end - len(raw)
                terms.append(_TextTerm(_new(Span, (line, column, line, last_column, start, end)),
                                       _StringLit(_new(Span, (line, first - col0, line, last_column, first, end)),
                                                  self.decode_string(raw))))
                continue
            key_ident = self.ident(g[key], m.start(key + 1))
            value = self.literal(g[lit], end)
            span = self.joined(start, value.span)
            if g[op] == "==":
                terms.append(_ContextTerm(span, key_ident, value))
            else:
                terms.append(_CompareTerm(span, key_ident, g[op], value))
        return tuple(terms)

    def target(self, name: str, start: int, reason: Optional[str]) -> ast.Target:
        """The target `name` (at `start`), followed by the string `reason` (`terminate "why"`), if any,
        which then ends the statement or comes before a blank."""
        end = start + len(name)
        span = self.span(start, end)
        if name not in _KEYWORDS:
            if reason is not None:
                raise _ByTokens
            return _Target(span, "participant", _Ident(span, name))
        if name == "terminate":
            if reason is None:
                return _Target(span, "terminate", None, None)
            reason_start = self.text.index('"', end)  # blanks only between the name and the string
            reason_end = reason_start + len(reason)
            why = _StringLit(self.span(reason_start, reason_end), self.decode_string(reason))
            return _Target(self.joined(start, why.span), "terminate", None, why)
        simple = _SIMPLE_TARGET_WORDS.get(name)
        if simple is None or reason is not None:
            raise _ByTokens
        return _Target(span, simple)  # type: ignore[arg-type]  # a value of _SIMPLE_TARGET_WORDS

    def literal(self, raw: str, end: int) -> ast.Literal:
        """The literal `raw`, which ends at `end`."""
        span = self.span(end - len(raw), end)
        first = raw[0]
        if first == '"':
            return _Literal(span, "string", self.decode_string(raw), raw)
        if first == "-" or "0" <= first <= "9":
            value = self.decode_number(raw)
            return _Literal(span, "int" if isinstance(value, int) else "float", value, raw)
        word = _WORD_LITERALS.get(raw)
        if word is None:
            raise _ByTokens
        return _Literal(span, word[0], word[1], raw)  # type: ignore[arg-type]  # a kind of _WORD_LITERALS

    def ident(self, name: str, start: int) -> ast.Ident:
        """The NAME `name`, at `start` (not a reserved word)."""
        if name in _KEYWORDS:
            raise _ByTokens
        line, col0, end = self.line, self.col0, start + len(name)  # `span`, inline (the most frequent)
        return _Ident(_new(Span, (line, start - col0, line, end - col0, start, end)), name)

    def string(self, raw: Optional[str], start: int) -> Optional[ast.StringLit]:
        """The STRING `raw` at `start`, or None when `raw` is."""
        if raw is None:
            return None
        line, col0, end = self.line, self.col0, start + len(raw)
        return _StringLit(_new(Span, (line, start - col0, line, end - col0, start, end)), self.decode_string(raw))

    def participant(self, m: "re.Match[str]", g: tuple[Any, ...], pos: int, end: int) -> ast.Participant:
        name, desc, role, names = self.shapes.participant_groups
        ident = self.ident(g[name], m.start(name + 1))
        last = ident.span
        description = None
        if g[desc] is not None:
            description = self.string(g[desc], m.start(desc + 1))
            last = description.span  # type: ignore[union-attr]  # a string
        role_span = None
        if g[role] is not None:
            start = m.start(role + 1)
            last = role_span = self.span(start, start + len(g[role]))
        tools: Optional[tuple[ast.Ident, ...]] = None
        listed = g[names]
        if listed is None:
            span = self.joined(pos, last)
        else:  # up to the `]`
            tools = self.tool_list(listed, m.start(names + 1))
            span = self.span(pos, end)
        return _Participant(span, ident, description, g[role], role_span, tools)

    def tool_list(self, listed: str, start: int) -> tuple[ast.Ident, ...]:
        """The names of `tools [...]`, whose text between the brackets, `listed` (at `start`), holds only
        name characters, commas and blanks. (The shape matches it as one character class repeated:
        a repeated group would keep a frame per name in the regex engine, ~280 bytes per byte of
        a long list.)"""
        if not listed.strip(" \t\f"):
            return ()
        names = []
        valid = self.shapes.name.match
        for piece in listed.split(","):
            name = piece.strip(" \t\f")
            if not valid(name):  # an empty place, blanks inside a name, a leading digit: not a list of names
                raise _ByTokens
            names.append(self.ident(name, start + piece.index(name)))
            start += len(piece) + 1
        return tuple(names)

    def handoff(self, m: "re.Match[str]", g: tuple[Any, ...], pos: int) -> ast.Handoff:
        src, tgt, reason, tool, desc = self.shapes.handoff_groups
        source = self.ident(g[src], m.start(src + 1))
        target = self.target(g[tgt], m.start(tgt + 1), g[reason])
        tool_ident = self.ident(g[tool], m.start(tool + 1))
        description = self.string(g[desc], m.start(desc + 1)) if g[desc] is not None else None
        last = description.span if description is not None else tool_ident.span
        return _Handoff(self.joined(pos, last), source, target, tool_ident, description)

    # -- a statement of no shape, by its tokens -------------------------------------------------
    def by_tokens(self, pos: int) -> tuple[ast.Statement, Optional[str], int]:
        """The statement at `pos` read by recursive descent over its tokens, the separator after
        it (None: none) and where the text after that continues."""
        text = self.text
        kinds, values, spans, end = statement_tokens(text, self.shapes.scanner, pos, self.stop, self.line,
                                                     self.col0 + 1)
        reader = FastParser(kinds, values, spans, self.decoders)
        stmt = reader.statement()
        if kinds[reader.i] != _END:
            raise _Bail
        gap = self.shapes.gap.match(text, end)
        assert gap is not None  # every part of it is optional
        sep, after = gap.group("sep"), gap.end()
        if sep is None and not text.startswith("}", after):
            raise _Bail
        return stmt, sep, after


def parse(text: str, lexer: FlowLexer, decoders: Decoders, shapes: bool = True) -> Optional[ast.FlowFile]:
    """The AST of `text`, or None when lark must read it. Its layout is complete when the
    text has no comment (`#` nowhere in it): blank lines are marked as `parser.attach_layout`
    marks them; otherwise the caller attaches the layout. `lexer`: the parser's `FlowLexer`
    (its terminals). `decoders`: (string, number, duration) functions from raw token text;
    any exception they raise means "let lark read it". `shapes=False` reads every statement
    by its tokens (what the tests compare the shapes with)."""
    reader = _Reader(text, lexer, decoders, by_shapes=shapes)
    try:
        return reader.file()
    except _Bail:
        return None
    except Exception:  # a literal that does not decode: lark reports it
        return None
