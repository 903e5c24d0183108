"""The `.flow` lexer: lark's basic lexer, specialised.

The terminals are the grammar's own (flow.lark), tried in the order lark's
basic lexer uses; what differs is the loop. One compiled master regex skips
leading blanks and matches the next token in a single call (line ends are
`\n`, `\r\n` or a lone `\r`, and live only in statement separators); reserved words
are found by a dict lookup on NAME tokens; line and column bookkeeping only
happens for tokens that can contain a newline (statement separators). On a
20,000-rule file this halves lexing time compared with lark's generic lexer
(two regex calls per token, a callback chain, per-token newline counting).

An unexpected character raises lark's `UnexpectedCharacters`, with the
terminals the parser would have accepted at that point as `allowed`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from lark.exceptions import UnexpectedCharacters
from lark.common import LexerConf
from lark.lexer import Lexer, LexerState, TerminalDef, Token

from turnflow.dsl.lexical import KEYWORDS

KEYWORD_TYPES = {kw: kw.upper() for kw in KEYWORDS}
_BLANKS = re.compile(r"[ \t\f]*")


_CHAR_CLASS_RUN = re.compile(r"(\[(?:[^\]\\]|\\.)+\])\+\Z")


def _blank_class(ignore: Iterable[TerminalDef]) -> str:
    """The character class of the ignored blanks (`[ \t\f]`): the master regex skips
    ONE repetition of it before a token. The ignore terminals must each be a
    character class repeated (`[...]+`); they are merged into a single class.
    A repetition of a repetition (`(?:[ \t]+)*`) would backtrack exponentially
    on a run of blanks followed by a character that starts no token.
    Without ignore terminals, a class that matches nothing."""
    classes = []
    for t in ignore:
        m = _CHAR_CLASS_RUN.match(t.pattern.to_regexp())
        if m is None:
            raise ValueError(f"ignored terminal {t.name} must be a character class repeated with +, "
                             f"not {t.pattern.to_regexp()!r}")
        classes.append(m.group(1)[1:-1])
    return f"[{''.join(classes)}]" if classes else r"[^\s\S]"


class FlowLexer(Lexer):
    __future_interface__ = 2

    def __init__(self, conf: LexerConf) -> None:
        ignore = [t for t in conf.terminals if t.name in conf.ignore]
        terminals = [t for t in conf.terminals if t.name not in conf.ignore]
        terminals.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        alternatives = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals)
        #: the character class of the blanks between tokens (the fast path's statement shapes use it)
        self.blank = _blank_class(ignore)
        self.master = re.compile(f"{self.blank}*(?:{alternatives})", conf.g_regex_flags)
        self.terminals_by_name = conf.terminals_by_name
        self.names = frozenset(t.name for t in terminals)

    def lex(self, state: LexerState, parser_state: Any) -> Iterator[Token]:  # lark's ParserState
        text_slice = state.text
        text = text_slice.text
        pos, stop = text_slice.start, text_slice.end
        match = self.master.match
        keyword = KEYWORD_TYPES.get
        line, line_start = 1, 0
        if pos:
            line = text.count("\n", 0, pos) + 1
            line_start = text.rfind("\n", 0, pos) + 1
        new = str.__new__
        while pos < stop:
            m = match(text, pos, stop)
            if m is None:
                blanks = _BLANKS.match(text, pos, stop)  # always matches (a `*` repetition)
                pos = blanks.end() if blanks is not None else pos
                if pos >= stop:
                    return
                raise UnexpectedCharacters(  # type: ignore[no-untyped-call]  # lark leaves __init__ unannotated
                    text, pos, line, pos - line_start + 1, allowed=self._allowed(parser_state),
                    state=parser_state, terminals_by_name=self.terminals_by_name)
            kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a named group
            start, end = m.span(kind)
            value = text[start:end]
            column = start - line_start + 1
            # a Token built in place (lark's constructor costs two extra calls a token)
            tok = new(Token, value)
            tok.start_pos = start
            tok.value = value
            tok.line = line
            tok.column = column
            tok.end_pos = end
            if kind == "NAME":
                tok.type = keyword(value, "NAME")
            else:
                tok.type = kind
                if kind == "_SEP":
                    newlines = value.count("\n")
                    if "\r" in value:  # \r\n is one line end, a lone \r is one too
                        newlines += value.count("\r") - value.count("\r\n")
                    if newlines:
                        line += newlines
                        line_start = start + max(value.rfind("\n"), value.rfind("\r")) + 1
                        tok.end_line = line
                        tok.end_column = end - line_start + 1
                        state.last_token = tok
                        yield tok
                        pos = end
                        continue
            tok.end_line = line
            tok.end_column = column + (end - start)
            state.last_token = tok
            yield tok
            pos = end

    def _allowed(self, parser_state: Any) -> set[str]:
        try:
            accepts = set(parser_state.parse_conf.parse_table.states[parser_state.position])
        except (AttributeError, KeyError, IndexError, TypeError):  # pragma: no cover - defensive
            return set(self.names)
        # the table also holds goto entries for rules (lowercase names): keep terminals
        return {a for a in accepts if a != "$END" and not a.islower()} or {"$END"}
