"""Fixes for diagnostics, as `turnflow check --fix` applies them: the "did you mean `X`?"
replacements the language server offers as quick fixes (the same `did_you_mean` and `fix_span`
of `turnflow.lsp.completion`, so an editor and the command line propose the same edit).

Safe fixes (applied by `--fix`) replace a misspelt name with the one declared nearby: a keyword
(TF001), a participant (TF102), a tool (TF207), a context key (TF208). Unsafe fixes (also
applied with `--unsafe-fixes`) change what a condition means: a literal retyped to match its
context key's initial value (TF111).

A fix never creates a rule that can never fire: a replacement after which `check` reports the
statement it edits as dead (TF203, TF204, TF207, TF212: a misspelt `delegat` whose correction
`delegate` is a tool a handoff of the same speaker already routes) is not applied, and not
counted as fixable (`verify`). Verifying costs a check of the whole text per fix, so a file gets
at most `verifications(text)` of them per command; the fixes beyond are neither applied nor counted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from turnflow.diagnostics.diagnostic import Diagnostic

SAFE = frozenset({"TF001", "TF102", "TF207", "TF208"})
#: what a fix must not make of the statement it edits: a rule that never fires
DEAD = frozenset({"TF203", "TF204", "TF207", "TF212"})
Check = Callable[[str], Sequence[Diagnostic]]
MAX_PASSES = 20  # as ruff: fix, re-check, fix what the new check proposes; never loop forever
#: each fix is verified by checking the whole fixed text (`kills`): per file and command, at most
#: max(MIN_VERIFIED, VERIFY_CHARS // its length) verifications; a fix beyond them is neither applied
#: nor counted as fixable (a file with thousands of misspellings cost thousands of checks: hours)
MIN_VERIFIED = 8
VERIFY_CHARS = 500_000


@dataclass(frozen=True)
class Fix:
    code: str
    start: int          # offsets into the text
    end: int
    replacement: str
    safe: bool
    original: str = ""  # the text replaced
    line: int = 0       # where, 1-based, in the text the fix was made in
    column: int = 0


def fix_for(d: Diagnostic, text: str) -> Optional[Fix]:
    """The fix `d` proposes in `text`, if any (the language server's quick fix, as offsets)."""
    from turnflow.lsp.completion import did_you_mean, fix_span

    replacement = did_you_mean(d.help or d.message)
    if replacement is None or d.span.end <= d.span.start:
        return None
    rel_start, rel_end = fix_span(text[d.span.start:d.span.end], replacement)
    start, end = d.span.start + rel_start, d.span.start + rel_end
    # line ends: \n, \r\n or a lone \r
    line = text.count("\n", 0, start) + text.count("\r", 0, start) - text.count("\r\n", 0, start) + 1
    column = start - max(text.rfind("\n", 0, start), text.rfind("\r", 0, start))
    column -= line == 1 and text.startswith("\ufeff")  # a BOM: no column
    return Fix(d.code, start, end, replacement, d.code in SAFE, text[start:end], line, column)


def fixes(diags: Iterable[Diagnostic], text: str, unsafe: bool = False) -> list[Fix]:
    """The applicable fixes of `diags`, without overlaps (the first of two overlapping fixes wins)."""
    chosen: list[Fix] = []
    for d in diags:
        f = fix_for(d, text)
        if f is None or not (f.safe or unsafe) or text[f.start:f.end] == f.replacement:
            continue
        if any(f.start < c.end and c.start < f.end for c in chosen):
            continue
        chosen.append(f)
    return chosen


def apply(text: str, chosen: Sequence[Fix]) -> str:
    for f in sorted(chosen, key=lambda f: f.start, reverse=True):
        text = text[:f.start] + f.replacement + text[f.end:]
    return text


def kills(f: Fix, text: str, verify: Check) -> bool:
    """Would `f` turn the statement it edits into a rule that never fires? (`verify(text)`:
    every diagnostic of a text, none filtered out by the configuration.)"""
    fixed = apply(text, [f])
    return any(d.code in DEAD and d.span.start <= f.start < d.span.end for d in verify(fixed))


def verifications(text: str) -> int:
    """How many fixes of `text` may be verified (`kills`): see `VERIFY_CHARS`."""
    return max(MIN_VERIFIED, VERIFY_CHARS // max(1, len(text)))


def fixable(diags: Iterable[Diagnostic], text: str, unsafe: bool = False, verify: Optional[Check] = None) -> set[int]:
    """The indexes of `diags` that have a fix `--fix` (or, with `unsafe`, `--unsafe-fixes`) would apply."""
    out = set()
    budget = verifications(text)
    for i, d in enumerate(diags):
        f = fix_for(d, text)
        if f is None or not (f.safe or unsafe):
            continue
        if verify is not None:
            if budget <= 0:
                break  # as `fix_text`: the fixes beyond the budget are not applied
            budget -= 1
            if kills(f, text, verify):
                continue
        out.add(i)
    return out


def fix_text(text: str, check: Check, unsafe: bool = False, verify: Optional[Check] = None) -> tuple[str, list[Fix]]:
    """Apply fixes until none is left (at most MAX_PASSES rounds): `check(text)` returns the
    diagnostics of a text (`verify`, all of them: see `kills`; default `check`). Returns the
    fixed text and every fix applied."""
    verify = verify or check
    applied: list[Fix] = []
    refused: set[tuple[int, str]] = set()
    budget = verifications(text)
    for _ in range(MAX_PASSES):
        chosen = [f for f in fixes(check(text), text, unsafe) if (f.start, f.replacement) not in refused]
        verified = []
        for f in chosen:
            if budget <= 0:
                break  # the rest stay as they are (`VERIFY_CHARS`)
            budget -= 1
            if kills(f, text, verify):
                refused.add((f.start, f.replacement))
            else:
                verified.append(f)
        chosen = verified
        if not chosen:
            break
        text = apply(text, chosen)
        applied.extend(chosen)
    return text, applied
