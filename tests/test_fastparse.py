"""The parser's fast path (turnflow.dsl.fastparse) against lark, the reference:
the same AST (spans, comments and layout included) and the same diagnostics on
generated flows, on every example and fixture `.flow`, and on mutations of them
(token deletions, insertions, swaps, blanks taken out or put in), where most results
are errors that lark alone must report. The fast path reads the common statements by
their shapes (one regex each) and any other by its tokens: each text is also read
with the shapes switched off, and both readings must be equal."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flow_strategies
import strategies
from turnflow.dsl import fastparse
from turnflow.dsl.lexer import FlowLexer
from turnflow.dsl.parser import _DECODERS, _parse_source, build_parser
from turnflow.dsl.printer import format_flow, print_flow

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in [*ROOT.glob("examples/**/*.flow"), *ROOT.glob("tests/**/*.flow")])
#: the larger run: TURNFLOW_FASTPARSE_EXAMPLES=10 python3 -m pytest tests/test_fastparse.py (ten times the examples)
SCALE = int(os.environ.get("TURNFLOW_FASTPARSE_EXAMPLES", "1"))
SOME = settings(max_examples=120 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# words, punctuation and literals the grammar knows, and some it does not
PIECES = ["workflow", "participant", "start", "->", "when", "and", "or", "not", "(", ")", "{", "}", ";", "\n",
          "tool", "text", "contains", "context", ".", "==", "!=", "<", "len", "priority", "terminate", "[", "]",
          ",", "=", '"s"', '"\\q"', "1", "1.5", "99999999999999999999", "5s", "5x", "x", "*", "#c\n", "@",
          "handoff", "via", "tools", "expect", "ttl", "otherwise", "initiator", "true", "null", " "]
TOKEN = re.compile(r'"(?:[^"\\\n\r]|\\[^\n\r])*"|#[^\n\r]*|[\w.-]+|->|==|!=|<=|>=|\S|\n')


def _lexer() -> FlowLexer:
    lexer: FlowLexer = build_parser().parser.lexer
    return lexer


def _same(text: str) -> None:
    fast = _parse_source(text, "t.flow")
    slow = _parse_source(text, "t.flow", fast=False)
    assert fast == slow
    by_shapes = fastparse.parse(text, _lexer(), _DECODERS)
    by_tokens = fastparse.parse(text, _lexer(), _DECODERS, shapes=False)
    assert by_shapes == by_tokens


def _took_fast_path(text: str) -> bool:
    return fastparse.parse(text, _lexer(), _DECODERS) is not None


def _read_by_tokens(text: str, monkeypatch) -> list[str]:
    """The statements of `text` the fast path reads by their tokens (not by a shape), as written."""
    seen: list[str] = []
    by_tokens = fastparse._Reader.by_tokens

    def spy(self, pos, *args):
        read = by_tokens(self, pos, *args)
        seen.append(text[pos:read[2]].rstrip(" \t\f;\n\r"))  # up to its separator
        return read

    monkeypatch.setattr(fastparse._Reader, "by_tokens", spy)
    assert _took_fast_path(text)
    return seen


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_and_fixture_reads_the_same(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    _same(text)
    parsed = _parse_source(text, "t")[0]
    _same(format_flow(parsed) if parsed is not None else text + "}")


def test_the_fast_path_reads_the_valid_examples():
    """Otherwise the equality above would hold trivially (every text left to lark)."""
    valid = [p for p in FILES if _parse_source(p.read_text(encoding="utf-8", errors="replace"), "t")[0] is not None]
    assert valid and all(_took_fast_path(p.read_text(encoding="utf-8", errors="replace")) for p in valid)


@SOME
@given(flow_strategies.flows())
def test_generated_flows_read_the_same(flow):
    for text in (print_flow(flow), format_flow(flow)):
        assert _took_fast_path(text)
        _same(text)


@SOME
@given(strategies.flows)
def test_generated_shapes_read_the_same(flow):
    _same(print_flow(flow))


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@st.composite
def mutated(draw):
    source = draw(st.sampled_from(FILES)).read_text(encoding="utf-8", errors="replace")
    toks = _tokens(source)
    for _ in range(draw(st.integers(1, 3))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["delete", "insert", "swap", "replace"]))
        if op == "delete":
            del toks[i]
        elif op == "insert":
            toks.insert(i, draw(st.sampled_from(PIECES)))
        elif op == "swap" and i + 1 < len(toks):
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
        else:
            toks[i] = draw(st.sampled_from(PIECES))
    return " ".join(toks)


@settings(max_examples=300 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_files_read_the_same(text):
    _same(text)


#: blanks the shapes must tell apart from none
BLANKS = [" ", "\t", "  ", "\f", " \t"]
WORD = re.compile(r"[\w.-]+\Z")
SPACED_TOKEN = re.compile(r'"(?:[^"\\\n\r]|\\[^\n\r])*"|#[^\n\r]*|->|[\w.-]+|==|!=|<=|>=|\S|\n')


@st.composite
def respaced(draw):
    """A fixture or example with the blanks between its tokens changed: taken out next to
    punctuation or a string (`a->b`, `tools[x,y]`, `context.k==1`, `contains"x"`), other
    blanks put in, and once in a while two words glued (`whentool`, `priority1`, mostly an
    error lark must report). The shapes must read each valid result as the tokens do."""
    source = draw(st.sampled_from(FILES)).read_text(encoding="utf-8", errors="replace")
    toks = SPACED_TOKEN.findall(source)
    glue_words = draw(st.integers(0, 3)) == 0  # in one text out of four
    out = []
    for i, tok in enumerate(toks):
        if i and tok != "\n" and toks[i - 1] != "\n":
            words = WORD.match(tok) and WORD.match(toks[i - 1])
            glue = "" if not words and draw(st.booleans()) else draw(st.sampled_from(BLANKS))
            if words and glue_words and draw(st.integers(0, 40)) == 0:
                glue = ""
            out.append(glue)
        out.append(tok)
    return "".join(out)


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(respaced())
def test_respaced_files_read_the_same(text):
    _same(text)


#: statements the shapes read (each in a block of its own), and statements close to them that
#: they must leave to the token reader (or to lark)
SHAPED = ["a -> b", "* -> b", "a -> terminate", 'a -> terminate "why"', "a -> stay", "a -> previous",
          "a -> b when tool t", 'a -> b when text contains "x"', "a -> b when context.k == 1",
          "a -> b when context.k != -2.5", 'a -> b when context.k <= "v"', "a -> b when context.k > null",
          "a -> b when tool t and context.k == true and tool u", "a -> b priority -1",
          'a -> terminate "r" when tool t priority 2', "participant a", 'participant a "d"',
          "participant a respondent", "participant a tools []", "participant a tools [ ]", "participant a tools [ x , y ]",
          "participant a tools[x,y,z]", "participant a tools [\tx\f]",
          'participant a "d" initiator tools [x]', "handoff a -> b via t", 'handoff a -> b via t "d"',
          'handoff a -> terminate "r" via t', "context k = 1", 'context k = "v"', "context k = false",
          "start a", "max_turns 5", "otherwise -> stay", 'otherwise -> terminate "r"',
          "a->b", "a  ->\tb", "a -> b\fwhen tool t"]
BY_TOKENS = ["a -> b when tool t and tool u and tool v and tool w", "a -> b when not tool t",
             "a -> b when (tool t)", "a -> b when tool t or tool u", "a -> b when len(context.k) > 1",
             'a -> b when text contains "\\n"', "bot-1 -> b", "a -> bot-1", "é -> b", "ttl 5m",
             "expect reply_within 5s warn", "ordering round_robin", "context k = 1.5e3",
             "participant a tools [x, bot-1]", "participant a tools [é]",
             'a -> terminate"r"when tool t', 'participant a "d"initiator']
ERRORS = ["a -> b when tool t priority 1.0", "participant a tools [x,]", "participant a tools [,]",
          "participant a tools [1x]", "participant a tools [x y]", "participant a tools [x, via]",
          "start -> b", "a -> tool", "a -> b when tool via", "participant a tools [via]", "a -> b c",
          "a -> b when tool t and", "max_turns 007", "max_turns 1.5", 'a -> b "r"', "a -> stay \"r\"",
          "a -> b when context.k == nul", "a -> b when context.k = 1", "a -> b priority 2x", "a- -> b",
          "a-->b", "a -> b when tool 2x", "a -> bwhen tool t", "a -> b whentool t", "participant a initiatorx",
          "context k == 1", "a -> b when context.k == 1.5.3", 'a -> b when text contains "x', "a -> b;;c -> d e"]


@pytest.mark.parametrize("statement", SHAPED)
def test_the_shapes_read_these_statements(statement, monkeypatch):
    for text in (f"workflow w {{\n  {statement}\n}}\n", f"workflow w {{ {statement} }}",
                 f"workflow w {{ {statement}; {statement} # c\n}}"):
        _same(text)
        assert _read_by_tokens(text, monkeypatch) == []


@pytest.mark.parametrize("statement", BY_TOKENS)
def test_the_token_reader_reads_these_statements(statement, monkeypatch):
    text = f"workflow w {{\n  a -> b\n  {statement}\n  b -> a\n}}\n"
    _same(text)
    assert _read_by_tokens(text, monkeypatch) == [statement]


@pytest.mark.parametrize("statement", ERRORS)
def test_lark_reports_these_statements(statement):
    text = f"workflow w {{\n  a -> b\n  {statement}\n}}\n"
    _same(text)
    assert not _took_fast_path(text)
    assert _parse_source(text, "t.flow")[1]  # a diagnostic


@settings(max_examples=300 * SCALE, deadline=None)
@given(st.text(" \t\f;\n\rax", min_size=1, max_size=12))
def test_the_plain_separator_is_the_grammars_without_comments(text):
    """`fastparse.PLAIN_SEP` reads a text without `#` as the grammar's `_SEP` does."""
    sep = re.compile(_lexer().terminals_by_name["_SEP"].pattern.to_regexp())
    ours, theirs = re.match(fastparse.PLAIN_SEP, text), sep.match(text)
    assert (ours and ours[0]) == (theirs and theirs[0])


