"""A large document read block by block, for the language server's answers while the whole
document's analysis is still running (a 40,000-block file takes seconds to parse and check;
requests are answered meanwhile).

Top-level blocks start at a line that begins with a block keyword (`workflow w {`), so the
block around a position is found with one regular-expression scan of the text, and only that
block is parsed: hover, definition, references and rename stay block-local in the language.
The document outline (symbols) is read line by line from the declarations, without parsing.
None of this needs pygls."""

from __future__ import annotations

import bisect
import json
import re
from typing import Optional

from turnflow.dsl.lexical import BLOCK_KINDS, NAME as _NAME, STRING as _STRING
HEADER = re.compile(rf"^[ \t]*({'|'.join(BLOCK_KINDS)})[ \t]+({_NAME})(?:[ \t]+({_STRING}))?", re.M)
_PARTICIPANT = re.compile(rf"^[ \t]*(participant)[ \t]+({_NAME})(?:[ \t]+({_STRING}))?([^\n]*)", re.M)
_CONTEXT = re.compile(rf"^[ \t]*(context)[ \t]+({_NAME})[ \t]*=[ \t]*({_STRING}|[^\s#;}}]+)", re.M)
_ROLE = re.compile(r"\b(initiator|respondent)\b")


def headers(text: str) -> list[int]:
    """The offsets where top-level blocks start (their keyword)."""
    return [m.start(1) for m in HEADER.finditer(text)]


def block_around(text: str, offset: int, starts: Optional[list[int]] = None) -> tuple[int, int]:
    """(start, end) of the block around `offset`: from the last block header at or before it
    (the start of the text when there is none) to the next one (the end of the text)."""
    starts = headers(text) if starts is None else starts
    i = bisect.bisect_right(starts, offset)
    start = starts[i - 1] if i > 0 else 0
    end = starts[i] if i < len(starts) else len(text)
    return start, end


def padded(text: str, start: int, end: int) -> str:
    """`text[start:end]` at its own offsets: what comes before it becomes one comment line of the
    same length (a single token), so spans in a parse of the result are offsets in `text`."""
    if start == 0:
        return text[:end]
    if start == 1:
        return "\n" + text[1:end]
    return "#" + " " * (start - 2) + "\n" + text[start:end]


def _string(lit: Optional[str]) -> Optional[str]:
    if lit is None:
        return None
    try:
        value = json.loads(lit)
    except ValueError:
        return lit[1:-1]
    return value if isinstance(value, str) else lit[1:-1]


def outline(text: str, children: bool = True) -> list[dict]:
    """The document's blocks with their participants and context keys as children (or none), in
    the shape of `FlowIndex.symbols()`, read from the declaration lines (no parse: linear in the
    text)."""
    found = list(HEADER.finditer(text))
    out = []
    for i, m in enumerate(found):
        begin = m.start(1)
        stop = found[i + 1].start(1) if i + 1 < len(found) else len(text)
        brace = text.rfind("}", begin, stop)
        end = brace + 1 if brace >= 0 else begin + len(text[begin:stop].rstrip())
        kids: list[dict] = []
        for p in _PARTICIPANT.finditer(text, m.end(), end) if children else ():
            description = _string(p.group(3))
            role = _ROLE.search(p.group(4) or "")
            kids.append({"name": p.group(2), "kind": "participant",
                             "detail": description if description is not None else (role.group(1) if role else ""),
                             "range": (p.start(1), p.start(1) + len(p.group(0).strip())),
                             "selection": (p.start(2), p.end(2)), "children": []})
        for c in _CONTEXT.finditer(text, m.end(), end) if children else ():
            kids.append({"name": c.group(2), "kind": "context", "detail": f"= {c.group(3)}",
                             "range": (c.start(1), c.end(3)), "selection": (c.start(2), c.end(2)), "children": []})
        title = _string(m.group(3))
        out.append({"name": m.group(2), "kind": m.group(1),
                    "detail": m.group(1) + (f" {title}" if title is not None else ""),
                    "range": (begin, end), "selection": (m.start(2), m.end(2)), "children": kids})
    return out
