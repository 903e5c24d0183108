"""Text → AST. The lark LALR parser is built once; a Transformer builds the
AST (it only builds); lexical and syntax errors become TF001 / TF002
diagnostics with exact positions. `parse_source` never raises on any text.
A valid file is read first by the fast path (`turnflow.dsl.fastparse`, the
same AST); whatever it does not read, lark parses, so diagnostics are lark's.
"""

from __future__ import annotations

import bisect
import gc
import json
import re
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Iterator, Optional, Union, cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from turnflow import process
from turnflow.diagnostics.diagnostic import Diagnostic, Related
from turnflow.dsl import ast, fastparse
from turnflow.dsl.lexer import FlowLexer
from turnflow.dsl.lexical import KEYWORDS, STATEMENT_KEYWORDS, STRING
from turnflow.source import SourceText, Span
import hashlib
import os
import sys
import difflib

GRAMMAR_FILE = "flow.lark"


def grammar_text() -> str:
    return resources.files("turnflow.dsl").joinpath(GRAMMAR_FILE).read_text(encoding="utf-8")


def _cache_file() -> "str | bool":
    """Where the built LALR tables are cached: the user's own cache directory
    (never a shared temporary directory, since the cache is a pickle). Only
    when the process turned the cache on (`turnflow.process.TABLE_CACHE`, the
    CLI does); `TURNFLOW_NO_CACHE=1`, or a directory that cannot be created,
    turns it off."""

    if not process.TABLE_CACHE or os.environ.get("TURNFLOW_NO_CACHE"):
        return False
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "turnflow")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    digest = hashlib.sha256(grammar_text().encode("utf-8")).hexdigest()[:16]
    return os.path.join(folder, f"flow-lalr-{digest}-py{sys.version_info[0]}{sys.version_info[1]}.pickle")


@lru_cache(maxsize=None)
def build_parser(strict: bool = False) -> Lark:
    """The LALR parser, built once per process (and its tables cached across
    processes, see `_cache_file`). The AST is built during the parse (no
    intermediate tree); tokens come from `FlowLexer`. Strict mode (tests) uses
    lark's own basic lexer so that colliding terminals and grammar conflicts
    are both reported."""
    if strict:
        return Lark(grammar_text(), parser="lalr", lexer="basic", maybe_placeholders=True, strict=True)
    return Lark(grammar_text(), parser="lalr", lexer=FlowLexer, maybe_placeholders=True,
                transformer=AstBuilder(), cache=_cache_file())


class ParseError(Exception):
    """Raised by `turnflow.parse` when the text has syntax or literal errors."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        first = diagnostics[0]
        super().__init__(f"{first.path}:{first.span.line}:{first.span.column}: {first.code} {first.message}")


class _LiteralError(Exception):
    def __init__(self, message: str, token: Optional[str] = None, span: Optional[Span] = None):
        super().__init__(message)
        self.token = token
        self.span = span


# --------------------------------------------------------------------------
#  Literal decoding
# --------------------------------------------------------------------------
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_FLOAT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_DURATION_RE = re.compile(r"([0-9]+)(ms|s|m|h|d)\Z")


def decode_string(tok: str) -> str:
    """A STRING token's text (a lark `Token` or the plain text of one) decoded."""
    raw = str(tok)
    if "\\" not in raw and raw.isprintable():
        return raw[1:-1]  # no escape and no control character: JSON would give the same text
    try:
        value = json.loads(str(tok))
    except ValueError:
        raise _LiteralError(f"invalid string literal {tok}: use JSON escapes (\\\", \\\\, \\n, \\uXXXX)", tok) from None
    if not isinstance(value, str):  # pragma: no cover - the regex only admits strings
        raise _LiteralError(f"invalid string literal {tok}", tok)
    return value


# Numbers must survive a JSON round trip in every consumer: whole numbers fit in
# a signed 64-bit integer, other numbers are finite doubles (`1e309` is out of range).
MAX_INT = 2 ** 63 - 1
_MAX_INT_DIGITS = len(str(MAX_INT))


