"""Glob patterns (`.gitignore`, `exclude`) matched in linear time: a pattern is compiled into a
list of steps and matched by simulating every position at once (a Thompson NFA), so a
pattern like `*a*a*a*a*b` costs O(len(pattern) x len(path)) on any path — never the
exponential backtracking of a regular expression.

Syntax, as git's wildmatch: `*` (any run without `/`), `**` as a whole segment (any run),
`**/` (any run of whole folders, or none), `?` (one character but `/`), `[...]` / `[!...]` /
`[^...]` (a class, never `/`; a `]` first is literal; ranges; `\\` escapes; `[:alpha:]` and the
other POSIX names), `\\x` (x literally). A pattern git would never match (a reversed range
`[z-a]`, a `[` never closed, a lone `\\` at the end, an unknown `[:name:]`) is a `GlobError`."""

from __future__ import annotations

from typing import Optional

# step kinds
_CHAR, _ANY, _CLASS, _STAR, _DSTAR, _DIRS = range(6)


class GlobError(ValueError):
    """A pattern that cannot be compiled (a bad character range, a `[` never closed, ...)."""


class Glob:
    """`Glob(pattern, anchored=True, dir_prefix=False)`. `anchored=False`: the pattern may also
    match after any folder (`(.*/)?pattern`, a `.gitignore` pattern without a `/`);
    `dir_prefix=True`: it also matches every path below what it matches (`pattern(/.*)?`);
    `git_prefix=True`: git's reading of a `.gitignore` pattern with a `/` (dir.c's
    `match_pathname`), which compares the pattern's literal head on its own and wildmatches the
    rest as a pattern of its own, so a `**` right after that head counts as a whole segment
    (`a**/b` matches `ab` and `a/x/b`)."""

    __slots__ = ("pattern", "steps", "dir_prefix")

    def __init__(self, pattern: str, *, anchored: bool = True, dir_prefix: bool = False,
                 git_prefix: bool = False) -> None:
        self.pattern = pattern
        steps: list[tuple] = [] if anchored else [(_DIRS,)]
        steps.extend(_compile(pattern, literal_head(pattern) if git_prefix else 0))
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


def _shown(glob: str) -> str:
    return glob if len(glob) <= 60 else f"{glob[:60]}... ({len(glob)} characters)"


def _in_class(ch: str, ranges: tuple) -> bool:
    return any(lo <= ch <= hi for lo, hi in ranges)


def literal_head(glob: str) -> int:
    """The length of `glob`'s head without a wildcard or escape (git's `simple_length`)."""
    for k, c in enumerate(glob):
        if c in "*?[\\":
            return k
    return len(glob)


def _compile(glob: str, restart: int = 0) -> list[tuple]:
    """The steps of `glob`, read as git's wildmatch reads a pattern: a run of two or more `*` is
    `**` (crossing folders) only as a whole path segment (after the start or a `/`, before the end
    or a `/`), anywhere else it is one `*`; a pattern ending in a lone `\\`, a class never closed
    (`[ab`) or an unknown `[:name:]` is a GlobError (git's pattern would match nothing). `restart`:
    where a segment counts as starting besides 0 and after a `/` (see `Glob`'s `git_prefix`)."""
    steps: list[tuple] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            i = _stars(glob, i, steps, i in (0, restart))
            continue
        if c == "?":
            steps.append((_ANY,))
        elif c == "[":
            step, i = _class(glob, i)
            steps.append(step)
        elif c == "\\":
            if i + 1 == n:
                raise GlobError(f"`{_shown(glob)}` ends with a lone `\\` (write `\\\\` for a backslash)")
            i += 1
            steps.append((_CHAR, glob[i]))
        else:
            steps.append((_CHAR, c))
        i += 1
    return steps


