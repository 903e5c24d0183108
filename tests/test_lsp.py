"""`turnflow lsp` end to end: a real LSP client (pygls' LanguageClient) talks
to `python -m turnflow lsp` over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types as t  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = (ROOT / "examples" / "support.flow").read_text()


class Session:
    """One server process for the module; requests run on a loop in a background thread."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.diagnostics: dict[str, list] = {}
        self.events: dict[str, threading.Event] = {}
        self.messages: list[str] = []
        self.client = LanguageClient("turnflow-test", "1")

        @self.client.feature(t.WINDOW_SHOW_MESSAGE)
        def _message(params: t.ShowMessageParams):
            self.messages.append(params.message)

        @self.client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _publish(params: t.PublishDiagnosticsParams):
            self.diagnostics.setdefault(params.uri, []).append(params.diagnostics)
            self.events.setdefault(params.uri, threading.Event()).set()

        self.run(self.client.start_io(sys.executable, "-m", "turnflow", "lsp"))
        self.init = self.run(self.client.initialize_async(t.InitializeParams(
            capabilities=t.ClientCapabilities(), root_uri=tmp.as_uri(),
            initialization_options={"debounce": 0.05, "rulesUrl": "https://example.test/rules.md"})))
        self.client.initialized(t.InitializedParams())

    def run(self, coro, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn):
        async def wrapped():
            return fn()
        return self.run(wrapped())

    def open(self, name: str, text: str) -> str:
        (self.tmp / name).parent.mkdir(parents=True, exist_ok=True)
        uri = (self.tmp / name).as_uri()
        self.events[uri] = threading.Event()
        self.call(lambda: self.client.text_document_did_open(t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="flow", version=1, text=text))))
        return uri

    def wait_diagnostics(self, uri: str) -> list:
        assert self.events[uri].wait(30), "no publishDiagnostics"
        self.events[uri].clear()
        return self.diagnostics[uri][-1]

    def close(self):
        self.run(self.client.shutdown_async(None))
        self.client.exit(None)
        self.run(self.client.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def lsp(tmp_path_factory):
    session = Session(tmp_path_factory.mktemp("lsp"))
    yield session
    session.close()


def pos(text: str, needle: str, nth: int = 0, delta: int = 0) -> t.Position:
    """The LSP position of the `nth` occurrence of `needle` (plus `delta` characters)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    return t.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))


def doc(uri):
    return t.TextDocumentIdentifier(uri=uri)


def test_initialize_advertises_the_features(lsp):
    caps = lsp.init.capabilities
    assert lsp.init.server_info.name == "turnflow"
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.rename_provider and caps.completion_provider and caps.document_formatting_provider
    assert caps.document_symbol_provider and caps.code_action_provider


BROKEN = """workflow w {
    participant writer "Drafts the text"
    participant critic
    start writter
    writer -> critic
    critic -> terminate
}
"""


def test_did_open_publishes_a_diagnostic_with_range_code_and_quick_fix(lsp):
    uri = lsp.open("broken.flow", BROKEN)
    diags = lsp.wait_diagnostics(uri)
    [d] = [d for d in diags if d.code == "TF102"]
    assert d.range == t.Range(start=pos(BROKEN, "writter"), end=pos(BROKEN, "writter", delta=7))
    assert d.severity == t.DiagnosticSeverity.Error
    assert d.source == "turnflow"
    assert d.code_description.href == "https://example.test/rules.md#tf102-undeclared-participant"
    assert "did you mean `writer`" in d.message
    actions = lsp.run(lsp.client.text_document_code_action_async(t.CodeActionParams(
        text_document=doc(uri), range=d.range, context=t.CodeActionContext(diagnostics=[d]))))
    [fix] = actions
    assert fix.title == "Replace with `writer`"
    [edit] = fix.edit.changes[uri]
    assert edit.range == d.range and edit.new_text == "writer"


def test_quick_fix_replaces_only_the_misspelt_name(lsp):
    text = ("workflow w {\n    participant a\n    participant b\n    start a\n    context resolved = false\n"
            "    a -> terminate when context.resovled == true\n    a -> b\n    b -> terminate\n}\n")
    uri = lsp.open("fix.flow", text)
    [d] = [d for d in lsp.wait_diagnostics(uri) if d.code == "TF208"]
    [fix] = lsp.run(lsp.client.text_document_code_action_async(t.CodeActionParams(
        text_document=doc(uri), range=d.range, context=t.CodeActionContext(diagnostics=[d]))))
    [edit] = fix.edit.changes[uri]
    assert edit.new_text == "resolved"
    assert edit.range == t.Range(start=pos(text, "resovled"), end=pos(text, "resovled", delta=8))


def test_syntax_error_range_and_related_information(lsp):
    text = "workflow w {\n    participant a\n    start a\n    a -> -> terminate\n}\n"
    uri = lsp.open("syntax.flow", text)
    [d] = lsp.wait_diagnostics(uri)
    assert d.code == "TF001"
    assert d.range.start == pos(text, "-> terminate")
    shadow = ("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n"
              "    a -> terminate\n    b -> terminate\n}\n")
    uri = lsp.open("shadow.flow", shadow)
    [d] = [d for d in lsp.wait_diagnostics(uri) if d.code == "TF204"]
    assert d.severity == t.DiagnosticSeverity.Warning
    assert d.range.start == pos(shadow, "a -> terminate")
    [rel] = d.related_information
    assert rel.location.uri == uri and rel.location.range.start == pos(shadow, "a -> b")


def test_change_is_rechecked_after_a_pause(lsp):
    uri = lsp.open("change.flow", BROKEN)
    assert any(d.code == "TF102" for d in lsp.wait_diagnostics(uri))
    fixed = BROKEN.replace("writter", "writer")
    lsp.call(lambda: lsp.client.text_document_did_change(t.DidChangeTextDocumentParams(
        text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[t.TextDocumentContentChangeWholeDocument(text=fixed)])))
    assert list(lsp.wait_diagnostics(uri)) == []


def test_rapid_changes_are_checked_once_for_the_latest_text(lsp):
    uri = lsp.open("typing.flow", BROKEN)
    lsp.wait_diagnostics(uri)
    before = len(lsp.diagnostics[uri])
    texts = [BROKEN.replace("writter", "w" * n) for n in range(2, 6)] + [BROKEN.replace("writter", "writer")]

    def send():
        for version, text in enumerate(texts, 2):
            lsp.client.text_document_did_change(t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)]))

    lsp.call(send)
    assert list(lsp.wait_diagnostics(uri)) == []  # the last text is valid
    # a barrier instead of a pause: one more change, checked by the same single worker after
    # anything still queued, so a late result for an older text would be published before it
    lsp.call(lambda: lsp.client.text_document_did_change(t.DidChangeTextDocumentParams(
        text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=len(texts) + 2),
        content_changes=[t.TextDocumentContentChangeWholeDocument(text=BROKEN)])))
    assert list(lsp.wait_diagnostics(uri)) != []
    published = lsp.diagnostics[uri][before:-1]
    assert len(published) < len(texts) and list(published[-1]) == []


def test_hover_on_participant_tool_context_key_and_rule_code(lsp):
    text = SUPPORT + "# turnflow: ignore[TF203]\n"
    uri = lsp.open("hover.flow", text)
    lsp.wait_diagnostics(uri)

    def hover(p):
        return lsp.run(lsp.client.text_document_hover_async(t.HoverParams(text_document=doc(uri), position=p)))

    h = hover(pos(text, "billing -> user", delta=2))
    assert 'participant billing "Invoices, refunds, payment methods"' in h.contents.value
    assert h.range == t.Range(start=pos(text, "billing -> user"), end=pos(text, "billing -> user", delta=7))
    h = hover(pos(text, "transfer_to_tech", delta=3))
    assert "tool **transfer_to_tech**" in h.contents.value and "The question is technical" in h.contents.value
    h = hover(pos(text, "context.resolved", delta=10))
    assert "context resolved = false" in h.contents.value and "initial value: `false`" in h.contents.value
    h = hover(pos(text, "TF203", delta=2))
    assert "TF203 unreachable-participant" in h.contents.value and "## What it does" in h.contents.value
    assert hover(pos(text, "Customer support")) is None


def test_definition_and_references(lsp):
    uri = lsp.open("refs.flow", SUPPORT)
    lsp.wait_diagnostics(uri)
    loc = lsp.run(lsp.client.text_document_definition_async(t.DefinitionParams(
        text_document=doc(uri), position=pos(SUPPORT, "tech    -> user", delta=1))))
    assert loc.range.start == pos(SUPPORT, "tech  ")
    refs = lsp.run(lsp.client.text_document_references_async(t.ReferenceParams(
        text_document=doc(uri), position=pos(SUPPORT, "triage", nth=1),
        context=t.ReferenceContext(include_declaration=True))))
    starts = [r.range.start for r in refs]
    assert starts == [pos(SUPPORT, "triage", n) for n in range(1, 6)]
    refs = lsp.run(lsp.client.text_document_references_async(t.ReferenceParams(
        text_document=doc(uri), position=pos(SUPPORT, "resolved ="),
        context=t.ReferenceContext(include_declaration=False))))
    assert [r.range.start for r in refs] == [pos(SUPPORT, "resolved ==")]


def test_rename_participant_across_the_block(lsp):
    uri = lsp.open("rename.flow", SUPPORT)
    lsp.wait_diagnostics(uri)
    edit = lsp.run(lsp.client.text_document_rename_async(t.RenameParams(
        text_document=doc(uri), position=pos(SUPPORT, "triage", nth=3), new_name="router")))
    edits = edit.changes[uri]
    assert len(edits) == 5 and {e.new_text for e in edits} == {"router"}
    renamed = _apply(SUPPORT, edits)
    assert "triage" not in renamed.replace("# support.flow — route", "").replace('"Customer support triage"', "")
    import turnflow

    assert [d.code for d in turnflow.check(renamed) if d.severity == "error"] == []
    with pytest.raises(Exception, match="already has a participant"):
        lsp.run(lsp.client.text_document_rename_async(t.RenameParams(
            text_document=doc(uri), position=pos(SUPPORT, "triage", nth=3), new_name="billing")))


def _apply(text: str, edits) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        s = offsets[e.range.start.line] + e.range.start.character
        end = offsets[e.range.end.line] + e.range.end.character
        text = text[:s] + e.new_text + text[end:]
    return text


def test_completion(lsp):
    text = ("workflow w {\n    participant writer tools [publish]\n    participant critic\n"
            "    context approved = false\n    expect \n    writer -> \n"
            "    critic -> terminate when context.\n    writer -> critic when tool \n    \n}\n")
    uri = lsp.open("complete.flow", text)
    lsp.wait_diagnostics(uri)

    def labels(p):
        result = lsp.run(lsp.client.text_document_completion_async(t.CompletionParams(
            text_document=doc(uri), position=p)))
        return [i.label for i in result.items]

    assert labels(pos(text, "writer -> \n", delta=10))[:2] == ["writer", "critic"]
    assert "terminate" in labels(pos(text, "writer -> \n", delta=10))
    assert labels(pos(text, "context.\n", delta=8)) == ["approved"]
    assert labels(pos(text, "tool \n", delta=5)) == ["publish"]
    assert labels(pos(text, "expect \n", delta=7)) == ["acks_within", "reply_within", "turn_within", "max_silence"]
    empty = labels(pos(text, "    \n}", delta=4))
    assert "participant" in empty and "handoff" in empty and "critic" in empty


def test_formatting_and_symbols(lsp):
    text = "workflow   w {\nparticipant a ; participant b\n start a\n a->b\n  b -> terminate\n}\n"
    uri = lsp.open("fmt.flow", text)
    lsp.wait_diagnostics(uri)
    [edit] = lsp.run(lsp.client.text_document_formatting_async(t.DocumentFormattingParams(
        text_document=doc(uri), options=t.FormattingOptions(tab_size=4, insert_spaces=True))))
    assert edit.new_text == ("workflow w {\n    participant a\n    participant b\n    start a\n    a -> b\n"
                             "    b -> terminate\n}\n")
    assert edit.range.start == t.Position(line=0, character=0)
    assert edit.range.end == t.Position(line=6, character=0)
    [block] = lsp.run(lsp.client.text_document_document_symbol_async(t.DocumentSymbolParams(
        text_document=doc(uri))))
    assert block.name == "w" and [c.name for c in block.children] == ["a", "b"]
    broken = lsp.open("fmt-broken.flow", "workflow w {\n  a -> -> b\n}\n")
    lsp.wait_diagnostics(broken)
    assert lsp.run(lsp.client.text_document_formatting_async(t.DocumentFormattingParams(
        text_document=doc(broken), options=t.FormattingOptions(tab_size=4, insert_spaces=True)))) is None


def test_project_configuration_applies_and_a_bad_one_is_shown(lsp):
    (lsp.tmp / "configured").mkdir()
    (lsp.tmp / "configured" / "turnflow.toml").write_text('[severity]\nTF102 = "warning"\n')
    uri = lsp.open("configured/a.flow", BROKEN)
    [d] = [d for d in lsp.wait_diagnostics(uri) if d.code == "TF102"]
    assert d.severity == t.DiagnosticSeverity.Warning
    (lsp.tmp / "misconfigured").mkdir()
    (lsp.tmp / "misconfigured" / "turnflow.toml").write_text('selekt = ["TF1"]\n')
    uri = lsp.open("misconfigured/a.flow", BROKEN)
    [d] = [d for d in lsp.wait_diagnostics(uri) if d.code == "TF102"]
    assert d.severity == t.DiagnosticSeverity.Error  # the invalid file is ignored...
    assert any("configuration ignored" in m and "did you mean `select`?" in m for m in lsp.messages)  # ...and said


def test_utf16_positions(lsp):
    text = ('workflow w {\n    participant a "🙂"; participant bb\n    start a\n'
            '    context k = "🙂"\n    a -> bb when context.k == "🙂"; bb -> kk\n}\n')
    uri = lsp.open("utf16.flow", text)
    [d] = [d for d in lsp.wait_diagnostics(uri) if d.code == "TF102"]
    line = text.split("\n")[d.range.start.line]
    prefix = line[: line.index("kk")]
    assert d.range.start.character == len(prefix.encode("utf-16-le")) // 2 == len(prefix) + 1  # 🙂: two units


def test_lsp_without_the_extra_says_so_and_exits_2(tmp_path):
    blocker = tmp_path / "pygls.py"
    blocker.write_text("raise ImportError('blocked for the test')\n")
    proc = subprocess.run([sys.executable, "-m", "turnflow", "lsp"], capture_output=True, text=True,
                          env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'src'}", "PATH": ""}, timeout=60)
    assert proc.returncode == 2  # (the tree under test's turnflow, not whichever one is installed)
    assert ("pip install 'turnflow[lsp] @ git+https://github.com/turnflow/turnflow' "
            "(in a checkout: pip install -e '.[lsp]')") in proc.stderr


def test_compile_to_a_framework_from_the_block_header(lsp):
    text = (Path(__file__).resolve().parents[1] / "examples" / "support.flow").read_text()
    uri = lsp.open("support.flow", text)
    lsp.wait_diagnostics(uri)
    header = pos(text, "workflow support")

    def actions(at, only=None):
        return lsp.run(lsp.client.text_document_code_action_async(t.CodeActionParams(
            text_document=doc(uri), range=t.Range(start=at, end=at),
            context=t.CodeActionContext(diagnostics=[], only=only))))

    found = {a.title: a for a in actions(header)}
    assert set(found) == {"Compile `support` to LangGraph (support_graph.py)",
                          "Compile `support` to AutoGen AgentChat (support_team.py)",
                          "Compile `support` to AutoGen AgentChat component JSON (support_team.json)",
                          "Compile `support` to AG2 GroupChat (classic) (support_chat.py)"}
    graph = found["Compile `support` to LangGraph (support_graph.py)"]
    assert graph.kind == "source.turnflow.compile" and graph.disabled is None
    create, write_it = graph.edit.document_changes
    assert create.uri.endswith("/support_graph.py") and create.options.overwrite
    import turnflow

    assert write_it.edits[0].new_text == turnflow.compile_target(text, "langgraph", block="support",
                                                                  path="support.flow")
    # the support flow keeps context: the targets without context refuse it, saying where
    for title in ("Compile `support` to AutoGen AgentChat (support_team.py)",
                  "Compile `support` to AutoGen AgentChat component JSON (support_team.json)",
                  "Compile `support` to AG2 GroupChat (classic) (support_chat.py)"):
        assert found[title].edit is None and found[title].disabled.reason.startswith("TF30")
        assert "at line 10" in found[title].disabled.reason
    assert not actions(pos(text, "participant user"))                 # not on a header line
    assert not actions(header, only=[t.CodeActionKind.QuickFix])      # the client asked for quick fixes only
    assert len(actions(header, only=[t.CodeActionKind.Source])) == 4


def test_incremental_changes_count_lines_as_the_editor_does(lsp):
    """An editor counts lines at \\n, \\r\\n and \\r only; pygls split the document with
    `str.splitlines`, which also breaks at \\f, \\v, \\x1c-\\x1e, \\x85 and \\u2028, so an edit below a
    comment holding one of them landed on the wrong line and the server's text drifted from the
    editor's (here: the rename of `a` went into the comment; no TF102 for `start a`)."""
    text = ('# form feed \x0c and line separator \u2028 in a comment\nworkflow w {\n'
            '    participant a initiator\n    participant b\n    start a\n    a -> b\n    b -> terminate "x"\n}\n')
    uri = lsp.open("separators.flow", text)
    assert list(lsp.wait_diagnostics(uri)) == []
    line = text.split("\n").index("    participant a initiator")
    edit = t.TextDocumentContentChangePartial(
        range=t.Range(start=t.Position(line=line, character=16), end=t.Position(line=line, character=17)), text="ann")
    lsp.call(lambda: lsp.client.text_document_did_change(t.DidChangeTextDocumentParams(
        text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[edit])))
    diags = lsp.wait_diagnostics(uri)
    assert [d.code for d in diags if d.code == "TF102"] == ["TF102", "TF102"], diags  # `start a`, `a -> b`
    expected = text.replace("participant a initiator", "participant ann initiator")
    symbols = lsp.run(lsp.client.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=doc(uri))))
    assert [c.name for c in symbols[0].children] == ["ann", "b"]
    [d] = [d for d in diags if "`a`" in d.message and "start" in d.message]
    assert d.range.start.line == expected.split("\n").index("    start a")


