"""Issue 33, item 9: parsing a `.flow` costs memory in proportion to its size, whatever one
token holds. One long string literal cost ~230 bytes per input byte (8 MB → 1.86 GB): the
STRING terminal was one alternation repeated per character, and Python's regex engine keeps a
frame per repetition of a group; the same held for a long run of blanks between statement
separators. Measured with tracemalloc (deterministic: the allocations of this process alone),
on 300 KB inputs, against a bound per input byte: 20 bytes for one long token (a string
literal, a run of blanks), 80 for text dense with escapes or comments (one every 4 to 9 bytes:
the engine still keeps a frame per escape or comment, ~33 bytes). Before: 124 to 261."""

from __future__ import annotations

import tracemalloc

import pytest

from turnflow.dsl.parser import parse

SIZE = 300_000
BOUND = {"string": 20, "separator": 20, "escapes": 80, "comments": 80, "tools": 80}  # bytes of peak memory per input byte


def _flow(kind: str) -> str:
    head = "workflow w {\n participant a initiator\n participant b\n start a\n"
    if kind == "string":
        return head + f' a -> b when text contains "{"x" * SIZE}"\n b -> terminate\n}}\n'
    if kind == "escapes":
        return head + ' a -> b when text contains "' + "ab\\\\" * (SIZE // 4) + '"\n b -> terminate\n}\n'
    if kind == "separator":
        return head + " a -> b;" + " \t" * (SIZE // 2) + ";\n b -> terminate\n}\n"
    if kind == "comments":
        return head + " a -> b\n" + "  # note\n" * (SIZE // 10) + " b -> terminate\n}\n"
    if kind == "tools":  # one name every 8 bytes: an AST node each (the fast path once kept ~280 bytes per byte)
        return head + " participant c tools [" + ", ".join(f"t{i:04d}" for i in range(SIZE // 7)) + "]\n}\n"
    raise AssertionError(kind)


def _peak(text: str) -> int:
    tracemalloc.start()
    try:
        flow = parse(text, "big.flow")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert flow.blocks[0].name.name == "w"


@pytest.mark.parametrize("kind", ["string", "escapes", "separator", "comments", "tools"])
def test_parse_memory_is_proportional_to_the_input(kind):
    parse("workflow w {\n participant a initiator\n participant b\n a -> b\n}\n", "warm.flow")  # the parser is built once, out of the measure
    text = _flow(kind)
    per_byte = _peak(text) / len(text)
    assert per_byte < BOUND[kind], f"{kind}: {per_byte:.0f} bytes of memory per input byte"


def test_the_rewritten_terminals_read_the_same_strings():
    text = _flow("escapes")
    flow = parse(text, "x.flow")
    rule = [s for s in flow.blocks[0].statements if type(s).__name__ == "Rule"][0]
    assert rule.terms[0].text.value == "ab\\" * (SIZE // 4)  # each `\\` read as one backslash, as before
