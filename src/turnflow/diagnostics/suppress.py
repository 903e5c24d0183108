"""Inline suppressions: `# turnflow: ignore[TF203]` (or `ignore[TF203, TF206]`) on the line where
a diagnostic starts silences it. A bare `# turnflow: ignore` silences every code on that line.
Syntax errors (TF001) and unreadable files (TF000) cannot be silenced. An error silenced
this way is hidden from `turnflow check` but still blocks `turnflow compile`.

A suppression is itself checked (like ruff's RUF100): a code the catalogue does not know is
TF902, and a code (or a bare `ignore`) that silences nothing on its line is TF901. Codes of a
compile profile that did not run (TF301 in `turnflow check`) are not called unused: the
suppression is for the compile. Nor are graph-rule codes (and a bare `ignore`) inside a workflow
block whose graph rules did not run because it holds an error: they are for when it is fixed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from turnflow.diagnostics.codes import BY_CODE, Stage, diagnostic
from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.source import Span

_DIRECTIVE_RE = re.compile(r"#\s*turnflow:\s*ignore", re.IGNORECASE)  # (case-insensitive, as ruff reads noqa comments)
_CODES_RE = re.compile(r"\s*\[([A-Za-z0-9_,\s]*)\]")
_CODE_RE = re.compile(r"[A-Za-z0-9_]+")
ALL = "*"
MALFORMED = "?"  # a directive that is neither a bare `ignore` nor `ignore[CODES]`: it silences nothing
UNSUPPRESSIBLE = {"TF000", "TF001"}
UNUSED, UNKNOWN = "TF901", "TF902"


@dataclass(frozen=True)
class Suppression:
    line: int
    code: str  # upper-case code, ALL for a bare `ignore`, MALFORMED for a directive that is neither
    span: Span  # the code inside the comment (the whole directive for a bare or malformed `ignore`)
    problem: str = ""  # why a MALFORMED directive is not a suppression


def parse(comments: Iterable[Any]) -> list[Suppression]:
    """Every suppression in the file's comments, in source order. `ignore` must be followed by
    nothing, a space (a bare `ignore`, maybe with a reason after it) or `[CODES]`; anything else
    (`ignored`, `ignore(TF203)`, `ignore: TF203`, an unclosed `ignore[TF203`, `ignore[]`) is
    MALFORMED: it silences nothing (TF901), rather than silencing every code on its line."""
    out: list[Suppression] = []
    for c in comments:
        m = _DIRECTIVE_RE.search(c.text)
        if not m:
            continue
        base = c.span
        rest = c.text[m.end():]
        codes = _CODES_RE.match(rest)
        if codes is None and (not rest or rest[0].isspace()) and not rest.lstrip().startswith("["):
            out.append(Suppression(base.line, ALL, _within(base, m.start(), m.end())))
            continue
        if codes is None:
            whole = c.text[m.start():].rstrip()  # (the span: all of it; the message: its first 60 characters)
            shown = whole if len(whole) <= 60 else whole[:60] + "..."
            out.append(Suppression(base.line, MALFORMED, _within(base, m.start(), m.start() + len(whole)),
                                   f"`{shown}` is not a suppression (write `# turnflow: ignore[CODE, ...]` or a "
                                   f"bare `# turnflow: ignore`): it silences nothing{_by_name(rest)}"))
            continue
        names = list(_CODE_RE.finditer(codes.group(1)))
        if not names:
            out.append(Suppression(base.line, MALFORMED, _within(base, m.start(), m.end() + codes.end()),
                                   "`ignore[]` names no code: it silences nothing"))
        for cm in names:
            start = m.end() + codes.start(1) + cm.start()
            out.append(Suppression(base.line, cm.group().upper(), _within(base, start, start + len(cm.group()))))
    return out


def _by_name(rest: str) -> str:
    """`; a comment names rules by code: `ignore[TF203]`` when the brackets hold rule names (which
    the configuration takes, a comment does not); else nothing."""
    m = re.match(r"\s*\[([^\]]*)\]", rest)
    if m is None:
        return ""
    by_name = {row.name: row.code for row in BY_CODE.values()}
    words = [w.strip().lower() for w in m.group(1).replace(",", " ").split()]
    if not words or not all(w in by_name or w.upper() in BY_CODE for w in words):
        return ""
    return f"; a comment names rules by code: `ignore[{', '.join(by_name.get(w, w.upper()) for w in words)}]`"


def _within(comment: Span, start: int, end: int) -> Span:
    """The span of characters start..end of a (one-line) comment."""
    return Span.at(comment.line, comment.column + start, comment.line, comment.column + end,
                   comment.start + start, comment.start + end)


def _silences(s: Suppression, d: Diagnostic) -> bool:
    return d.span.line == s.line and d.code not in UNSUPPRESSIBLE and s.code in (ALL, d.code)


def apply(diags: Sequence[Diagnostic], comments: Iterable[Any], path: str = "<string>",
          profile: Optional[str] = None, silence_errors: bool = True,
          unanalysed: Sequence[tuple[int, int]] = ()) -> list[Diagnostic]:
    """The diagnostics no suppression silences, plus TF901/TF902 about the suppressions
    themselves. `profile` is the compile profile whose checks ran (None: `turnflow check`).
    With `silence_errors=False` (compiling) a suppression still counts as used but keeps an
    error of `turnflow check`: only warnings, infos and a profile's refusals (TF301) are
    silenced for compile, so a silenced error still blocks it. `unanalysed`: the (first, last)
    lines of workflow blocks whose graph rules did not run."""
    sups = parse(comments)
    if not sups:
        return list(diags)
    by_line: dict[int, list[Suppression]] = {}
    for s in sups:
        by_line.setdefault(s.line, []).append(s)
    used: set[Suppression] = set()
    kept: list[Diagnostic] = []
    for d in diags:
        hits = [s for s in by_line.get(d.span.line, ()) if _silences(s, d)]
        if hits:
            used.update(hits)
            if silence_errors or d.severity != "error" or _profile_code(d.code):
                continue
        kept.append(d)
    findings = [f for f in (_about(s, used, by_line, path, profile, unanalysed) for s in sups) if f is not None]
    table = {s.line: {x.code for x in by_line[s.line]} for s in sups}
    return kept + [f for f in findings if not _silenced_by(f, table)]


def _about(s: Suppression, used: set[Suppression], by_line: dict[int, list[Suppression]], path: str,
           profile: Optional[str], unanalysed: Sequence[tuple[int, int]] = ()) -> Optional[Diagnostic]:
    """TF902 for a suppression naming an unknown code, TF901 for one that silences nothing
    (not when it names a check of another profile or a graph rule that did not run on its line,
    nor on a line that also says `TF901`)."""
    if s.code == MALFORMED:
        return diagnostic(UNUSED, s.problem, s.span, path,
                          help="write the codes in brackets: `# turnflow: ignore[TF203, TF206]`")
    row = BY_CODE.get(s.code)
    if s.code != ALL and row is None:
        return diagnostic(UNKNOWN, f"`{s.code}` is not a turnflow diagnostic code", s.span, path,
                          help="see `turnflow rule` for the catalogue")
    if s in used or (row is not None and row.profile is not None and row.profile != profile):
        return None
    if (s.code == ALL or (row is not None and row.stage == Stage.GRAPH)) and \
            any(first <= s.line <= last for first, last in unanalysed):
        return None  # a graph rule that did not run in this block (it holds an error) may yet fire there
    if any(x.code == UNUSED for x in by_line[s.line]):
        return None  # `ignore[..., TF901]` keeps a suppression that is unused on purpose
    what = "this suppression" if s.code == ALL else f"`{s.code}`"
    why = " (it cannot be suppressed)" if s.code in UNSUPPRESSIBLE else ""
    return diagnostic(UNUSED, f"{what} silences nothing on this line{why}", s.span, path, help="remove it")


def _profile_code(code: str) -> bool:
    row = BY_CODE.get(code)
    return row is not None and row.profile is not None


def _silenced_by(d: Diagnostic, table: dict[int, set[str]]) -> bool:
    codes = table.get(d.span.line, set())
    return d.code in codes


DOCS: dict[str, str] = {}

DOCS[UNUSED] = """
    A `# turnflow: ignore` comment silences nothing.

    ## What it does
    Reports each code in a `# turnflow: ignore[...]` comment (and a bare
    `# turnflow: ignore`) when no diagnostic with that code starts on the
    comment's line, including TF000 and TF001, which cannot be silenced,
    and a directive that is not a suppression at all: `ignore` followed by
    anything but a space or `[CODES]` (`ignored`, `ignore(TF203)`,
    `ignore: TF203`, an unclosed `ignore[TF203`, `ignore[]`) silences
    nothing, rather than every code on its line. Codes of a compile profile (TF301) are not reported by `turnflow check`,
    which does not run that profile; nor are graph-rule codes (TF2xx) and a
    bare `ignore` inside a workflow block whose graph rules did not run
    because it holds an error (they may be needed once it is fixed). Add
    `TF901` to the same comment to keep a suppression on purpose.

    ## Why is this bad?
    A stale suppression hides the next real finding on that line: the rule
    it once silenced was fixed or moved, but the comment stays and keeps
    silencing whatever appears there later.

    ## Example
    ```
    workflow w {
        participant a
        participant b   # turnflow: ignore[TF203]
        start a
        a -> b
        b -> terminate "done"
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant a
        participant b
        start a
        a -> b
        b -> terminate "done"
    }
    ```
"""

DOCS[UNKNOWN] = """
    A `# turnflow: ignore[...]` comment names a code that does not exist.

    ## What it does
    Reports each code in a suppression comment that is not in the catalogue
    (`turnflow rule` lists it), at the code's position in the comment.

    ## Why is this bad?
    A misspelt code silences nothing, and the finding it was meant for is
    still reported, or worse, will be once it appears.

    ## Example
    ```
    workflow w {
        participant a
        participant b   # turnflow: ignore[TF2O3]
        start a
        a -> terminate "done"
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant a
        participant b   # turnflow: ignore[TF203]
        start a
        a -> terminate "done"
    }
    ```
"""