def decode_number(tok: str) -> int | float:
    raw = str(tok)
    if _INT_RE.match(raw):
        digits = raw.lstrip("-")
        if len(digits) > _MAX_INT_DIGITS or int(digits) > MAX_INT:
            raise _LiteralError(f"number `{_clip(raw)}` is too large: whole numbers are at most {MAX_INT} "
                                "in absolute value", tok)
        return int(raw)
    if _FLOAT_RE.match(raw):
        value = float(raw)
        if value in (float("inf"), float("-inf")):
            raise _LiteralError(f"number `{_clip(raw)}` is too large: it is out of the JSON number range "
                                "(finite 64-bit floats)", tok)
        return value
    if re.match(r"-?[0-9]+(?:\.[0-9]+)?[a-zA-Z]+\Z", raw):
        raise _LiteralError(f"invalid number or duration `{raw}`: a duration is a whole number "
                            "followed by ms, s, m or h (e.g. `90s`)", tok)
    raise _LiteralError(f"invalid number `{raw}`: numbers are JSON numbers (e.g. `12`, `-3`, `0.5`)", tok)


# --------------------------------------------------------------------------
#  Transformer: parse tree → AST (builds only; checks live in compiler.checks)
#  Nodes are built positionally (plain slotted dataclasses, span first).
# --------------------------------------------------------------------------
_new = tuple.__new__  # Span is a named tuple: build it without the keyword-aware constructor
_Ident = ast.Ident
_Target = ast.Target


def _tok_span(tok: Token) -> Span:
    return _new(Span, (tok.line, tok.column, tok.end_line, tok.end_column, tok.start_pos, tok.end_pos))


def _between(first: Union[Token, ast.Node], last: Union[Token, ast.Node]) -> Span:
    """The span from the start of `first` to the end of `last` (tokens or nodes)."""
    line: Optional[int]  # lark types a token's position Optional; the lexer always sets it
    column: Optional[int]
    start: Optional[int]
    if isinstance(first, ast.Node):
        a = first.span
        line, column, start = a.line, a.column, a.start
    else:
        line, column, start = first.line, first.column, first.start_pos
    if isinstance(last, ast.Node):
        b = last.span
        return _new(Span, (line, column, b.end_line, b.end_column, start, b.end))
    return _new(Span, (line, column, last.end_line, last.end_column, start, last.end_pos))


def _last(children: Children) -> Union[Token, ast.Node]:
    last: Union[Token, ast.Node]
    for c in reversed(children):
        if c is None:
            continue
        if isinstance(c, list):
            if c:
                last = c[-1]
                return last
            continue
        last = c
        return last
    raise AssertionError("empty rule")  # pragma: no cover


def _ident(tok: Token) -> ast.Ident:
    return _Ident(_new(Span, (tok.line, tok.column, tok.end_line, tok.end_column, tok.start_pos, tok.end_pos)), tok.value)


def _string(tok: Optional[Token]) -> Optional[ast.StringLit]:
    if tok is None:
        return None
    return ast.StringLit(_tok_span(tok), decode_string(tok))


def _number(tok: Optional[Token]) -> Optional[ast.Number]:
    if tok is None:
        return None
    value = decode_number(tok)
    if not isinstance(value, int):
        raise _LiteralError(f"expected a whole number, found `{tok}`", tok)
    return ast.Number(_tok_span(tok), value, tok.value)


def duration_parts(tok: str) -> tuple[int, ast.DurationUnit]:
    """A DURATION token's (amount, unit)."""
    m = _DURATION_RE.match(str(tok))
    assert m is not None
    if len(m.group(1)) > _MAX_INT_DIGITS or int(m.group(1)) > MAX_INT // 3_600_000:
        raise _LiteralError(f"duration `{_clip(str(tok))}` is too long: at most {MAX_INT // 3_600_000}"
                            f"{m.group(2)}", tok)
    return int(m.group(1)), cast(ast.DurationUnit, m.group(2))  # the regex's unit group


def _duration(tok: Token) -> ast.Duration:
    return ast.Duration(_tok_span(tok), *duration_parts(tok))


_DECODERS = (decode_string, decode_number, duration_parts)


def _clip(raw: str, limit: int = 40) -> str:
    """A literal shown in a message: at most `limit` characters."""
    return raw if len(raw) <= limit else f"{raw[:limit // 2]}…{raw[-8:]} ({len(raw)} characters)"
#: a grammar rule's children, as lark hands them to `AstBuilder`: tokens, what the rules below
#: built (nodes, `_Conj`, `_ToolList`), `None` for an absent optional part
Children = list[Any]


class _Conj(list[ast.Term]):
    """The terms of an `and` while parsing."""


MAX_CONDITION_DEPTH = ast.MAX_CONDITION_DEPTH


