"""Completion from the text alone (a file being typed rarely parses): the
tokens before the cursor decide what fits, and the names come from the
declarations in the enclosing block. Tokens come from the language's own
lexer (`turnflow.dsl.lexer`, the grammar's terminals), read tolerantly: an
unexpected character is skipped, an unterminated string or a comment runs to
the end of its line.

Each item is (label, kind, detail) with kind one of keyword, participant,
tool, context, expectation, action."""

from __future__ import annotations

import re
from typing import Iterator, Optional

from turnflow.dsl.ast import EXPECT_ACTIONS, EXPECT_EVALUATORS, ORDERINGS
from turnflow.dsl.lexical import BLOCK_KINDS, NAME, STATEMENT_KEYWORDS, TARGET_KEYWORDS, TERM_KEYWORDS
from turnflow.lsp.blocks import block_around
import difflib

_BLOCK_TYPES = frozenset(k.upper() for k in BLOCK_KINDS)
_WORD = re.compile(NAME)

Item = tuple[str, str, str]


class Tok:
    """A token: its terminal (`NAME`, `ARROW`, `PARTICIPANT`, `_SEP` ...), text and offsets."""

    __slots__ = ("type", "value", "start", "end")

    def __init__(self, type_: str, value: str, start: int, end: int) -> None:
        self.type, self.value, self.start, self.end = type_, value, start, end

    @property
    def word(self) -> bool:
        """A name or a keyword (what the cursor may be in the middle of typing)."""
        return _WORD.fullmatch(self.value) is not None


def tokens(text: str, start: int = 0, stop: Optional[int] = None) -> Iterator[Tok]:
    """The tokens of `text[start:stop]` as the parser's lexer (`FlowLexer`: its master regex of
    the grammar's terminals, its keyword table) reads them, never failing: at a character no
    token starts with, a `"` or `#` skips to the end of the line (an unterminated string, a
    comment) and anything else skips one character. Linear in the text."""
    from turnflow.dsl.lexer import KEYWORD_TYPES
    from turnflow.dsl.parser import build_parser

    match = build_parser().parser.lexer.master.match
    end = len(text) if stop is None else stop
    pos = start
    while pos < end:
        m = match(text, pos, end)
        if m is None:
            pos = _skip(text, pos, end)
            continue
        kind: str = m.lastgroup  # every alternative is a named group
        a, b = m.span(kind)
        if a == b:  # no terminal matches empty; guard the loop anyway
            pos = _skip(text, b, end)
            continue
        value = text[a:b]
        yield Tok(KEYWORD_TYPES.get(value, "NAME") if kind == "NAME" else kind, value, a, b)
        pos = b


def _skip(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos] in " \t\f":
        pos += 1
    if pos < end and text[pos] in "\"#":
        ends = [i for i in (text.find("\n", pos, end), text.find("\r", pos, end)) if i >= 0]
        return min(ends) if ends else end
    return pos + 1


def _statements(toks: list[Tok]) -> Iterator[list[Tok]]:
    """The token runs between separators (`_SEP`: line ends, `;`, comments) and braces."""
    run: list[Tok] = []
    for t in toks:
        if t.type in ("_SEP", "LBRACE", "RBRACE"):
            if run:
                yield run
            run = []
        else:
            run.append(t)
    if run:
        yield run


def _enclosing_block(toks: list[Tok], offset: int) -> list[Tok]:
    """The tokens of the block around `offset`: from the last block header before it to the next one."""
    heads = [i for i, t in enumerate(toks) if t.type in _BLOCK_TYPES and (i == 0 or toks[i - 1].type == "_SEP")]
    begin, end = 0, len(toks)
    for i in heads:
        if toks[i].start <= offset:
            begin = i
        else:
            end = i
            break
    return toks[begin:end]


def _names_after(run: list[Tok], i: int) -> Iterator[str]:
    """The NAMEs of a `[a, b, ...]` list starting at `run[i]` (an LSQB)."""
    for t in run[i + 1:]:
        if t.type == "NAME":
            yield t.value
        elif t.type != "COMMA":
            return


def _declared(run: list[Tok], out: dict[str, dict[str, None]]) -> None:
    first = run[0].type
    if first == "PARTICIPANT" and len(run) > 1 and run[1].type == "NAME":
        out["participant"].setdefault(run[1].value, None)
    if first == "CONTEXT" and len(run) > 2 and run[1].type == "NAME" and run[2].type == "EQUAL":
        out["context"].setdefault(run[1].value, None)
    for i, t in enumerate(run[:-1]):
        if t.type == "TOOLS" and run[i + 1].type == "LSQB":
            for name in _names_after(run, i + 1):
                out["tool"].setdefault(name, None)
        elif t.type in ("VIA", "TOOL") and run[i + 1].type == "NAME":
            out["tool"].setdefault(run[i + 1].value, None)


