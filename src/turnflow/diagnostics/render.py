"""Renderers: human (path:line:col: CODE severity: message + source + caret),
JSON (docs/cli.md), SARIF 2.1.0 and GitHub workflow annotations."""

from __future__ import annotations

import json
from collections import Counter
from typing import Mapping, Optional, Sequence

from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.diagnostics.codes import lookup
from turnflow.diagnostics.registry import all_rules
from turnflow.source import SourceText


def _caret_lines(d: Diagnostic, src: Optional[SourceText]) -> list[str]:
    if src is None:
        return []
    line = src.line_text(d.span.line)
    if not line and d.span.line > src.line_count:
        return []
    shown = line.expandtabs(1)
    if len(shown) > 200:  # very long lines (e.g. garbage) are cut around the caret
        start = max(0, d.span.column - 80)
        shown = ("…" if start else "") + shown[start:start + 160]
        col = d.span.column - start + (1 if start else 0)
    else:
        col = d.span.column
    width = d.span.end_column - d.span.column if d.span.end_line == d.span.line else len(line) - d.span.column + 1
    width = max(1, min(width, max(1, len(shown) - col + 1)))
    gutter = f"{d.span.line:>4} | "
    return [gutter + shown, " " * (len(gutter) - 2) + "| " + " " * (col - 1) + "^" * width]


def render_text(diags: Sequence[Diagnostic], sources: Mapping[str, SourceText]) -> str:
    out: list[str] = []
    for d in diags:
        head = f"{d.path}:{d.span.line}:{d.span.column}: {d.code} {d.severity}: {d.message}"
        out.append(head)
        out.extend(_caret_lines(d, sources.get(d.path)))
        for rel in d.related:
            out.append(f"     = note: {d.path}:{rel.span.line}:{rel.span.column}: {rel.message}")
        if d.help:
            out.append(f"     = help: {d.help}")
    return "\n".join(out) + ("\n" if out else "")


def summary_line(diags: Sequence[Diagnostic], files: int) -> str:
    counts = Counter(d.severity for d in diags)
    if not diags:
        return f"All checks passed ({files} file{'s' if files != 1 else ''})."
    parts = []
    for sev, word in (("error", "error"), ("warning", "warning"), ("info", "info")):
        n = counts.get(sev, 0)
        if n:
            parts.append(f"{n} {word}{'s' if n != 1 and sev != 'info' else ''}")
    return f"Found {', '.join(parts)} in {files} file{'s' if files != 1 else ''}."


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render_sarif(diags: Sequence[Diagnostic], version: str) -> str:
    rules = all_rules()
    index = {r.code: i for i, r in enumerate(rules)}
    driver = {
        "name": "turnflow",
        "informationUri": "https://pypi.org/project/turnflow/",
        "version": version,
        "rules": [
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.doc},
                "help": {"text": r.doc, "markdown": r.doc},
                "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
            }
            for r in rules
        ],
    }
    results = []
    for d in diags:
        result: dict[str, object] = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL.get(d.severity, "warning"),
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": d.path.replace("\\", "/")},
                    "region": {
                        "startLine": d.span.line,
                        "startColumn": d.span.column,
                        "endLine": d.span.end_line,
                        "endColumn": d.span.end_column,
                    },
                }
            }],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": {"uri": d.path.replace("\\", "/")},
                                      "region": {"startLine": r.span.line, "startColumn": r.span.column,
                                                 "endLine": r.span.end_line, "endColumn": r.span.end_column}}}
                for i, r in enumerate(d.related)
            ]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints"}],
    }
    # a file name that is not UTF-8 holds lone surrogates: written as \\udcXX escapes, valid JSON
    return json.dumps(log, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8") + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def render_github(diags: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diags:
        row = lookup(d.code)
        title = f"{d.code} {row.name}" if row else d.code
        lines.append(
            f"::{_GH_LEVEL.get(d.severity, 'warning')} file={_gh_escape(d.path, True)},line={d.span.line},"
            f"col={d.span.column},endLine={d.span.end_line},endColumn={d.span.end_column},"
            f"title={_gh_escape(title, True)}::{_gh_escape(d.message)}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


def stats_line(st: dict) -> str:
    """One block's statistics as a line of text (docs/analysis.md, "check --stats")."""
    head = (f"{st['path']}:{st['line']}: {st['kind']} {st['block']}: {st['participants']} participants, "
            f"{st['rules']} rules")
    if st["kind"] != "workflow":
        return head
    if not st.get("analysed", True):
        return head + ", not analysed (the block has errors)"
    fewest = "never" if st["fewest_turns"] is None else str(st["fewest_turns"])
    most = st["most_turns"]
    most_text = "-" if most is None else str(most)
    if st["capped"]:
        most_text += " (max_turns)"
    return (f"{head}, {st['reachable']} reachable, fewest turns to END {fewest}, most turns {most_text}")