def _check_depth(terms: tuple[ast.Term, ...]) -> None:
    """Refuse a condition nested more than MAX_CONDITION_DEPTH levels (see `ast.too_deep`)."""
    term = ast.too_deep(terms)
    if term is not None:
        raise _LiteralError(f"condition nested too deeply: more than {MAX_CONDITION_DEPTH} levels of "
                            "`not`, `and` and `or` (write it flatter)", span=term.span)


#: a parsed condition: one term, or the terms of an `and`
_Condition = Union[ast.Term, _Conj]


def _one(cond: _Condition) -> ast.Term:
    """A condition (a term or a `_Conj`) as one term."""
    if isinstance(cond, _Conj):
        return ast.AllTerm(_between(cond[0], cond[-1]), tuple(cond))
    return cond


class _ToolList(list[ast.Ident]):
    """The names of a `tools [...]` clause, remembering its closing bracket."""

    close: Token


class AstBuilder(Transformer[Token, ast.FlowFile]):
    def start(self, children: Children) -> ast.FlowFile:
        blocks = tuple(c for c in children if isinstance(c, ast.Block))
        span = _between(blocks[0], blocks[-1]) if blocks else Span.point()
        return ast.FlowFile(span, blocks)

    def block_kind(self, children: Children) -> Token:
        tok: Token = children[0]
        return tok

    def block(self, children: Children) -> ast.Block:
        kind_tok, name_tok, title_tok, _lbrace, *rest = children
        rbrace = rest[-1]
        statements = tuple(c for c in rest[:-1] if c is not None)
        return ast.Block(_between(kind_tok, rbrace), kind_tok.value, _tok_span(kind_tok), _ident(name_tok),
                         _string(title_tok), statements, _tok_span(rbrace))

    # -- statements --------------------------------------------------------
    def participant(self, children: Children) -> ast.Participant:
        kw, name, desc, role, tools = children
        end = tools.close if tools is not None else _last(children[:4])
        return ast.Participant(_between(kw, end), _ident(name), _string(desc),
                               role.value if role is not None else None,
                               _tok_span(role) if role is not None else None,
                               tuple(tools) if tools is not None else None)

    def role(self, children: Children) -> Token:
        tok: Token = children[0]
        return tok

    def tools_clause(self, children: Children) -> _ToolList:
        tools = _ToolList(_ident(t) for t in children[2:-1] if t is not None)
        tools.close = children[-1]
        return tools

    def start_stmt(self, children: Children) -> ast.Start:
        return ast.Start(_between(children[0], children[1]), _ident(children[1]))

    def max_turns(self, children: Children) -> ast.MaxTurns:
        value = _number(children[1])
        assert value is not None  # the grammar requires the number
        return ast.MaxTurns(_between(children[0], children[1]), value)

    def context_init(self, children: Children) -> ast.ContextInit:
        return ast.ContextInit(_between(children[0], children[2]), _ident(children[1]), children[2])

    def rule(self, children: Children) -> ast.Rule:
        src_tok, _arrow, target, _when, terms, _prio, prio = children
        terms = () if terms is None else tuple(terms) if isinstance(terms, _Conj) else (terms,)
        _check_depth(terms)
        return ast.Rule(_between(src_tok, _last(children)),
                        None if src_tok.type == "STAR" else _ident(src_tok),
                        _tok_span(src_tok), target,
                        terms,
                        _number(prio) if prio is not None else None)

    def source(self, children: Children) -> Token:
        tok: Token = children[0]
        return tok

    def handoff(self, children: Children) -> ast.Handoff:
        kw, source, _arrow, target, _via, tool, desc = children
        return ast.Handoff(_between(kw, _last(children)), _ident(source), target, _ident(tool), _string(desc))

    def otherwise(self, children: Children) -> ast.Otherwise:
        return ast.Otherwise(_between(children[0], children[2]), children[2])

    def ordering(self, children: Children) -> ast.Ordering:
        return ast.Ordering(_between(children[0], children[1]), _ident(children[1]))

    def expect(self, children: Children) -> ast.Expect:
        kw, name, dur, action = children
        return ast.Expect(_between(kw, action), _ident(name), _duration(dur), _ident(action))

    def ttl(self, children: Children) -> ast.Ttl:
        return ast.Ttl(_between(children[0], children[1]), _duration(children[1]))

    # -- targets -------------------------------------------------------------
    def target_participant(self, children: Children) -> ast.Target:
        tok = children[0]
        span = _tok_span(tok)
        return _Target(span, "participant", _Ident(span, tok.value))

    def target_terminate(self, children: Children) -> ast.Target:
        kw, reason = children
        return _Target(_between(kw, reason or kw), "terminate", None, _string(reason))

    def target_stay(self, children: Children) -> ast.Target:
        return _Target(_tok_span(children[0]), "stay")

    def target_next(self, children: Children) -> ast.Target:
        return _Target(_tok_span(children[0]), "next")

    def target_initiator(self, children: Children) -> ast.Target:
        return _Target(_tok_span(children[0]), "initiator")

    def target_previous(self, children: Children) -> ast.Target:
        return _Target(_tok_span(children[0]), "previous")

    # -- conditions ----------------------------------------------------------
    # A level with one operand is inlined by the grammar (`?`), so these run only for real
    # `or` / `and` / `not` / parentheses. A conjunction travels as a `_Conj` (flattened into
    # an enclosing one: `a and (b and c)` is `a and b and c`); `rule` reads the condition as
    # its `terms`. Parentheses leave no node: the printer puts back those the precedence needs.
    def disjunction(self, children: Children) -> ast.AnyTerm:
        flat: list[ast.Term] = []
        for c in children:
            if isinstance(c, Token):
                continue
            if isinstance(c, ast.AnyTerm):
                flat.extend(c.terms)  # only parentheses put an `or` here: `(a or b) or c`
            else:
                flat.append(_one(c))
        return ast.AnyTerm(_between(flat[0], flat[-1]), tuple(flat))

    def conjunction(self, children: Children) -> _Conj:
        out = _Conj()
        for c in children:
            if isinstance(c, _Conj):
                out.extend(c)
            elif not isinstance(c, Token):
                out.append(c)
        return out

    def not_term(self, children: Children) -> ast.NotTerm:
        inner = _one(children[1])
        return ast.NotTerm(_between(children[0], inner), inner)

    def group(self, children: Children) -> _Condition:
        inner: _Condition = children[1]
        return inner

    def tool_term(self, children: Children) -> ast.ToolTerm:
        return ast.ToolTerm(_between(children[0], children[1]), _ident(children[1]))

    def context_term(self, children: Children) -> ast.ContextTerm:
        return ast.ContextTerm(_between(children[0], children[3]), _ident(children[1]), children[3])

    def compare_term(self, children: Children) -> ast.CompareTerm:
        kw, key, op, value = children
        return ast.CompareTerm(_between(kw, value), _ident(key), op.value, value)

    def len_term(self, children: Children) -> ast.CompareTerm:
        kw, _lpar, _ctx, key, _rpar, op, value = children
        return ast.CompareTerm(_between(kw, value), _ident(key), op.value, value, True)

    def text_term(self, children: Children) -> ast.TextTerm:
        text = _string(children[2])
        assert text is not None  # the grammar requires the string
        return ast.TextTerm(_between(children[0], children[2]), text)

    def literal(self, children: Children) -> ast.Literal:
        tok = children[0]
        span = _tok_span(tok)
        lit = ast.Literal
        if tok.type == "STRING":
            return lit(span, "string", decode_string(tok), tok.value)
        if tok.type == "NUMBER":
            value = decode_number(tok)
            return lit(span, "int" if isinstance(value, int) else "float", value, tok.value)
        if tok.type == "NULL":
            return lit(span, "null", None, "null")
        return lit(span, "bool", tok.type == "TRUE", tok.value)


