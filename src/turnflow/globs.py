"""Glob patterns (`.gitignore`, `exclude`) matched in linear time: a pattern is compiled into a
list of steps and matched by simulating every position at once (a Thompson NFA), so a
pattern like `*a*a*a*a*b` costs O(len(pattern) x len(path)) on any path — never the
exponential backtracking of a regular expression.

Syntax: `*` (any run without `/`), `**` (any run), `**/` (any run of whole folders, or none),
`?` (one character but `/`), `[...]` / `[!...]` / `[^...]` (a class; a `]` first is literal),
`\\x` (x literally). A class with a reversed range (`[z-a]`) is a `GlobError`."""

from __future__ import annotations

from typing import Optional

# step kinds
_CHAR, _ANY, _CLASS, _STAR, _DSTAR, _DIRS = range(6)


class GlobError(ValueError):
    """A pattern that cannot be compiled (a bad character range)."""


class Glob:
    """`Glob(pattern, anchored=True, dir_prefix=False)`. `anchored=False`: the pattern may also
    match after any folder (`(.*/)?pattern`, a `.gitignore` pattern without a `/`);
    `dir_prefix=True`: it also matches every path below what it matches (`pattern(/.*)?`)."""

    __slots__ = ("pattern", "steps", "dir_prefix")

    def __init__(self, pattern: str, *, anchored: bool = True, dir_prefix: bool = False) -> None:
        self.pattern = pattern
        steps: list[tuple] = [] if anchored else [(_DIRS,)]
        steps.extend(_compile(pattern))
        self.steps = steps
        self.dir_prefix = dir_prefix

    def match(self, text: str) -> bool:
        steps, n = self.steps, len(self.steps)
        # a state is 2*i (at step i, may take it or skip an optional step) or 2*i+1 (inside a
        # `**/` run after a non-`/` character: must reach a `/` before leaving it)
        current = _closure({0}, steps)
        for ch in text:
            if 2 * n in current and self.dir_prefix and ch == "/":
                return True
            nxt: set[int] = set()
            for st in current:
                i, inside = divmod(st, 2)
                if i >= n:
                    continue
                step = steps[i]
                kind = step[0]
                if kind == _CHAR:
                    if ch == step[1]:
                        nxt.add(2 * i + 2)
                elif kind == _ANY:
                    if ch != "/":
                        nxt.add(2 * i + 2)
                elif kind == _CLASS:
                    if ch != "/" and _in_class(ch, step[1]) != step[2]:
                        nxt.add(2 * i + 2)
                elif kind == _STAR:
                    if ch != "/":
                        nxt.add(2 * i)
                elif kind == _DSTAR:
                    nxt.add(2 * i)
                else:  # _DIRS: (.*/)?
                    nxt.add(2 * i if ch == "/" else 2 * i + 1)
            if not nxt:
                return False
            current = _closure(nxt, steps)
        return 2 * n in current


def _closure(states: set[int], steps: list[tuple]) -> set[int]:
    """Add the states reachable without reading: past a `*`, `**` or `**/` (not from inside one)."""
    todo = list(states)
    out = set(states)
    while todo:
        st = todo.pop()
        i, inside = divmod(st, 2)
        if i < len(steps) and not inside and steps[i][0] in (_STAR, _DSTAR, _DIRS):
            if 2 * i + 2 not in out:
                out.add(2 * i + 2)
                todo.append(2 * i + 2)
    return out


def _in_class(ch: str, ranges: tuple) -> bool:
    return any(lo <= ch <= hi for lo, hi in ranges)


def _compile(glob: str) -> list[tuple]:
    steps: list[tuple] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            steps.append((_DIRS,))
            i += 3
            continue
        if glob.startswith("**", i):
            steps.append((_DSTAR,))
            i += 2
            continue
        if c == "*":
            if not (steps and steps[-1][0] == _STAR):  # `**`-free runs of `*` are one step
                steps.append((_STAR,))
        elif c == "?":
            steps.append((_ANY,))
        elif c == "[":
            j = glob.find("]", i + 2)
            if j == -1:
                steps.append((_CHAR, c))
            else:
                steps.append(_class(glob[i + 1:j], glob))
                i = j
        elif c == "\\" and i + 1 < len(glob):
            i += 1
            steps.append((_CHAR, glob[i]))
        else:
            steps.append((_CHAR, c))
        i += 1
    return steps


def _class(body: str, glob: str) -> tuple:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        lo = body[k]
        if lo == "\\" and k + 1 < len(body):
            k += 1
            lo = body[k]
        if k + 2 < len(body) and body[k + 1] == "-":
            hi = body[k + 2]
            if hi < lo:
                raise GlobError(f"bad character range {lo}-{hi} in `{glob}`")
            ranges.append((lo, hi))
            k += 3
        else:
            ranges.append((lo, lo))
            k += 1
    return (_CLASS, tuple(ranges), negate)


def glob_problem(pattern: str) -> Optional[str]:
    """Why `pattern` cannot be used, or None."""
    try:
        _compile(pattern)
    except GlobError as exc:
        return str(exc)
    return None