@pytest.mark.parametrize("text", [
    "", " ", "\n\n", "# only a comment\n", "workflow w {}", "workflow w {}workflow v{;}",
    'workflow w "t" { a -> b when not (tool x or text contains "y") and len(context.k) >= 2 priority 3 }',
    'workflow w { a -> b when (tool x and tool y) and tool z; * -> terminate "r"; otherwise -> stay }',
    "workflow w { a -> b when ((tool x or tool y)) or (tool z or tool q) }",
    "workflow w { participant a tools []; participant b \"d\" initiator tools [x, y] }",
    "workflow w { max_turns 3; context k = -1.5e+3; context j = null; expect reply_within 5m warn; ttl 2h }",
    "workflow w {\r\n  a -> b\r  b -> a # c\r\n}\r\n", "workflow w { a -> b }   \t",
    "workflow w { a -> b } @", "workflow w { max_turns 1.5 }", 'workflow w { context k = "\\x" }',
    "workflow w { ttl 99999999999999999999h }", "workflow w { max_turns 99999999999999999999 }",
    'workflow w { a -> b when text contains "\\u00e9\\n" }', "workflow w { a -> b when len(context.k) == 1 }",
    "\ufeffworkflow w { a -> b }",
])
def test_edge_cases_read_the_same(text):
    _same(text)


