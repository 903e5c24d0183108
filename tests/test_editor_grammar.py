"""The TextMate grammar (editors/vscode/syntaxes/flow.tmLanguage.json) on real
files: a small scanner applies its `match` rules the way a TextMate engine does
(leftmost match wins, ties go to the earlier rule, captures scope their groups),
and every non-blank character of every example must get a scope."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import turnflow

ROOT = Path(__file__).resolve().parents[1]
VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = json.loads((VSCODE / "syntaxes" / "flow.tmLanguage.json").read_text())


def _rules(grammar: dict) -> list[tuple[re.Pattern, dict]]:
    """The grammar's top-level patterns with includes expanded, in order."""
    out: list[tuple[re.Pattern, dict]] = []

    def walk(patterns, seen=()):
        for p in patterns:
            if "include" in p:
                ref = p["include"]
                assert ref.startswith("#"), f"unsupported include {ref}"
                assert ref not in seen, f"recursive include {ref}"
                walk([grammar["repository"][ref[1:]]], (*seen, ref))
            elif "match" in p:
                out.append((re.compile(p["match"]), p))
            elif "patterns" in p:
                walk(p["patterns"], seen)
            else:
                raise AssertionError(f"unsupported rule (begin/end?): {p}")

    walk(grammar["patterns"])
    return out


RULES = _rules(GRAMMAR)


def tokenize(line: str) -> list[list[str]]:
    """Scopes per character of one line (besides the root `source.flow`)."""
    scopes: list[list[str]] = [[] for _ in line]
    pos = 0
    while pos < len(line):
        best = None
        for regex, rule in RULES:
            m = regex.search(line, pos)
            if m and (best is None or m.start() < best[0].start()):
                best = (m, rule)
        if best is None:
            break
        m, rule = best
        if "name" in rule:
            for i in range(m.start(), m.end()):
                scopes[i].append(rule["name"])
        for group, cap in rule.get("captures", {}).items():
            if m.group(int(group)) is not None:
                for i in range(m.start(int(group)), m.end(int(group))):
                    scopes[i].append(cap["name"])
        pos = m.end() if m.end() > pos else pos + 1
    return scopes


def _parsing_files() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.flow"))
    for f in sorted((ROOT / "tests" / "fixtures").rglob("*.flow")):
        try:
            turnflow.parse(f.read_text(encoding="utf-8"))
        except Exception:
            continue
        files.append(f)
    return files


FILES = _parsing_files()


def test_the_examples_are_all_there():
    assert len([f for f in FILES if f.parent == ROOT / "examples"]) == 7 and len(FILES) > 50


