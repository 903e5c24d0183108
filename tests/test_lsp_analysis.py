"""The language server's analysis without the protocol: positions, the symbol
index, completion. These modules must not need pygls (the `lsp` extra)."""

from __future__ import annotations

import ast as pyast
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from turnflow.dsl.parser import parse
from turnflow.lsp.completion import complete, declared_names, fix_span
from turnflow.lsp.index import FlowIndex
from turnflow.lsp.positions import LineIndex

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = (ROOT / "examples" / "support.flow").read_text()


def test_plain_modules_do_not_import_the_protocol_libraries():
    for name in ("positions", "index", "completion", "features", "__init__"):
        tree = pyast.parse((ROOT / "src" / "turnflow" / "lsp" / f"{name}.py").read_text())
        imported = [n.module or "" for n in pyast.walk(tree) if isinstance(n, pyast.ImportFrom)]
        imported += [a.name for n in pyast.walk(tree) if isinstance(n, pyast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith(("pygls", "lsprotocol"))], name


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "🙂", "\r", "\t", "字"]), max_size=40),
       st.sampled_from(["utf-16", "utf-8", "utf-32"]))
def test_offset_position_round_trip(text, encoding):
    lines = LineIndex(text, encoding)
    for offset in range(len(text) + 1):
        line, character = lines.position(offset)
        if 0 < offset < len(text) and text[offset - 1:offset + 1] == "\r\n":
            # between the \r and \n of one line end: no LSP position; it reads as that line's end
            assert lines.position(offset - 1) == (line, character)
            continue
        assert lines.offset(line, character) == offset
    assert lines.position(len(text)) == lines.end


def test_line_ends_are_those_of_lsp_and_the_cli():
    """LSP (and `turnflow check`) end a line at \n, \r\n or a lone \r: a diagnostic in a file with
    old-Mac line ends was put on line 0 at character 121 instead of line 4; a position past a
    CRLF line's end landed on its \r. Other characters Python splits lines at (\f, \u2028) do not."""
    text = "a\rb\r\ncd\ne\u2028f\x0cg"
    lines = LineIndex(text, "utf-16")
    assert [lines.position(i) for i in (0, 2, 5, 8, 10, 12)] == [(0, 0), (1, 0), (2, 0), (3, 0), (3, 2), (3, 4)]
    assert lines.offset(1, 1) == 3 and lines.offset(1, 99) == 3  # past the end: before the \r\n
    assert lines.offset(0, 99) == 1 and lines.offset(2, 99) == 7
    assert lines.end == (3, 5)


def test_utf16_units():
    lines = LineIndex("a🙂b\nc", "utf-16")
    assert lines.position(2) == (0, 3) and lines.position(5) == (1, 1)
    assert LineIndex("a🙂b", "utf-8").position(2) == (0, 5)


def test_index_scopes_names_to_their_block():
    text = SUPPORT + "\nworkflow other {\n    participant triage\n    participant x\n    start triage\n" \
                     "    triage -> x\n    x -> terminate\n}\n"
    index = FlowIndex(parse(text), text)
    first = index.at(text.index("triage  \"Classifies"))
    assert first.kind == "participant" and first.declaration and first.block == 0
    assert len(index.references(first)) == 5
    second = index.at(text.index("triage -> x"))
    assert second.block == 1 and index.definition(second).start == text.index("triage\n    participant x")
    other = text.index("workflow other")
    expected = [text.index("triage", other), text.index("start triage", other) + 6, text.index("triage -> x")]
    assert [o.start for o in index.references(second)] == expected


def test_rename_rejects_bad_names():
    index = FlowIndex(parse(SUPPORT), SUPPORT)
    occ = index.at(SUPPORT.index("tech    -> user"))
    with pytest.raises(ValueError, match="not a valid participant name"):
        index.rename(occ, "terminate")
    with pytest.raises(ValueError, match="not a valid participant name"):
        index.rename(occ, "two words")
    with pytest.raises(ValueError, match="already has a participant `billing`"):
        index.rename(occ, "billing")
    with pytest.raises(ValueError, match="only participants"):
        index.rename(index.at(SUPPORT.index("transfer_to_tech")), "x")
    edits = index.rename(occ, "engineering")
    assert [SUPPORT[s:e] for s, e, _ in edits] == ["tech"] * 3


def test_symbols_outline():
    [block] = FlowIndex(parse(SUPPORT), SUPPORT).symbols()
    assert block["name"] == "support" and block["detail"] == "workflow Customer support triage"
    assert [c["name"] for c in block["children"]] == ["user", "triage", "billing", "tech", "resolved"]


def test_completion_in_text_that_does_not_parse():
    text = "workflow w {\n    participant writer tools [publish, review]\n    participant critic\n    writer -> "
    assert [c[0] for c in complete(text, len(text))][:2] == ["writer", "critic"]
    assert declared_names(text, len(text))["tool"] == ["publish", "review"]
    assert [c[0] for c in complete("", 0)] == ["workflow", "consulting", "conversation", "discussion"]
    text2 = 'workflow w {\n    participant a "x -> y # not code"\n    a -> b when '
    assert [c[0] for c in complete(text2, len(text2))] == ["tool", "context", "text contains", "not", "len"]


def test_fix_span_picks_the_misspelt_word():
    assert fix_span("tool escalte", "escalate") == (5, 12)
    assert fix_span("context.resovled == true", "resolved") == (8, 16)
    assert fix_span("writter", "writer") == (0, 7)


def test_position_lookup_at_name_edges():
    text = "workflow w {\n    participant a tools [x,y]\n    participant bb\n    start a\n    a->bb when tool x\n}\n"
    index = FlowIndex(parse(text), text)
    arrow = text.index("a->bb")
    assert index.at(arrow).name == "a" and index.at(arrow + 1).name == "a"  # the cursor just after a name
    assert index.at(arrow + 2) is None
    assert index.at(arrow + 3).name == "bb" and index.at(arrow + 5).name == "bb"
    comma = text.index("x,y")
    assert index.at(comma + 1).name == "x" and index.at(comma + 2).name == "y"
    assert index.at(text.index("start")) is None


def test_names_inside_or_not_and_comparisons_are_indexed():
    text = ("workflow w {\n    participant a tools [go]\n    participant b\n    start a\n    context n = 0\n"
            "    a -> b when (tool go or context.n >= 3) and not len(context.n) > 2\n    b -> terminate\n}\n")
    index = FlowIndex(parse(text), text)
    tool = index.at(text.index("go or"))
    assert tool.kind == "tool" and len(index.references(tool)) == 2
    key = index.at(text.index("n >= 3"))
    assert key.kind == "context" and [o.start for o in index.references(key)] == [
        text.index("n = 0"), text.index("n >= 3"), text.index("n) > 2")]
    assert [c[0] for c in complete(text, text.index("go or"))][:1] == ["go"]


def test_completion_reads_tokens_not_lines():
    """Declarations count wherever a statement starts (after `{` or `;` on the same line, too),
    and nothing inside a string or a comment is taken for one."""
    text = 'workflow w { participant a tools [go]; participant b\n    # participant ghost\n    context k = "participant c"\n    a -> '
    assert [c[0] for c in complete(text, len(text)) if c[1] == "participant"] == ["a", "b"]
    assert declared_names(text, len(text)) == {"participant": ["a", "b"], "context": ["k"], "tool": ["go"]}