def declared_names(text: str, offset: int) -> dict[str, list[str]]:
    """Participants, tools and context keys declared (or, for tools, used) in the block around `offset`."""

    out: dict[str, dict[str, None]] = {"participant": {}, "context": {}, "tool": {}}
    start, end = block_around(text, offset)  # only the block's text is read: a 40,000-block file stays quick
    for run in _statements(_enclosing_block(list(tokens(text, start, end)), offset)):
        _declared(run, out)
    return {kind: list(names) for kind, names in out.items()}


def _words_before(text: str, offset: int) -> list[str]:
    """The tokens of the statement before `offset`, without the word being typed."""
    line_start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    toks = list(tokens(text, line_start, offset))
    seps = [i for i, t in enumerate(toks) if t.type == "_SEP"]
    toks = toks[seps[-1] + 1:] if seps else toks
    if toks and toks[-1].end == offset and toks[-1].word:
        toks.pop()  # the word being typed
    return [t.value for t in toks]


#: (first word or None, number of words or None, last word or None) → what fits next; the first match wins
_AFTER: list[tuple[Optional[str], Optional[int], Optional[str], str]] = [
    (None, None, "tool", "tools"), (None, None, "via", "tools"),
    ("expect", 1, None, "evaluators"), ("expect", 3, None, "actions"), ("ordering", 1, None, "orderings"),
    ("start", 1, None, "people"), ("handoff", 1, None, "people"), (None, None, "->", "targets"),
]


def complete(text: str, offset: int) -> list[Item]:
    """What may be typed at `offset`."""
    words = _words_before(text, offset)
    names = declared_names(text, offset)
    people = [(n, "participant", "participant") for n in names["participant"]]
    choices: dict[str, list[Item]] = {
        "tools": [(n, "tool", "tool") for n in names["tool"]],
        "people": people,
        "evaluators": [(e, "expectation", "expectation") for e in EXPECT_EVALUATORS],
        "actions": [(a, "action", "expectation action") for a in EXPECT_ACTIONS],
        "orderings": _kw(ORDERINGS, "ordering"),
        "targets": people + _kw(TARGET_KEYWORDS, "target"),
    }
    if words[-2:] == ["context", "."]:
        return [(n, "context", "context key") for n in names["context"]]
    if not words:
        if not _inside_block(text, offset):
            return _kw(BLOCK_KINDS, "block")
        return _kw(STATEMENT_KEYWORDS) + people + [("*", "keyword", "any participant")]
    first, last = words[0], words[-1]
    for want_first, count, want_last, choice in _AFTER:
        if (want_first in (None, first) and count in (None, len(words)) and want_last in (None, last)):
            return choices[choice]
    return _after_statement(words)


def _after_statement(words: list[str]) -> list[Item]:
    first, last = words[0], words[-1]
    if last in ("when", "and", "or", "not", "("):
        return _kw(TERM_KEYWORDS, "condition")
    if first == "participant" and len(words) >= 2:
        return _kw(("initiator", "respondent", "tools"))
    if "->" in words:
        return _kw(("when", "and", "or", "priority"))
    if len(words) == 1 and first not in STATEMENT_KEYWORDS:
        return _kw(("->",), "arrow")
    return []


def _kw(xs, detail: str = "keyword") -> list[Item]:
    return [(x, "keyword", detail) for x in xs]


def _inside_block(text: str, offset: int) -> bool:
    """Whether `offset` is inside the braces of the block it follows (counted from that block's
    header, not from the start of the text)."""

    depth = 0
    for t in tokens(text, block_around(text, offset)[0], offset):
        depth += (t.type == "LBRACE") - (t.type == "RBRACE")
    return depth > 0


def word_range(text: str, offset: int) -> tuple[int, int]:
    """The span of the (partial) name around `offset`, which a completion replaces."""
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        start -= 1
    end = offset
    while end < len(text) and (text[end].isalnum() or text[end] in "_-"):
        end += 1
    return start, end


def did_you_mean(help_text: Optional[str]) -> Optional[str]:
    """The replacement a diagnostic's help proposes (`did you mean `X`?`), if any."""
    if not help_text:
        return None
    m = re.search(r"did you mean `([^`]+)`\?", help_text)
    return m.group(1) if m else None


def fix_span(text: str, replacement: str) -> tuple[int, int]:
    """Within a diagnostic's text (`tool escalte`, `context.resovled == true`), the
    span of the name a "did you mean" replacement is meant for: the most similar
    name that differs from it (the whole text when it is a single name)."""

    best = (0.0, 0, len(text))
    for m in re.finditer(NAME, text):
        word = m.group(0)
        if word == replacement:
            continue
        ratio = difflib.SequenceMatcher(None, word, replacement).ratio()
        if ratio > best[0]:
            best = (ratio, m.start(), m.end())
    return best[1], best[2]
