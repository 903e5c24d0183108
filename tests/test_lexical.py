"""`turnflow.dsl.lexical` holds the language's lexical facts once: they equal the grammar's
(flow.lark stays the grammar's home), no other module spells them again, and reading them
loads no parser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from turnflow.dsl import lexical

SRC = Path(__file__).resolve().parents[1] / "src"
GRAMMAR = (SRC / "turnflow" / "dsl" / "flow.lark").read_text(encoding="utf-8")


def terminal(name: str) -> str:
    m = re.search(rf"^{name}(?:\.\d+)?: /(.*)/$", GRAMMAR, re.M)
    assert m, name
    return m.group(1)


def test_name_and_string_are_the_grammars_terminals():
    assert lexical.NAME == terminal("NAME")
    assert lexical.STRING == terminal("STRING")


def test_keywords_are_the_grammars_declared_words():
    declared = {w.lower() for line in re.findall(r"^%declare (.*)$", GRAMMAR, re.M) for w in line.split()}
    assert lexical.KEYWORDS == declared


def test_vocabularies_are_keywords():
    for words in (lexical.BLOCK_KINDS, lexical.STATEMENT_KEYWORDS, lexical.TARGET_KEYWORDS):
        assert set(words) <= lexical.KEYWORDS, words
    assert {w.split()[0] for w in lexical.TERM_KEYWORDS} <= lexical.KEYWORDS


def test_target_words_are_the_ast_target_kinds_and_the_specs_tool_targets():
    """The spec is a leaf (it imports no `turnflow.dsl`), so it keeps its own tuple: the same words."""
    from turnflow import spec
    from turnflow.dsl import ast

    assert set(spec.TOOL_TARGET_KEYWORDS) == set(lexical.TARGET_KEYWORDS)
    assert set(spec.KINDS) == set(lexical.BLOCK_KINDS) == set(ast.BLOCK_KINDS)


def test_a_plain_string_is_read_as_the_string_terminal_reads_it():
    string = re.compile(lexical.STRING)
    for text in ('""', '"a b"', '"#;" x', '"a\\"b"', '"\\u00e9"', '"a" "b"', '"open', '"a\nb"'):
        plain, full = re.match(lexical.PLAIN_STRING, text), string.match(text)
        assert plain is None or (full is not None and plain[0] == full[0]), text
        assert (plain is None) == ("\\" in text or full is None), text


def test_name_re_matches_whole_names_only():
    assert lexical.NAME_RE.match("a-b_c1")
    for bad in ("1a", "a-", "-a", "a b", "a\n", ""):
        assert not lexical.NAME_RE.match(bad), bad


def test_no_other_module_spells_the_patterns():
    offenders = [str(p.relative_to(SRC)) for p in sorted((SRC / "turnflow").rglob("*.py"))
                 if p.name != "lexical.py"
                 and any(pat in p.read_text(encoding="utf-8") for pat in (r"[^\W\d](?:[\w-]*\w)?", r'"[^"\\\n\r]*'))]
    assert offenders == []


def test_importing_lexical_loads_no_parser():
    probe = ("import sys, json\nimport turnflow.dsl.lexical, turnflow.dsl.ast\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'lark' "
             "or m == 'turnflow.dsl.parser')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60).stdout
    assert out.strip() == "[]"