def test_the_outline_stays_while_a_line_does_not_parse(lsp):
    """Document symbols of a document with a syntax error (what the text is while one types a
    statement) were null, so the editor's outline and breadcrumbs went blank at each keystroke;
    they are now read from the declaration lines, as for a large document."""
    text = SUPPORT.replace("    start triage\n", "    start\n")
    uri = lsp.open("outline-broken.flow", text)
    assert any(d.code == "TF001" for d in lsp.wait_diagnostics(uri))
    [block] = lsp.run(lsp.client.text_document_document_symbol_async(t.DocumentSymbolParams(
        text_document=doc(uri))))
    assert block.name == "support" and block.range.start == pos(text, "workflow support")
    assert [c.name for c in block.children] == ["user", "triage", "billing", "tech", "resolved"]
    [user] = [c for c in block.children if c.name == "user"]
    assert user.selection_range.start == pos(text, "user", delta=0)


def test_a_completion_inside_a_name_replaces_the_whole_name(lsp):
    """Completing with the cursor inside a name (`start wri|tter`) inserted the label before the
    rest of it (`start writertter`): the edit covered only the part before the cursor, not the
    name `completion.word_range` finds. It now replaces the whole name."""
    text = 'workflow w {\n    participant writer "🙂" initiator; participant critic\n    start writter\n}\n'
    uri = lsp.open("complete-inside.flow", text)
    lsp.wait_diagnostics(uri)
    result = lsp.run(lsp.client.text_document_completion_async(t.CompletionParams(
        text_document=doc(uri), position=pos(text, "writter", delta=3))))
    [item] = [i for i in result.items if i.label == "writer"]
    assert _apply(text, [item.text_edit]) == text.replace("writter", "writer")
