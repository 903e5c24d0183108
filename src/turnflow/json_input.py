"""Reading JSON that a user gave us (spec files, migrate configs) without an
internal error on hostile input: every problem is a `JSONInputError` with a
1-based line and column.

Refused: invalid JSON, `NaN` / `Infinity`, numbers out of range (integers of
more than `MAX_DIGITS` digits, floats that overflow to infinity such as `1e309`),
nesting deeper than `MAX_DEPTH`, and strings holding a lone surrogate (`"\\ud800"`
is valid JSON text but no Unicode string: it cannot be written out as UTF-8)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 200
MAX_DIGITS = 1000  # far beyond any meaningful count, far below Python's 4,300-digit conversion limit
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_LONE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                          r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


class JSONInputError(ValueError):
    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.msg, self.lineno, self.colno = message, line, column

    def __str__(self) -> str:
        return f"{self.lineno}:{self.colno}: {self.msg}"


def invalid(path: str, exc: JSONInputError) -> str:
    """The one report of JSON that cannot be read, as `decompile`, `run` and `migrate` print it:
    `PATH:LINE:COL: TF401 error: invalid JSON: REASON` (TF401, docs/rules.md)."""
    return f"{path}:{exc.lineno}:{exc.colno}: TF401 error: invalid JSON: {exc.msg}"


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class _TooLong(ValueError):
    pass


def _parse_int(raw: str) -> int:
    if len(raw.lstrip("-")) > MAX_DIGITS:
        raise _TooLong(raw)
    return int(raw)


def _parse_float(raw: str) -> float:
    value = float(raw)
    if not math.isfinite(value):
        raise _TooLong(raw)
    return value


def _constant(name: str):
    raise json.JSONDecodeError(f"{name} is not valid JSON", "", 0)


def _depth_offset(text: str) -> int:
    """The offset where nesting first exceeds MAX_DEPTH (outside strings), or -1."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return i
        elif ch in "]}":
            depth -= 1
    return -1


def loads(text: str) -> Any:
    """`json.loads(text)` with the refusals listed in the module docstring."""
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_constant)
    except _TooLong as exc:
        raw = str(exc)
        at = text.find(raw)
        shown = raw if len(raw) <= 24 else f"{raw[:12]}…({len(raw)} characters)"
        raise JSONInputError(f"number {shown} is out of range", *_position(text, max(at, 0))) from None
    except json.JSONDecodeError as exc:
        if exc.doc == "":  # from _constant: find the constant
            m = re.search(r"NaN|-?Infinity", text)
            raise JSONInputError(exc.msg, *_position(text, m.start() if m else 0)) from None
        raise JSONInputError(exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise _too_deep(text) from None
    _walk(value, text)
    return value


def _too_deep(text: str) -> JSONInputError:
    return JSONInputError(f"JSON nested more than {MAX_DEPTH} levels deep", *_position(text, max(_depth_offset(text), 0)))


def _walk(value: Any, text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH and lone surrogates (no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > MAX_DEPTH:
                raise _too_deep(text)
            items = [x for kv in v.items() for x in kv] if isinstance(v, dict) else v
            stack.extend((x, depth + 1) for x in items)
        elif isinstance(v, str) and _SURROGATE.search(v):
            m = _LONE_ESCAPE.search(text)
            line, col = _position(text, m.start()) if m else (1, 1)
            raise JSONInputError("a string holds a lone surrogate (such as \\ud800): not Unicode text", line, col)


def check_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when `value` (plain dicts/lists) nests at most `limit` levels deep."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                return False
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True
