"""Issue 25, item 6: the language server on a document of thousands of blocks answers symbols,
completion and hover without waiting for the whole document's analysis (a 40,000-block file:
no answer within 120 s before). Completion reads only the block around the cursor; while a
large document's analysis runs, hover and the other position requests parse only the block
around the position, and symbols come from an outline read from the declaration lines."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from turnflow.dsl.parser import parse_source
from turnflow.lsp import completion
from turnflow.lsp.blocks import block_around, outline, padded
from turnflow.lsp.features import analyse
from turnflow.lsp.index import FlowIndex

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = 5_000


def blocks(n: int) -> str:
    return "\n".join(
        f'workflow w{i} "Block {i}" {{\n    participant a{i} "Agent {i}." tools [look_{i}]\n    participant b\n'
        f"    context n = {i}\n    start a{i}\n    max_turns 8\n    a{i} -> b when tool look_{i}\n"
        "    b -> terminate\n}\n" for i in range(n))


def test_completion_reads_only_the_block_around_the_cursor(monkeypatch):
    text = blocks(BLOCKS)
    read = []
    real = completion.tokens

    def counting(*args, **kw):
        for tok in real(*args, **kw):
            read.append(tok)
            yield tok
    monkeypatch.setattr(completion, "tokens", counting)
    at = text.index(f"a{BLOCKS // 2} -> b") + len(f"a{BLOCKS // 2} -> ")
    labels = [label for label, _, _ in completion.complete(text, at)]
    assert labels[:2] == [f"a{BLOCKS // 2}", "b"]  # the enclosing block's participants, nobody else's
    assert len(read) < 200, len(read)  # one block's tokens, not the document's (about 250,000)


def test_the_outline_is_the_index_symbols():
    texts = [blocks(30)] + [p.read_text() for p in sorted((ROOT / "examples").rglob("*.flow"))]
    for text in texts:
        index = analyse(text, "x.flow").index
        assert index is not None
        assert outline(text) == index.symbols()


def test_a_block_parsed_alone_answers_like_the_whole_document():
    text = blocks(40)
    whole = analyse(text, "x.flow").index
    assert whole is not None
    for needle in ("a17 -> b", "look_17]", " b\n    context n = 23", "a39\n", "look_0\n"):
        at = text.index(needle) + 1
        start, end = block_around(text, at)
        assert text[start:end].count("workflow w") == 1 and end - start < len(text) // 10  # one block of forty
        alone = padded(text, start, end)
        assert len(alone) == end and alone[start:end] == text[start:end]
        flow, _ = parse_source(alone, "x.flow")
        part = FlowIndex(flow, alone)
        assert part.hover(at) == whole.hover(at), needle
        occ, whole_occ = part.at(at), whole.at(at)
        assert (occ.start, occ.end, occ.name) == (whole_occ.start, whole_occ.end, whole_occ.name)
        assert [(o.start, o.end) for o in part.references(occ)] == [(o.start, o.end)
                                                                   for o in whole.references(whole_occ)]


def test_the_server_answers_on_a_5000_block_document(tmp_path):
    pytest.importorskip("pygls")
    from lsprotocol import types as t
    from test_lsp import Session, doc, pos

    text = blocks(BLOCKS)
    session = Session(tmp_path)
    try:
        uri = session.open("big.flow", text)
        took = {}

        def timed(name, request):
            start = time.monotonic()
            answer = session.run(request(), timeout=60)
            took[name] = time.monotonic() - start
            return answer

        hover = timed("hover", lambda: session.client.text_document_hover_async(t.HoverParams(
            text_document=doc(uri), position=pos(text, f"a{BLOCKS // 2} -> b", 0, 1))))
        items = timed("completion", lambda: session.client.text_document_completion_async(t.CompletionParams(
            text_document=doc(uri), position=pos(text, f"a{BLOCKS // 2} -> b", 0, len(f"a{BLOCKS // 2} -> ")))))
        symbols = timed("symbols", lambda: session.client.text_document_document_symbol_async(
            t.DocumentSymbolParams(text_document=doc(uri))))
        assert hover is not None and f'participant a{BLOCKS // 2} "Agent {BLOCKS // 2}."' in hover.contents.value
        assert [i.label for i in items.items][:2] == [f"a{BLOCKS // 2}", "b"]
        assert len(symbols) == BLOCKS and symbols[7].name == "w7" and symbols[7].children[0].name == "a7"
        assert all(s < 30 for s in took.values()), took  # (the whole analysis alone takes longer here)
        assert len(session.wait_diagnostics(uri)) == BLOCKS  # then the whole document's diagnostics
    finally:
        session.close()
