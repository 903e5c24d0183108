"""Renderers: human (path:line:col: CODE severity: message + source + caret), concise (one
line each), grouped (by file), JSON (docs/cli.md), SARIF 2.1.0, GitHub workflow annotations,
JUnit XML and GitLab Code Quality."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from typing import Any, Mapping, Optional, Sequence

from turnflow.diagnostics.diagnostic import Diagnostic
from turnflow.diagnostics.codes import lookup
from turnflow.diagnostics.registry import RuleInfo, all_rules
from turnflow.source import SourceText, Span
from turnflow.term import visible
import xml.etree.ElementTree as ET
import hashlib
import os
from pathlib import Path
from urllib.parse import quote


def _caret_lines(d: Diagnostic, src: Optional[SourceText]) -> list[str]:
    """The line the diagnostic is on, with its number and a caret under the span; in a notebook,
    the cell's line numbered as in the cell."""
    if d.cell is not None:
        c = d.cell
        return _caret(c.line, c.text, c.column, c.end_column if c.end_line == c.line else len(c.text) + 1)
    if src is None:
        return []
    line = _line(src, d.span.line)
    if not line and d.span.line > src.line_count:
        return []
    end = d.span.end_column if d.span.end_line == d.span.line else len(line) + 1
    return _caret(d.span.line, line, d.span.column, end)


def _line(src: SourceText, number: int) -> str:
    """A line as an editor shows it: line 1 without a byte order mark (which is not a column)."""
    line = src.line_text(number)
    return line[1:] if number == 1 and line.startswith("\ufeff") else line


def _caret(number: int, line: str, column: int, end_column: int) -> list[str]:
    flat = line.expandtabs(1)
    shown = visible(flat)  # a control character in the source is shown as `\x1b`: the caret follows it
    if len(shown) != len(flat):
        column, end_column = len(visible(flat[:column - 1])) + 1, len(visible(flat[:end_column - 1])) + 1
    if len(shown) > 200:  # very long lines (e.g. garbage) are cut around the caret
        start = max(0, column - 80)
        shown = ("…" if start else "") + shown[start:start + 160]
        col = column - start + (1 if start else 0)
    else:
        col = column
    width = max(1, min(end_column - column, max(1, len(shown) - col + 1)))
    gutter = f"{number:>4} | "
    before, under = _cells(shown[:col - 1]), _cells(shown[col - 1:col - 1 + width])
    return [gutter + shown, " " * (len(gutter) - 2) + "| " + " " * before + "^" * max(1, under)]