# --------------------------------------------------------------------------
#  Syntax errors in user words
# --------------------------------------------------------------------------
_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "DURATION": "a duration (a whole number and a unit: ms, s, m, h or d, e.g. `90s`)",
    "ARROW": "`->`",
    "STAR": "`*`",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "COMMA": "`,`",
    "DOT": "`.`",
    "EQUAL": "`=`",
    "EQEQ": "`==`",
    "CMP": "a comparison (`!=`, `<`, `<=`, `>`, `>=`)",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "_SEP": "the end of the statement (a newline or `;`)",
    "$END": "the end of the file",
}
_STATEMENT_STARTS = {"PARTICIPANT", "START", "MAX_TURNS", "CONTEXT", "HANDOFF", "OTHERWISE",
                     "ORDERING", "EXPECT", "TTL", "NAME", "STAR"}
_KEYWORD_STATEMENT_STARTS = {"PARTICIPANT", "START", "MAX_TURNS", "CONTEXT", "HANDOFF", "OTHERWISE",
                             "ORDERING", "EXPECT", "TTL"}
_BLOCK_STARTS = {"WORKFLOW", "CONSULTING", "CONVERSATION", "DISCUSSION"}
_LITERALS = {"STRING", "NUMBER", "TRUE", "FALSE", "NULL"}


