"""The parser's fast path (turnflow.dsl.fastparse) against lark, the reference:
the same AST (spans, comments and layout included) and the same diagnostics on
generated flows, on every example and fixture `.flow`, and on mutations of them
(token deletions, insertions, swaps), where most results are errors that lark
alone must report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flow_strategies
import strategies
from turnflow.dsl import fastparse
from turnflow.dsl.parser import _DECODERS, _parse_source, build_parser
from turnflow.dsl.printer import format_flow, print_flow

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(p for p in [*ROOT.glob("examples/**/*.flow"), *ROOT.glob("tests/**/*.flow")])
SOME = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# words, punctuation and literals the grammar knows, and some it does not
PIECES = ["workflow", "participant", "start", "->", "when", "and", "or", "not", "(", ")", "{", "}", ";", "\n",
          "tool", "text", "contains", "context", ".", "==", "!=", "<", "len", "priority", "terminate", "[", "]",
          ",", "=", '"s"', '"\\q"', "1", "1.5", "99999999999999999999", "5s", "5x", "x", "*", "#c\n", "@",
          "handoff", "via", "tools", "expect", "ttl", "otherwise", "initiator", "true", "null", " "]
TOKEN = re.compile(r'"(?:[^"\\\n\r]|\\[^\n\r])*"|#[^\n\r]*|[\w.-]+|->|==|!=|<=|>=|\S|\n')


def _same(text: str) -> None:
    fast = _parse_source(text, "t.flow")
    slow = _parse_source(text, "t.flow", fast=False)
    assert fast == slow


def _took_fast_path(text: str) -> bool:
    return fastparse.parse(text, build_parser().parser.lexer, _DECODERS) is not None


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_and_fixture_reads_the_same(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    _same(text)
    _same(format_flow(_parse_source(text, "t")[0]) if _parse_source(text, "t")[0] is not None else text + "}")


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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_files_read_the_same(text):
    _same(text)


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