@pytest.mark.parametrize("sep", ["\n\n", "\n;\n", "\n \t;; \n", "\r\r", "\r\n\r\n", "\r\n", "\n\r",
                                 "; ;\n", "\n", ";", "\r\n \r\n\n", "\n\f\n"])
def test_blank_lines_without_comments_read_the_same(sep):
    """The fast path marks blank lines itself in a text without comments (`blank_before`
    on blocks and statements, as `attach_layout` marks them)."""
    text = f"{sep}workflow w {{{sep}participant a{sep}a -> b{sep}}}{sep}conversation c {{ b -> a{sep}}}{sep}"
    assert _took_fast_path(text)
    _same(text)


def test_a_long_run_of_trailing_blanks_stays_linear():
    """The scanner's catch-all alternative never makes finditer retry at every offset."""
    import time

    text = "workflow w { a -> b }" + " " * 2_000_000
    t0 = time.process_time()
    assert _took_fast_path(text)
    assert time.process_time() - t0 < 2.0


def test_the_benchmark_workflows_read_the_same():
    """bench/check_scale.py's and bench/check_blocks.py's generators, small: the fast path reads them."""
    import importlib.util

    texts = []
    for name, call in (("check_scale", lambda m: m.generate(30)), ("check_blocks", lambda m: m.blocks(30))):
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        texts.append(call(module))
    for text in texts:
        assert _took_fast_path(text)
        _same(text)


def test_the_benchmark_workflows_are_read_by_their_shapes(monkeypatch):
    """Every statement of bench/check_scale.py's and bench/check_blocks.py's files has a shape."""
    import importlib.util

    for name, call in (("check_scale", lambda m: m.generate(30)), ("check_blocks", lambda m: m.blocks(30))):
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert _read_by_tokens(call(module), monkeypatch) == []