def _word(terminal: str) -> str:
    if terminal in _WORDS:
        return _WORDS[terminal]
    if terminal.lower() in KEYWORDS:
        return f"`{terminal.lower()}`"
    if terminal == "EQUAL" or terminal.startswith("__ANON"):
        return "`==`"
    return terminal.lower()


def describe_expected(expected: set[str]) -> str:
    expected = set(expected)
    parts: list[str] = []
    if _STATEMENT_STARTS <= expected:
        parts.append("a statement")
        expected -= _STATEMENT_STARTS
    if _BLOCK_STARTS <= expected:
        parts.append("a block (`workflow`, `consulting`, `conversation` or `discussion`)")
        expected -= _BLOCK_STARTS
    if _LITERALS <= expected:
        parts.append("a value (a string, number, `true`, `false` or `null`)")
        expected -= _LITERALS
    words = sorted({_word(t) for t in expected})
    parts.extend(words)
    if not parts:
        return "something else"
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def _found(tok: Token) -> str:
    if tok.type == "$END":
        return "the end of the file"
    if tok.type == "_SEP":
        text = str(tok)
        if text.startswith("#"):
            return "a comment"
        return "`;`" if text.startswith(";") else "the end of the line"
    text = str(tok)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"`{text}`"


DURATION_UNITS = "ms, s, m, h or d"


def _close(word: str, candidates: Iterable[str]) -> Optional[str]:
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.7)
    return found[0] if found else None


def _refine(tok: Token, expected: set[str], src: SourceText) -> Optional[tuple[str, Span, str, Optional[str]]]:
    """A more helpful reading of some syntax errors: (code, span, message, help) or None.

    - a misspelt statement keyword (`strat a`): the parser only notices at the next word,
      but the diagnostic points at the misspelt one and suggests the keyword;
    - a misspelt keyword where keywords are expected (`workflwo`, `whn`);
    - a malformed duration (TF002, listing the units)."""
    text = src.text
    if tok.type == "$END" or tok.start_pos is None:
        return None
    word = str(tok)
    start = tok.start_pos
    # the statement so far: from the last separator (newline, `;`, `{`) to this token
    cut = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start), text.rfind(";", 0, start),
              text.rfind("{", 0, start)) + 1
    before = text[cut:start]
    words = before.split()
    if len(words) == 1 and words[0] not in KEYWORDS and "ARROW" in expected:
        guess = _close(words[0], STATEMENT_KEYWORDS)
        if guess is not None:
            w_start = cut + before.index(words[0])
            return ("TF001", src.span(w_start, w_start + len(words[0])),
                    f"unknown statement `{words[0]}`; did you mean `{guess}`?", f"did you mean `{guess}`?")
    if tok.type == "NAME":
        keywords = {t.lower() for t in expected if t.lower() in KEYWORDS}
        guess = _close(word, keywords) if keywords else None
        if guess in ast.BLOCK_KINDS:
            return ("TF001", src.span(start, start + len(word)),
                    f"unknown block kind `{word}`; did you mean `{guess}`?", f"did you mean `{guess}`?")
        if guess is not None:
            return ("TF001", src.span(start, start + len(word)),
                    f"expected {describe_expected(expected)}, found `{word}`; did you mean `{guess}`?",
                    f"did you mean `{guess}`?")
    if "DURATION" in expected and word[:1].isdigit():
        return ("TF002", src.span(start, start + len(word)),
                f"invalid duration `{word}`: a duration is a whole number followed by a unit, {DURATION_UNITS} "
                "(e.g. `90s`, `5m`, `2h`, `1d`)", None)
    return None


def _syntax_diagnostic(err: UnexpectedInput, src: SourceText) -> Diagnostic:
    if isinstance(err, UnexpectedToken):
        return _unexpected_token(err, src)
    if isinstance(err, UnexpectedCharacters):
        return _unexpected_character(err, src)
    if isinstance(err, UnexpectedEOF):
        offset = len(src.text)
        return Diagnostic(code="TF001", severity="error",
                          message=f"unexpected end of file; expected {describe_expected(set(err.expected))}",
                          span=src.span(offset, offset), path=src.path)
    return Diagnostic(code="TF001", severity="error", message=str(err), span=src.span(0, 1), path=src.path)