def _stars(glob: str, i: int, steps: list[tuple], at_start: bool) -> int:
    """Append the step of the run of `*` at `i`; return where the pattern goes on."""
    j = i
    while j < len(glob) and glob[j] == "*":
        j += 1
    segment = (at_start or glob[i - 1] == "/") and (j == len(glob) or glob[j] == "/" or glob.startswith("\\/", j))
    if j - i >= 2 and segment:
        if glob.startswith("/", j):  # `**/`: any run of whole folders, or none
            steps.append((_DIRS,))
            return j + 1
        steps.append((_DSTAR,))
    elif not (steps and steps[-1][0] == _STAR):
        steps.append((_STAR,))
    return j


_NAMED = {  # git's [:name:] classes (ASCII, as git's own ctype)
    "alnum": (("0", "9"), ("A", "Z"), ("a", "z")), "alpha": (("A", "Z"), ("a", "z")),
    "blank": ((" ", " "), ("\t", "\t")), "cntrl": (("\x00", "\x1f"), ("\x7f", "\x7f")),
    "digit": (("0", "9"),), "graph": (("!", "~"),), "lower": (("a", "z"),), "print": ((" ", "~"),),
    "punct": (("!", "/"), (":", "@"), ("[", "`"), ("{", "~")),
    "space": (("\t", "\n"), ("\r", "\r"), (" ", " ")), "upper": (("A", "Z"),),
    "xdigit": (("0", "9"), ("A", "F"), ("a", "f")),
}


def _class(glob: str, i: int) -> tuple[tuple, int]:
    """The class opening at `glob[i]` (`[`) and the index of its closing `]`, as git reads one: `!`
    or `^` first negates; a `]` first (after them) is literal; `\\` escapes; `a-z` is a range
    unless the `-` is first or last; `[:alpha:]` and the other POSIX names."""
    n = len(glob)
    unclosed = GlobError(f"`[` is never closed in `{_shown(glob)}`")
    p = i + 1
    negate = glob[p:p + 1] in ("!", "^")
    p += negate
    ranges: list[tuple[str, str]] = []
    prev: Optional[str] = None  # the character a `-` may start a range from
    first = True
    while True:
        if p >= n:
            raise unclosed
        c = glob[p]
        if c == "]" and not first:
            return (_CLASS, tuple(ranges), negate), p
        first = False
        if c == "\\":
            p += 1
            if p >= n:
                raise unclosed
            c = glob[p]
        elif c == "-" and prev is not None and p + 1 < n and glob[p + 1] != "]":
            p, hi = _range_end(glob, p + 1, unclosed)
            if hi < prev:
                raise GlobError(f"bad character range {prev}-{hi} in `{_shown(glob)}`")
            ranges.append((prev, hi))
            prev, p = None, p + 1
            continue
        elif c == "[" and glob.startswith(":", p + 1):
            named = _named(glob, p, unclosed)
            if named is not None:
                ranges.extend(named[0])
                prev, p = None, named[1] + 1
                continue
        ranges.append((c, c))
        prev, p = c, p + 1


def _range_end(glob: str, p: int, unclosed: GlobError) -> tuple[int, str]:
    if glob[p] == "\\":
        p += 1
        if p >= len(glob):
            raise unclosed
    return p, glob[p]


def _named(glob: str, p: int, unclosed: GlobError) -> Optional[tuple[tuple, int]]:
    """`[:name:]` at `glob[p]`: its ranges and the index of its `]`; None when it is no such
    form (the `[` is then a literal)."""
    end = glob.find("]", p + 2)
    if end == -1:
        raise unclosed
    if end - (p + 2) < 1 or glob[end - 1] != ":":
        return None
    name = glob[p + 2:end - 1]
    if name not in _NAMED:
        raise GlobError(f"unknown character class `[:{name}:]` in `{_shown(glob)}`")
    return _NAMED[name], end


def glob_problem(pattern: str) -> Optional[str]:
    """Why `pattern` cannot be used, or None."""
    try:
        _compile(pattern)
    except GlobError as exc:
        return str(exc)
    return None