def editor_lines(path) -> list[str]:
    """The file's lines as an editor reads them (and the `.flow` language: docs/language.md):
    ended by `\n`, `\r\n` or `\r` only. `str.splitlines` also ends a line at U+2028, U+0085 or a
    form feed, which a comment may hold (tests/fixtures/mutants/line_separators_in_a_comment.flow)."""
    import re as _re

    with open(path, encoding="utf-8", newline="") as f:
        return _re.split(r"\r\n|\r|\n", f.read().removesuffix("\n"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_token_gets_a_scope(path):
    for number, line in enumerate(editor_lines(path), 1):
        scopes = tokenize(line)
        bare = [i for i, ch in enumerate(line) if not ch.isspace() and not scopes[i]]
        assert not bare, f"{path.name}:{number}:{bare[0] + 1}: no scope for {line[bare[0]:]!r}"


def scope_of(line: str, needle: str, nth: int = 0) -> list[str]:
    at = -1
    for _ in range(nth + 1):
        at = line.index(needle, at + 1)
    return tokenize(line)[at]


@pytest.mark.parametrize("line, needle, scope", [
    ('workflow support "Customer support triage" {', "workflow", "storage.type.block.flow"),
    ('workflow support "Customer support triage" {', "support", "entity.name.type.block.flow"),
    ('workflow support "Customer support triage" {', "Customer", "string.quoted.double.flow"),
    ('    participant user    initiator', "user", "entity.name.participant.flow"),
    ('    participant user    initiator', "initiator", "keyword.other.target.flow"),
    ('    max_turns 12', "12", "constant.numeric.flow"),
    ('    context resolved = false', "resolved", "variable.other.context-key.flow"),
    ('    context resolved = false', "false", "constant.language.flow"),
    ('    user -> terminate "resolved" when context.resolved == true', "resolved", "string.quoted.double.flow"),
    ('    user -> terminate "resolved" when context.resolved == true', "context", "variable.language.context.flow"),
    ('    user -> terminate "resolved" when context.resolved == true', "when", "keyword.control.flow"),
    ('    user -> terminate "resolved" when context.resolved == true', "->", "keyword.operator.arrow.flow"),
    ('    user -> terminate "resolved" when context.resolved == true', "==", "keyword.operator.comparison.flow"),
    ('    handoff a -> b via transfer_to_b "why"', "transfer_to_b", "entity.name.function.tool.flow"),
    ('    a -> b when tool approve-it and text contains "x"', "approve-it", "entity.name.function.tool.flow"),
    ('    expect turn_within 5m  warn', "turn_within", "support.function.expectation.flow"),
    ('    expect turn_within 5m  warn', "5m", "constant.numeric.duration.flow"),
    ('    a -> b # a -> c "not a string"', "not", "comment.line.number-sign.flow"),
    ('    a -> b "with # inside" # real', "inside", "string.quoted.double.flow"),
    ('    a -> b "with # inside" # real', "real", "comment.line.number-sign.flow"),
    ('    writer-2 -> terminate', "writer-2", "variable.other.participant.flow"),
    ('    a -> b "esc \\" quote" # c', "quote", "string.quoted.double.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', "or", "keyword.control.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', "not", "keyword.control.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', ">=", "keyword.operator.comparison.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', "len", "support.function.builtin.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', "(", "punctuation.section.parens.flow"),
    ('    a -> b when (tool x or context.n >= 3) and not len(context.p) > 0', "p)", "variable.other.context-key.flow"),
    ('    user -> previous', "previous", "keyword.other.target.flow"),
])
def test_tokens_get_the_right_scope(line, needle, scope):
    assert scope in scope_of(line, needle)


def test_vscode_manifest_starts_the_language_server():
    manifest = json.loads((VSCODE / "package.json").read_text())
    [lang] = manifest["contributes"]["languages"]
    assert lang["extensions"] == [".flow"] and (VSCODE / lang["configuration"]).is_file()
    [grammar] = manifest["contributes"]["grammars"]
    assert grammar["language"] == lang["id"] and grammar["scopeName"] == GRAMMAR["scopeName"]
    assert (VSCODE / grammar["path"]).resolve() == (VSCODE / "syntaxes" / "flow.tmLanguage.json").resolve()
    assert manifest["main"] == "./dist/extension.js"  # esbuild's bundle of extension.js (npm run bundle)
    assert (VSCODE / "extension.js").is_file() and manifest["scripts"]["bundle"].startswith("esbuild extension.js ")
    assert manifest["contributes"]["configuration"]["properties"]["turnflow.command"]["default"] == ["turnflow", "lsp"]
    assert "vscode-languageclient" in manifest["devDependencies"]  # bundled
    config = json.loads((VSCODE / "language-configuration.json").read_text())
    assert config["comments"]["lineComment"] == "#"


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="node not installed")
def test_vscode_extension_script_is_valid_javascript():
    import subprocess

    proc = subprocess.run(["node", "--check", str(VSCODE / "extension.js")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_keywords_are_not_scoped_as_names(path):
    """Every reserved word of the language (outside strings and comments) gets a keyword,
    storage or constant scope, never the plain-name fallback."""
    import re as _re

    from turnflow.dsl.ast import KEYWORDS

    for number, line in enumerate(editor_lines(path), 1):
        scopes = tokenize(line)
        for m in _re.finditer(r"[^\W\d](?:[\w-]*\w)?", line):
            here = scopes[m.start()]
            if m.group(0) not in KEYWORDS or any(s.startswith(("string", "comment")) for s in here):
                continue
            if line[m.end():m.end() + 1] == "." or line[max(0, m.start() - 1):m.start()] == ".":
                continue  # `context.KEY`: `context` is scoped as the context variable
            assert not any(s == "variable.other.participant.flow" for s in here), \
                f"{path.name}:{number}: `{m.group(0)}` scoped as a name: {here}"
            assert any(s.split(".")[0] in ("keyword", "storage", "constant", "support") for s in here), \
                f"{path.name}:{number}: `{m.group(0)}` has {here}"