def _unexpected_token(err: UnexpectedToken, src: SourceText) -> Diagnostic:
    tok = err.token
    expected = set(err.expected)
    refined = _refine(tok, expected, src)
    if refined is not None:
        code, span, message, help_text = refined
        return Diagnostic(code=code, severity="error", message=message, span=span, path=src.path, help=help_text)
    if tok.type == "$END" or tok.start_pos is None:
        span = src.span(len(src.text), len(src.text))
    elif tok.type == "_SEP":  # its first character (`;`, `#` or a line end), a line end as the point
        span = src.span(tok.start_pos, tok.start_pos)  # at the end of its line, whichever it is
    else:
        span = src.span(tok.start_pos, tok.start_pos + max(1, len(str(tok))))
    if "NAME" in expected and str(tok) in KEYWORDS and tok.type != "NAME":
        message = (f"`{tok}` is a keyword and cannot be used as a name; "
                   f"expected {describe_expected(expected)}")
    elif "_SEP" in expected and (tok.type in _STATEMENT_STARTS or tok.type in _KEYWORD_STATEMENT_STARTS):
        message = (f"expected {describe_expected(expected)}, found {_found(tok)}: a new statement starts "
                   "on a new line or after `;`")
    else:
        message = f"expected {describe_expected(expected)}, found {_found(tok)}"
    related: tuple[Related, ...] = ()
    if tok.type == "$END" and "RBRACE" in expected:
        opened = _unclosed_brace(src.text)
        if opened is not None:
            line_start = max(src.text.rfind("\n", 0, opened), src.text.rfind("\r", 0, opened)) + 1
            header = _BLOCK_HEADER.search(src.text, line_start, opened)
            message += f": block `{header.group(1)}` is not closed" if header else ": a block is not closed"
            related = (Related(src.span(opened, opened + 1), "the block opened here"),)
    return Diagnostic(code="TF001", severity="error", message=message, span=span, path=src.path, related=related)


_BRACES = re.compile(STRING + r"|#[^\n\r]*|[{}]")
_BLOCK_HEADER = re.compile(r"\b(?:workflow|consulting|conversation|discussion)\s+([^\s{\"#]+)")


def _unclosed_brace(text: str) -> Optional[int]:
    """The offset of the last `{` no `}` closes (strings and comments skipped), if any."""
    opened: list[int] = []
    for m in _BRACES.finditer(text):
        ch = m.group(0)
        if ch == "{":
            opened.append(m.start())
        elif ch == "}" and opened:
            opened.pop()
    return opened[-1] if opened else None


def _ends_a_name(text: str, offset: int) -> bool:
    """Does the word just before `offset` read as a NAME (`bad` in `bad-`; not `5s` in `ttl 5s-`)?"""
    start = offset
    while start > 0 and offset - start < 200 and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    word = text[start:offset].lstrip("-")
    return bool(word) and (word[0].isalpha() or word[0] == "_")


def _unexpected_character(err: UnexpectedCharacters, src: SourceText) -> Diagnostic:
    text = src.text
    offset = err.pos_in_stream or 0
    ch = text[offset] if offset < len(text) else ""
    if ch == '"':
        message = "unterminated string: a string must close with `\"` on the same line"
    elif ch.isprintable() and not ch.isspace():
        message = f"unexpected character `{ch}`"
        if ch == "-" and _ends_a_name(text, offset):
            message += ": a name cannot end in `-`"  # `bad-`: the NAME stopped before the dash
        allowed = set(err.allowed or ())
        if allowed:
            message += f"; expected {describe_expected(allowed)}"
    else:
        message = f"unexpected character {ch!r}"
    return Diagnostic(code="TF001", severity="error", message=message, span=src.span(offset, offset + 1),
                      path=src.path)


# --------------------------------------------------------------------------
#  Layout: once the text has parsed, every `#` outside a string is a comment;
#  comments and blank lines are attached to the statements they belong to
# --------------------------------------------------------------------------
_STRING_OR_COMMENT = re.compile(STRING + r"|#[^\n\r]*")
# a line holding nothing (or only `;`): two line ends (\n, \r\n, lone \r) with only blanks between
_SUPPRESSION = re.compile(r"#\s*turnflow:\s*ignore", re.IGNORECASE)  # as turnflow.diagnostics.suppress reads them
_BLANK_LINE = re.compile(r"(?:\r\n|\r(?!\n)|\n)[ \t\f;]*[\r\n]")