def _cells(text: str) -> int:
    """How many terminal cells `text` takes: a wide (East Asian wide or fullwidth, emoji)
    character two, a combining mark none, any other one; so the caret sits under its column."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def render_text(diags: Sequence[Diagnostic], sources: Mapping[str, SourceText]) -> str:
    out: list[str] = []
    for d in diags:
        head = f"{d.path}:{d.where()}: {d.code} {d.severity}: {d.message}"
        out.append(head)
        out.extend(_caret_lines(d, sources.get(d.path)))
        for rel in d.related:
            out.append(f"     = note: {d.path}:{rel.span.line}:{rel.span.column}: {rel.message}")
        if d.help:
            out.append(f"     = help: {d.help}")
    return "\n".join(out) + ("\n" if out else "")


def render_concise(diags: Sequence[Diagnostic]) -> str:
    """One line per diagnostic (ruff's `concise`): `path:line:col: CODE severity: message`
    (`path:cell N:line:col: ...` in a notebook)."""
    return "".join(f"{d.path}:{d.where()}: {d.code} {d.severity}: {d.message}\n" for d in diags)


def render_grouped(diags: Sequence[Diagnostic]) -> str:
    """Diagnostics under their file's name (ruff's `grouped`), a blank line between files."""
    by_path: dict[str, list[Diagnostic]] = {}
    for d in diags:
        by_path.setdefault(d.path, []).append(d)
    out = []
    for path, group in by_path.items():
        width = max(len(d.where()) for d in group)
        out.append(f"{path}:\n" + "".join(
            f"  {d.where():<{width}} {d.code} {d.severity}: {d.message}\n" for d in group))
    return "\n".join(out)


def render_junit(diags: Sequence[Diagnostic]) -> str:
    """JUnit XML (ruff's `junit`): one test suite per file, one failing test case per diagnostic;
    no diagnostic: one passing test case."""

    root = ET.Element("testsuites", name="turnflow", tests=str(len(diags) or 1), failures=str(len(diags)),
                      errors="0")
    by_path: dict[str, list[Diagnostic]] = {}
    for d in diags:
        by_path.setdefault(d.path, []).append(d)
    if not diags:
        suite = ET.SubElement(root, "testsuite", name="turnflow", tests="1", disabled="0", errors="0", failures="0")
        ET.SubElement(suite, "testcase", name="No errors found", classname="turnflow")
    for path, group in by_path.items():
        suite = ET.SubElement(root, "testsuite", name=_xml_text(path), tests=str(len(group)), disabled="0",
                              errors="0", failures=str(len(group)), package="org.turnflow")
        classname = _xml_text(path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
        for d in group:
            case = ET.SubElement(suite, "testcase", name=f"org.turnflow.{d.code}", classname=classname,
                                 line=str(d.span.line), column=str(d.span.column))
            failure = ET.SubElement(case, "failure", message=_xml_text(d.message), type=d.severity)
            failure.text = _xml_text(f"line {d.span.line}, col {d.span.column}, {d.message}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _xml_text(text: str) -> str:
    """Characters XML 1.0 cannot hold at all (control characters) as `\\xNN`."""
    return "".join(c if c in "\t\n\r" or (ord(c) >= 0x20 and not 0xD800 <= ord(c) <= 0xDFFF
                                            and c not in "\ufffe\uffff") else f"\\x{ord(c):02x}" for c in text)


_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def render_gitlab(diags: Sequence[Diagnostic], root: Optional[str] = None) -> str:
    """GitLab Code Quality (a JSON array of issues: description, check_name, fingerprint,
    severity, location.path relative to the project, location.lines.begin/end). The fingerprint
    is stable across runs: path, code, message and the occurrence's rank among equal ones."""

    seen: Counter[tuple[Any, ...]] = Counter()
    issues = []
    for d in diags:
        path = repo_path(d.path, root)
        key = (path, d.code, d.message)
        seen[key] += 1
        fingerprint = hashlib.sha256("\0".join((*key, str(seen[key]))).encode("utf-8", "surrogatepass")).hexdigest()
        issues.append({
            "description": f"{d.code} {d.message}",
            "check_name": d.code,
            "fingerprint": fingerprint,
            "severity": _GITLAB_SEVERITY.get(d.severity, "minor"),
            "location": {"path": path, "lines": {"begin": d.span.line, "end": d.span.end_line}},
        })
    # a file name that is not UTF-8 holds lone surrogates: written as \\udcXX escapes, valid JSON
    return _utf8(json.dumps(issues, indent=2, ensure_ascii=False) + "\n")


def _utf8(text: str) -> str:
    """`text` with its lone surrogates (the bytes of a file name that is not UTF-8) as `\\udcfe`
    escapes: the output is valid UTF-8 whatever stream it goes to."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def repo_path(path: str, root: Optional[str] = None) -> str:
    """`path` as a CI service attaches a finding to a file of the repository: relative to `root`
    (the current folder) when it lies under it, normalised (`./a.flow`, `x/../a.flow` and
    `x//a.flow` name `a.flow`), with forward slashes. A path outside `root` is kept as given;
    `-` (standard input) stays `-`."""
    if path == "-":
        return path
    if os.path.isabs(path):
        rel = os.path.relpath(path, root or os.getcwd())
        if rel == ".." or rel.startswith(".." + os.sep):
            return _slashes(path)
        path = rel
    return _slashes(os.path.normpath(path))


def _slashes(path: str) -> str:
    """The folder separator as `/`: on Windows `\\` becomes `/`; on POSIX a `\\` is part of a
    name (`a\\b.flow` is one file) and stays."""
    return path.replace(os.sep, "/") if os.sep != "/" else path


def render_statistics(counts: Sequence[tuple[str, str, int, bool]]) -> str:
    """`check --statistics`: one line per code, most frequent first (count, code, [*] if fixable, name)."""
    if not counts:
        return ""
    width = max(len(str(n)) for _, _, n, _ in counts)
    return "".join(f"{n:>{width}}\t{code}\t{'[*] ' if fix else ''}{name}\n" for code, name, n, fix in counts)


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
RULES_URL = "https://github.com/turnflow/turnflow/blob/main/docs/rules.md"  # as the language server's default


def rule_url(code: str, name: str) -> str:
    """The rule's section of docs/rules.md (its heading `## CODE name` as GitHub anchors it)."""
    return f"{RULES_URL}#{code.lower()}-{name}"


def _sarif_rule(r: RuleInfo) -> dict[str, Any]:
    url = rule_url(r.code, r.name)
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.doc},
        "helpUri": url,
        "help": {"text": f"{r.doc}\n\n{url}", "markdown": f"{r.doc}\n\n[{r.code} {r.name}]({url})"},
        "messageStrings": {"default": {"text": "{0}"}},
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
    }


