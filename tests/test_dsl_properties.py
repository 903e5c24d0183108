"""Properties of the front end: print∘parse round trips, fmt is idempotent,
and the parser never raises on any input."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnflow.dsl.ast import strip_spans
from turnflow.dsl.parser import parse, parse_source
from turnflow.dsl.printer import format_flow, print_flow
from turnflow.source import SourceText
from strategies import flows

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(flows)
def test_parse_print_round_trip(flow):
    text = print_flow(flow)
    assert strip_spans(parse(text)) == strip_spans(flow)


@FAST
@given(flows)
def test_fmt_is_idempotent(flow):
    once = format_flow(parse(print_flow(flow)))
    assert format_flow(parse(once)) == once


def _assert_positioned(text, diags):
    src = SourceText(text)
    assert diags, "a failed parse must say why"
    for d in diags:
        assert d.code in ("TF001", "TF002")
        assert 1 <= d.span.line <= src.line_count
        assert d.span.column >= 1
        assert d.span.column <= len(src.line_text(d.span.line)) + 2


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
@example("workflow w {")
@example('workflow w { participant a "x')
@example("\ufeffworkflow w {}")
@example("workflow w { a -> b when context.x == 1e999999 }")
def test_parser_never_raises_on_arbitrary_text(text):
    flow, diags = parse_source(text)
    if flow is None:
        _assert_positioned(text, diags)


ALPHABET = list("{}[]();,.=*->\"#\n \\") + ["participant", "workflow", "start", "->", "when", "tool",
                                           "context", "terminate", "priority", "1", "-2", "9s", "a", "b"]


# 150 examples (was 300): tests/test_fuzz.py mutates real flows through the whole front end as well,
# and the arbitrary-text property above keeps 300
@settings(max_examples=150, deadline=None)
@given(flows, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3), st.sampled_from(ALPHABET)),
                       min_size=1, max_size=4))
def test_parser_never_raises_on_mutated_flows(flow, edits):
    text = print_flow(flow)
    for pos, cut, insert in edits:
        pos = pos % (len(text) + 1)
        text = text[:pos] + insert + text[pos + cut:]
    parsed, diags = parse_source(text)
    if parsed is None:
        _assert_positioned(text, diags)
    else:
        # whatever parses formats to text that parses to the same tree
        out = format_flow(parsed)
        assert strip_spans(parse(out).blocks) == strip_spans(parsed.blocks)