def scan_comments(src: SourceText) -> list[ast.Comment]:
    """Every comment of a text that parsed, in file order."""
    out = []
    text = src.text
    for m in _STRING_OR_COMMENT.finditer(text):
        if m.group(0)[0] != "#":
            continue
        start = m.start()
        body = m.group(0)
        out.append(ast.Comment(src.span(start, start + len(body)), body))
    return out


def attach_layout(flow: ast.FlowFile, src: SourceText) -> ast.FlowFile:
    """`flow` with its comments and blank lines attached (see `turnflow.dsl.ast`).

    The line items in file order are each block's header, its statements and
    its closing brace. A comment that starts on the line where the previous
    item ends (`a -> b  # note`, `a -> b; # note`) trails that item; any other
    comment leads the next item (above a statement or header; before `}` it is
    one of the block's `inner` comments; after the last block, the file's
    `trailing`). A comment after an empty statement on a line of its own
    (`; # note`) is therefore an own-line comment: it never trails the
    statement of an earlier line. An item or leading comment has
    `blank_before` when a blank line separates it from what precedes it."""
    text = src.text
    comments = scan_comments(src) if "#" in text else []
    blanks = [m.start() for m in _BLANK_LINE.finditer(text)]
    if not comments and not blanks:
        return flow
    items = _line_items(flow)
    layout = _Layout()
    layout.place(items, comments, blanks)
    joined = _joined(items, layout.trailing)
    blocks = tuple(layout.apply(bi, b, joined) for bi, b in enumerate(flow.blocks))
    return replace(flow, blocks=blocks, trailing=tuple(layout.pending))


#: a line item: (start, end offset, end line, block index, position, start line);
#: position -1 is a block's header, -2 its closing brace
_Item = tuple[int, int, int, int, int, int]


def _line_items(flow: ast.FlowFile) -> list[_Item]:
    """Each block's header, its statements and its closing brace, in file order."""
    items: list[_Item] = []
    for bi, b in enumerate(flow.blocks):
        head_end = b.title.span if b.title is not None else b.name.span
        items.append((b.span.start, head_end.end, head_end.end_line, bi, -1, b.span.line))
        for si, st in enumerate(b.statements):
            items.append((st.span.start, st.span.end, st.span.end_line, bi, si, st.span.line))
        items.append((b.close_span.start, b.close_span.end, b.close_span.end_line, bi, -2, b.close_span.line))
    return items


class _Layout:
    """Where each comment and blank line goes: `leading` / `trailing` comments and
    `blank_items` by (block index, position); `pending` are the file's trailing comments."""

    def __init__(self) -> None:
        self.leading: dict[tuple[int, int], list[ast.Comment]] = {}
        self.trailing: dict[tuple[int, int], list[ast.Comment]] = {}
        self.blank_items: set[tuple[int, int]] = set()
        self.pending: list[ast.Comment] = []

    def place(self, items: list[_Item], comments: list[ast.Comment], blanks: list[int]) -> None:
        # merge comments and items in file order
        seq: list[tuple[int, Union[ast.Comment, _Item]]] = ([(it[0], it) for it in items]
                                                             + [(c.span.start, c) for c in comments])
        seq.sort(key=lambda e: e[0])
        starts = [e[0] for e in seq]
        blank_at = {i for i in (bisect.bisect_right(starts, p) for p in blanks) if i < len(seq)}  # indexes into seq
        prev_item: Optional[_Item] = None
        prev_was_item = False
        for i, (_, e) in enumerate(seq):
            if isinstance(e, ast.Comment):
                if prev_item is not None and prev_was_item and e.span.line == prev_item[2] and not self.pending:
                    self.trailing.setdefault((prev_item[3], prev_item[4]), []).append(e)
                    continue  # stays "after the item": a later comment on the next line leads what follows
                self.pending.append(replace(e, blank_before=True) if i in blank_at else e)
                prev_was_item = False
                continue
            key = (e[3], e[4])
            if self.pending:
                self.leading[key] = self.pending
                self.pending = []
            if i in blank_at:
                self.blank_items.add(key)
            prev_item, prev_was_item = e, True

    def apply(self, bi: int, b: ast.Block, joined: set[tuple[int, int]]) -> ast.Block:
        """Block `bi` with its comments, blank lines and joined lines attached."""
        statements = list(b.statements)
        for si, st in enumerate(statements):
            key = (bi, si)
            if key in self.leading or key in self.trailing or key in self.blank_items or key in joined:
                statements[si] = replace(st, leading=tuple(self.leading.get(key, ())),
                                         trailing=tuple(self.trailing.get(key, ())),
                                         blank_before=key in self.blank_items, same_line=key in joined)
        head, close = (bi, -1), (bi, -2)
        return replace(b, statements=tuple(statements), leading=tuple(self.leading.get(head, ())),
                       trailing=tuple(self.trailing.get(head, ())), inner=tuple(self.leading.get(close, ())),
                       close_trailing=tuple(self.trailing.get(close, ())), blank_before=head in self.blank_items)