def _artifact(path: str) -> dict[str, Any]:
    """A SARIF artifactLocation: a relative path against %SRCROOT% (the folder turnflow ran in,
    as code-scanning expects), an absolute one as a file: URI; percent-encoded either way."""

    if os.path.isabs(path):
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    # the name's own bytes (a name that is not UTF-8 holds surrogates): %XX-escaped, as file URIs are
    return {"uri": quote(repo_path(path).encode("utf-8", "surrogateescape")), "uriBaseId": "%SRCROOT%"}


def _region(span: Span, src: Optional[SourceText]) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": span.line, "startColumn": span.column, "endLine": span.end_line,
                    "endColumn": span.end_column}
    if src is None:
        return region
    text = src.text[span.start:span.end]
    if text:
        region["snippet"] = {"text": text}
    return region


def _context_region(span: Span, src: Optional[SourceText]) -> Optional[dict[str, Any]]:
    """The whole lines of the region, for viewers that show the code around a result."""
    if src is None or span.line > src.line_count:
        return None
    lines = [_line(src, n) for n in range(span.line, min(span.end_line, src.line_count) + 1)]
    return {"startLine": span.line, "endLine": span.line + len(lines) - 1, "snippet": {"text": "\n".join(lines) + "\n"}}


def _fingerprint(d: Diagnostic, src: Optional[SourceText], seen: Counter[tuple[str, ...]]) -> str:
    """A result's identity for code scanning (`partialFingerprints`): the file, the code, the source
    text the result covers and its message with numbers left out (a message may quote a line
    number), and the rank among results equal in all of these; so it stays when lines above it
    move, and two results never share it."""
    text = src.text[d.span.start:d.span.end] if src is not None else ""
    key = (repo_path(d.path), d.code, text, re.sub(r"[0-9]+", "#", d.message))
    seen[key] += 1
    return hashlib.sha256("\0".join((*key, str(seen[key]))).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def render_sarif(diags: Sequence[Diagnostic], version: str, sources: Optional[Mapping[str, SourceText]] = None) -> str:
    """A SARIF 2.1.0 log: the whole catalogue as rules (helpUri, help in text and Markdown, a
    `default` message string), one result per diagnostic (message text and its argument, region
    with the source it covers as snippet, the surrounding lines as contextRegion, a stable
    `partialFingerprints`)."""

    sources = sources or {}
    rules = all_rules()
    index = {r.code: i for i, r in enumerate(rules)}
    driver = {"name": "turnflow", "informationUri": "https://github.com/turnflow/turnflow", "version": version,
              "rules": [_sarif_rule(r) for r in rules]}
    results = []
    seen: Counter[tuple[str, ...]] = Counter()
    for d in diags:
        src = sources.get(d.path)
        physical: dict[str, Any] = {"artifactLocation": _artifact(d.path), "region": _region(d.span, src)}
        context = _context_region(d.span, src)
        if context is not None:
            physical["contextRegion"] = context
        result: dict[str, object] = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL.get(d.severity, "warning"),
            "message": {"text": d.message, "id": "default", "arguments": [d.message]},
            "locations": [{"physicalLocation": physical}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        result["partialFingerprints"] = {"turnflow/v1": _fingerprint(d, src, seen)}
        if d.cell is not None:  # a notebook: the region is in the .ipynb file, the cell position rides along
            result["properties"] = {"cell": d.cell.cell, "cellLine": d.cell.line, "cellColumn": d.cell.column}
        if d.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": _artifact(d.path), "region": _region(r.span, src)}}
                for i, r in enumerate(d.related)
            ]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints",
                  "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}}}],
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
    """GitHub Actions workflow commands: `::error file=...,line=...,col=...::message`, the file
    relative to the current folder (`repo_path`), `%`, CR and LF escaped in the message, and
    also `:` and `,` in the properties, as GitHub's documentation asks."""
    lines = []
    for d in diags:
        row = lookup(d.code)
        title = f"{d.code} {row.name}" if row else d.code
        lines.append(
            f"::{_GH_LEVEL.get(d.severity, 'warning')} file={_gh_escape(repo_path(d.path), True)},line={d.span.line},"
            f"col={d.span.column},endLine={d.span.end_line},endColumn={d.span.end_column},"
            f"title={_gh_escape(title, True)}::{_gh_escape(d.message)}"
        )
    return _utf8("\n".join(lines) + ("\n" if lines else ""))


def stats_line(st: dict[str, Any]) -> str:
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