def _joined(items: list[_Item], trailing: dict[tuple[int, int], list[ast.Comment]]) -> set[tuple[int, int]]:
    """A suppression trailing a line of several statements (`a -> b; c -> d  # turnflow: ignore`)
    covers all of them: the line stays joined (`same_line`), so fmt keeps the findings."""
    joined: set[tuple[int, int]] = set()
    # only a suppression that trails a statement: one after a `}` or a header (`{ a; b }  # ...`)
    # is printed after that `}` or header, on a line holding no statement
    suppressed_lines = {c.span.line for key, cs in trailing.items() if key[1] >= 0 for c in cs
                        if _SUPPRESSION.search(c.text)}
    if suppressed_lines:
        prev: Optional[_Item] = None
        for it in items:
            if (it[4] >= 0 and prev is not None and prev[4] >= 0 and prev[3] == it[3]
                    and it[5] in suppressed_lines and prev[2] == it[5]):
                joined.add((it[3], it[4]))
            prev = it
    return joined


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures.

    Parsing allocates hundreds of thousands of tokens, tree nodes and AST
    models and frees none of them; every collection would rescan them all
    (on a 20,000-rule file this more than doubled the parse time). Nothing
    built here forms reference cycles, so pausing loses nothing. Nests (only the
    outermost pause acts).

    On the way out, what was allocated is moved straight to the oldest
    generation (`freeze` + `unfreeze`) instead of being scanned by the first
    young collection after `enable` (0.4-0.8 s on 20,000 rules). Skipped when
    the process has frozen objects of its own, which `unfreeze` would release.

    A process-wide switch: acts only when the process turned it on
    (`turnflow.process.PAUSE_GC`, set by the CLI); otherwise does nothing."""
    if not process.PAUSE_GC or not gc.isenabled():
        yield
        return
    promote = gc.get_freeze_count() == 0
    gc.disable()
    try:
        yield
    finally:
        if promote:
            gc.freeze()
            gc.enable()
            gc.unfreeze()
        else:
            gc.enable()


def parse_source(text: str, path: str = "<string>") -> tuple[Optional[ast.FlowFile], list[Diagnostic]]:
    """Parse `text`; returns (AST or None, TF001/TF002 diagnostics). Never raises.
    Pauses the garbage collector only when the process asked for it
    (`turnflow.process.PAUSE_GC`: the CLI does; a library call does not)."""
    with gc_paused():
        return _parse_source(text, path)


def _parse_source(text: str, path: str, fast: bool = True) -> tuple[Optional[ast.FlowFile], list[Diagnostic]]:
    """`parse_source`'s work; `fast=False` skips the fast path (lark reads every text: the
    reference the differential test compares the fast path with)."""
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # keep offsets: the BOM becomes a blank
    parser = build_parser()
    quick = fastparse.parse(text, parser.parser.lexer, _DECODERS) if fast else None
    if quick is not None:  # None: not a file the fast path reads (an error, or a form it gives up on)
        # without comments, the fast path has marked the blank lines already
        return (attach_layout(quick, SourceText(text, path)) if "#" in text else quick), []
    src = SourceText(text, path)
    try:
        flow = cast(ast.FlowFile, parser.parse(text))  # the transformer builds the AST
    except UnexpectedInput as err:
        return None, [_syntax_diagnostic(err, src)]
    except _LiteralError as err:
        return None, [Diagnostic(code="TF002", severity="error", message=str(err),
                                 span=err.span or _tok_span(cast(Token, err.token)), path=path)]
    return attach_layout(flow, src), []


def parse(text: str, path: str = "<string>") -> ast.FlowFile:
    """Parse `.flow` text into an AST; raises `ParseError` (with diagnostics) on bad input."""
    flow, diagnostics = parse_source(text, path)
    if flow is None:
        raise ParseError(diagnostics)
    return flow
