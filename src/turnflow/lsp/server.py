"""The pygls wiring of `turnflow lsp`: protocol types in, plain analysis
(`features`, `index`, `completion`) out. Needs the `lsp` extra."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
from typing import Optional

from lsprotocol import types as t
from pygls.exceptions import (JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError,
                              JsonRpcServerNotInitialized)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument, Workspace

import turnflow
from turnflow import process
from turnflow.lsp import completion
from turnflow.lsp.features import Analysis, analyse, format_text
from turnflow.lsp.positions import LineIndex
from turnflow.diagnostics.codes import lookup
from turnflow.lsp.index import code_hover
from pygls.exceptions import JsonRpcInvalidParams
from turnflow.lsp.blocks import headers, outline
from turnflow.workspace.config import CONFIG_FILES, ConfigError, config_for_file, forget_cached
from turnflow.lsp.blocks import block_around, padded
from turnflow.lsp.index import FlowIndex
import multiprocessing
from turnflow.lsp.features import diagnose_to
from turnflow.lsp.targets import beside, target_actions

DEBOUNCE_SECONDS = 0.3
LARGE = 200_000  # characters: a larger document is analysed off the event loop, answered block by block meanwhile
MAX_SYMBOLS = 20_000  # document symbols (blocks and their children) answered with children; above, the blocks only
RULES_URL = "https://github.com/turnflow/turnflow/blob/main/docs/rules.md"  # initializationOptions.rulesUrl
_SEVERITY = {"error": t.DiagnosticSeverity.Error, "warning": t.DiagnosticSeverity.Warning,
             "info": t.DiagnosticSeverity.Information}
_SYMBOL_KIND = {"participant": t.SymbolKind.Object, "context": t.SymbolKind.Variable}
_ITEM_KIND = {"keyword": t.CompletionItemKind.Keyword, "participant": t.CompletionItemKind.Variable,
              "tool": t.CompletionItemKind.Function, "context": t.CompletionItemKind.Field,
              "expectation": t.CompletionItemKind.EnumMember, "action": t.CompletionItemKind.EnumMember}


class _Unreadable:
    """A request whose params pygls could not read (e.g. a position line of -1 or 2**31, outside
    LSP's unsigned range): it still gets an answer, the error pygls raised."""

    jsonrpc = "2.0"

    def __init__(self, msg_id, code: int, message: str) -> None:
        self.id, self.code, self.message = msg_id, code, message


class FlowProtocol(LanguageServerProtocol):
    """pygls' protocol, except that every request gets an answer: one before `initialize` gets
    ServerNotInitialized (-32002), one it cannot read gets its
    error (InvalidParams) instead of silence, a second `initialize` and one after `shutdown` get
    InvalidRequest (the server stays as the first `initialize` set it up), and a
    body that is JSON but no JSON-RPC 2.0 message (an array, a number, an object without
    `"jsonrpc": "2.0"`) gets InvalidRequest with the request's id when it has one, else null
    (a body that is not JSON at all: `FlowServer.report_server_error`)."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                return _Unreadable(data["id"], exc.code, f"{exc.message}: the request's params cannot be read")
            raise

    def handle_message(self, message):
        if not hasattr(message, "jsonrpc") or message.jsonrpc != "2.0":
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            if not isinstance(msg_id, (int, str)) or isinstance(msg_id, bool):
                msg_id = None
            self.send_error(msg_id, JsonRpcInvalidRequest.CODE, "not a JSON-RPC 2.0 request")
            return
        if isinstance(message, _Unreadable):
            self._send_response(message.id, error=t.ResponseError(code=message.code, message=message.message))
            return
        method = getattr(message, "method", None)
        if self._workspace is None and method not in (None, "initialize", "exit"):
            if getattr(message, "id", None) is not None:  # a notification before `initialize` is dropped
                self._send_response(message.id, error=t.ResponseError(
                    code=JsonRpcServerNotInitialized.CODE, message="the server is not initialized: send `initialize` first"))
            return
        if method == "initialize" and self._workspace is not None:  # LSP: `initialize` is sent once
            if getattr(message, "id", None) is not None:
                self._send_response(message.id, error=t.ResponseError(
                    code=JsonRpcInvalidRequest.CODE, message="the server is already initialized: `initialize` is "
                                                             "sent once"))
            return
        if (getattr(self, "_shutdown", False) and getattr(message, "method", "exit") != "exit"
                and getattr(message, "id", None) is not None):
            self._send_response(message.id, error=t.ResponseError(
                code=JsonRpcInvalidRequest.CODE, message="the server is shut down: only `exit` is accepted"))
            return
        super().handle_message(message)

    def send_error(self, msg_id, code: int, message: str) -> None:
        """An error response written as a plain object, so that a null id is written
        (`"id": null`, as JSON-RPC 2.0 asks when the request's id is unknown) and not left out."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_OTHER_LINE_END = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines' other line ends


class FlowDocument(TextDocument):
    """pygls' text document, with LSP's lines: they end at \n, \r\n or a lone \r only, as the
    editor counts them (pygls used `str.splitlines`, which also splits at \f, \v, \x1c-\x1e, \x85,
    \u2028 and \u2029, so an incremental edit below such a character landed on the wrong line)."""

    @property
    def lines(self):
        source = self.source
        if _OTHER_LINE_END.search(source) is None:  # the common case: splitlines is right, and faster
            return tuple(source.splitlines(True))
        return tuple(_LINE.findall(source))


class FlowWorkspace(Workspace):
    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None) -> TextDocument:
        return FlowDocument(doc_uri, source=source, version=version, language_id=language_id,
                            sync_kind=self._sync_kind, position_codec=self._position_codec)


class FlowServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("turnflow", turnflow.__version__, protocol_cls=FlowProtocol,
                         text_document_sync_kind=t.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.rules_url = RULES_URL
        self.debounce = DEBOUNCE_SECONDS
        self.config_problems: set[str] = set()  # invalid configuration files already shown
        self.line_indexes: dict[str, LineIndex] = {}  # per document, for its current text
        self.symbol_answers: dict[str, tuple[str, bool, list]] = {}  # per document: (text, analysed, answer)
        # one worker: debounced checks run one at a time, off the event loop
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnflow-check")

    def report_server_error(self, error: Exception, source) -> None:
        """A message body that is not UTF-8 or not JSON is answered as JSON-RPC 2.0 says, with
        -32700 (Parse error) and a null id (nobody can know the request's), and the server
        reads on; every other error is pygls' to report."""
        if isinstance(error, (UnicodeDecodeError, json.JSONDecodeError)):
            what = "not UTF-8" if isinstance(error, UnicodeDecodeError) else "not JSON"
            protocol: FlowProtocol = self.protocol  # type: ignore[assignment]
            protocol.send_error(None, JsonRpcParseError.CODE, f"parse error: the message body is {what}: {error}")
            return
        super().report_server_error(error, source)

    @property
    def encoding(self) -> str:
        enc = self.server_capabilities.position_encoding
        if enc is None:
            return "utf-16"
        return str(getattr(enc, "value", enc))

    def document(self, uri: str):
        """The open document `uri`; one never opened is read from disk (pygls), and one that is
        neither open nor readable is InvalidParams (it was -32603 with a FileNotFoundError traceback)."""
        doc = self.workspace.get_text_document(uri)
        try:
            _ = doc.source  # read from disk when it was never opened
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise JsonRpcInvalidParams(f"the document {uri} is not open and cannot be read: {reason}") from None
        return doc

    # -- analysis --------------------------------------------------------
    def _policy(self, uri: str):
        """The project configuration's policy for `uri`; an invalid configuration is shown
        to the user once (per message) and ignored."""

        path = to_fs_path(uri) or uri
        try:
            cfg = config_for_file(path)
        except ConfigError as exc:
            if str(exc) not in self.config_problems:
                self.config_problems.add(str(exc))
                self.window_show_message(t.ShowMessageParams(
                    type=t.MessageType.Warning, message=f"turnflow: configuration ignored: {exc}"))
            return None
        return cfg.apply if cfg is not None else None

    def _analyse(self, uri: str, text: str, policy=None) -> Analysis:
        path = to_fs_path(uri) or uri
        return analyse(text, path, self.encoding, policy)

    def publish(self, uri: str, result: Analysis, version: Optional[int]) -> None:
        if result.index is not None or len(result.text) <= LARGE:  # a large one is answered block by block
            self.analyses[uri] = result
        self.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=uri, version=version,
                                       diagnostics=[self.to_lsp(d, uri, result.lines) for d in result.diagnostics]))

    def refresh(self, uri: str) -> Analysis:
        doc = self.document(uri)
        result = self._analyse(uri, doc.source, self._policy(uri))
        self.publish(uri, result, doc.version)
        return result

    def analysis(self, uri: str) -> Optional[Analysis]:
        """The analysis of the document's current text (computed now if typing outran the debounce);
        None for a large document whose analysis is still running in the worker."""
        doc = self.document(uri)
        if len(doc.source) > LARGE:
            return None  # answered block by block; its diagnostics come from a child process
        current = self.analyses.get(uri)
        if current is None or current.text != doc.source:
            current = self._analyse(uri, doc.source, self._policy(uri))
            self.analyses[uri] = current
        return current

    def lines(self, uri: str) -> LineIndex:
        """The position index of the document's current text (kept between requests)."""
        text = self.document(uri).source
        lines = self.line_indexes.get(uri)
        if lines is None or lines.text != text:
            lines = self.line_indexes[uri] = LineIndex(text, self.encoding)
        return lines

    def analysis_at(self, uri: str, position: t.Position) -> tuple[Analysis, int]:
        """The analysis to answer a request at `position`, and its offset: the document's, or while
        a large document's is still running, the analysis of the one block around the position
        (hover, definition, references and rename are block-local)."""
        a = self.analysis(uri)
        if a is not None:
            return a, _offset(a, position)
        from turnflow.dsl.parser import parse_source

        lines = self.lines(uri)
        offset = lines.offset(position.line, position.character)
        text = padded(lines.text, *block_around(lines.text, offset))
        flow, _ = parse_source(text, to_fs_path(uri) or uri)
        return Analysis(lines.text, lines, FlowIndex(flow, text) if flow is not None else None, []), offset

    def open_or_save(self, uri: str) -> None:
        """Analyse now; a large document in the worker, so that requests are answered meanwhile."""
        if len(self.document(uri).source) > LARGE:
            self.schedule(uri, 0.0)
        else:
            self.refresh(uri)

    def schedule(self, uri: str, delay: Optional[float] = None) -> None:
        """Re-check `uri` once typing pauses (debounced). The check runs in a worker thread so that
        requests are answered meanwhile; a result for text that has changed since is dropped."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()

        async def later():
            await asyncio.sleep(self.debounce if delay is None else delay)
            doc = self.document(uri)
            text, version = doc.source, doc.version
            policy = self._policy(uri)
            if len(text) > LARGE:
                result = await self._analyse_in_child(uri, text, policy)
            else:
                result = await asyncio.get_running_loop().run_in_executor(self.worker, self._analyse, uri, text,
                                                                          policy)
            if self.pending.get(uri) is not me:
                return  # superseded by a newer change while it ran
            self.pending.pop(uri, None)
            current = self.document(uri)
            if current.source == text:
                self.publish(uri, result, version)

        me = asyncio.ensure_future(later())
        self.pending[uri] = me

    async def _analyse_in_child(self, uri: str, text: str, policy) -> Analysis:
        """The diagnostics of a large document, checked in a child process: the server keeps no
        syntax tree of it (memory) and its requests do not wait behind the check for the
        interpreter lock. A newer change cancels this and ends the child at once."""


        path = to_fs_path(uri) or uri
        ctx = multiprocessing.get_context("spawn")
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=diagnose_to, args=(send, text, path, process.switches()),
                            daemon=True, name="turnflow-check")
        child.start()
        send.close()
        try:  # waited for in a thread of its own: the worker stays free for small documents
            result = await asyncio.get_running_loop().run_in_executor(None, receive.recv)
        except EOFError:  # the child died (killed, out of memory): say so instead of staying silent
            child.join(5)
            result = f"the check of this document stopped (exit status {child.exitcode})"
        finally:
            if child.is_alive():  # cancelled by a newer change or a close: stop the check now
                child.terminate()
            child.join(5)
            receive.close()
        if isinstance(result, str):
            self.window_show_message(t.ShowMessageParams(type=t.MessageType.Error,
                                                         message=f"turnflow: {path}: {result}"))
            result = []
        diags = policy(result, path) if policy is not None else result
        return Analysis(text, LineIndex(text, self.encoding), None, diags)

    def to_lsp(self, d, uri: str, lines: LineIndex) -> t.Diagnostic:
        info = _rule(d.code)
        related = [t.DiagnosticRelatedInformation(location=t.Location(uri=uri, range=_span_range(r.span, lines)),
                                                  message=r.message) for r in d.related]
        message = d.message + (f"\nhelp: {d.help}" if d.help else "")
        anchor = f"#{d.code.lower()}-{info.name}" if info is not None else ""
        return t.Diagnostic(
            range=_span_range(d.span, lines), message=message, severity=_SEVERITY.get(d.severity),
            code=d.code, source="turnflow",
            code_description=t.CodeDescription(href=self.rules_url + anchor) if info is not None else None,
            related_information=related or None,
            data={"help": d.help, "name": d.name} if d.help else None)


def _rule(code: str):
    return lookup(code)


def _span_range(span, lines: LineIndex) -> t.Range:
    start = min(span.start, len(lines.text))
    end = min(max(span.end, span.start), len(lines.text))
    return _range(lines, start, end)


def _range(lines: LineIndex, start: int, end: int) -> t.Range:
    (l1, c1), (l2, c2) = lines.range(start, end)
    return t.Range(start=t.Position(line=l1, character=c1), end=t.Position(line=l2, character=c2))


def _offset(a: Analysis, pos: t.Position) -> int:
    return a.lines.offset(pos.line, pos.character)


server = FlowServer()


@server.feature(t.INITIALIZE)
def _initialize(ls: FlowServer, params: t.InitializeParams) -> None:
    ls.workspace.__class__ = FlowWorkspace  # its documents count lines as LSP does (FlowDocument)
    options = params.initialization_options or {}
    if isinstance(options, dict):
        if isinstance(options.get("rulesUrl"), str):
            ls.rules_url = options["rulesUrl"]
        if isinstance(options.get("debounce"), (int, float)):
            ls.debounce = max(0.0, float(options["debounce"]))


@server.feature(t.INITIALIZED)
def _initialized(ls: FlowServer, params: t.InitializedParams) -> None:
    """Ask the client to watch the configuration files (when it can register watchers itself:
    `workspace.didChangeWatchedFiles.dynamicRegistration`); a client that cannot may still send
    `workspace/didChangeWatchedFiles` for them (e.g. from its own settings)."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    ls.client_register_capability(t.RegistrationParams(registrations=[t.Registration(
        id="turnflow-configuration", method=t.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=t.DidChangeWatchedFilesRegistrationOptions(
            watchers=[t.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILES]))]))


@server.feature(t.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def _watched_files_changed(ls: FlowServer, params: t.DidChangeWatchedFilesParams) -> None:
    """A configuration file was created, changed or deleted: every open document is checked again
    under the configuration that governs it now, and its diagnostics published. Other files
    change nothing the server shows."""
    if not any(change.uri.rstrip("/").rsplit("/", 1)[-1] in CONFIG_FILES for change in params.changes):
        return
    forget_cached()
    ls.config_problems.clear()  # an invalid configuration is shown again after an edit
    for uri in list(ls.workspace.text_documents):
        ls.open_or_save(uri)


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def _did_open(ls: FlowServer, params: t.DidOpenTextDocumentParams) -> None:
    ls.open_or_save(params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def _did_change(ls: FlowServer, params: t.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
def _did_save(ls: FlowServer, params: t.DidSaveTextDocumentParams) -> None:
    ls.open_or_save(params.text_document.uri)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: FlowServer, params: t.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    ls.line_indexes.pop(uri, None)
    ls.symbol_answers.pop(uri, None)
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(t.TEXT_DOCUMENT_HOVER)
def _hover(ls: FlowServer, params: t.HoverParams) -> Optional[t.Hover]:
    a, offset = ls.analysis_at(params.text_document.uri, params.position)
    if a.index is not None:
        found = a.index.hover(offset)
    else:
        found = code_hover(a.text, offset)
    if found is None:
        return None
    start, end, markdown = found
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=markdown),
                   range=_range(a.lines, start, end))


@server.feature(t.TEXT_DOCUMENT_DEFINITION)
def _definition(ls: FlowServer, params: t.DefinitionParams) -> Optional[t.Location]:
    a, offset = ls.analysis_at(params.text_document.uri, params.position)
    if a.index is None:
        return None
    occ = a.index.at(offset)
    target = a.index.definition(occ) if occ is not None else None
    if target is None:
        return None
    return t.Location(uri=params.text_document.uri, range=_range(a.lines, target.start, target.end))


@server.feature(t.TEXT_DOCUMENT_REFERENCES)
def _references(ls: FlowServer, params: t.ReferenceParams) -> Optional[list[t.Location]]:
    a, offset = ls.analysis_at(params.text_document.uri, params.position)
    if a.index is None:
        return None
    occ = a.index.at(offset)
    if occ is None:
        return None
    return [t.Location(uri=params.text_document.uri, range=_range(a.lines, o.start, o.end))
            for o in a.index.references(occ, params.context.include_declaration)]


@server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
def _prepare_rename(ls: FlowServer, params: t.PrepareRenameParams):
    a, offset = ls.analysis_at(params.text_document.uri, params.position)
    occ = a.index.at(offset) if a.index is not None else None
    if occ is None or occ.kind != "participant":
        return None
    return t.PrepareRenamePlaceholder(range=_range(a.lines, occ.start, occ.end), placeholder=occ.name)


@server.feature(t.TEXT_DOCUMENT_RENAME)
def _rename(ls: FlowServer, params: t.RenameParams) -> Optional[t.WorkspaceEdit]:
    a, offset = ls.analysis_at(params.text_document.uri, params.position)
    if a.index is None:
        raise JsonRpcInvalidParams("the file does not parse; fix the syntax errors before renaming")
    occ = a.index.at(offset)
    if occ is None or occ.kind != "participant":
        raise JsonRpcInvalidParams("only a participant name can be renamed")
    try:
        edits = a.index.rename(occ, params.new_name)
    except ValueError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    return t.WorkspaceEdit(changes={params.text_document.uri: [
        t.TextEdit(range=_range(a.lines, s, e), new_text=new) for s, e, new in edits]})


@server.feature(t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=[".", " ", ">"]))
def _completion(ls: FlowServer, params: t.CompletionParams) -> t.CompletionList:
    doc = ls.document(params.text_document.uri)
    lines = ls.lines(params.text_document.uri)
    offset = lines.offset(params.position.line, params.position.character)
    start, end = completion.word_range(doc.source, offset)  # the whole name around the cursor is replaced
    items = []
    for i, (label, kind, detail) in enumerate(completion.complete(doc.source, offset)):
        items.append(t.CompletionItem(label=label, kind=_ITEM_KIND.get(kind), detail=detail,
                                      sort_text=f"{i:04d}",
                                      text_edit=t.TextEdit(range=_range(lines, start, end), new_text=label)))
    return t.CompletionList(is_incomplete=False, items=items)


@server.feature(t.TEXT_DOCUMENT_FORMATTING)
def _formatting(ls: FlowServer, params: t.DocumentFormattingParams) -> Optional[list[t.TextEdit]]:
    doc = ls.document(params.text_document.uri)
    new = format_text(doc.source, to_fs_path(params.text_document.uri) or params.text_document.uri)
    if new is None or new == doc.source:
        return None if new is None else []
    lines = LineIndex(doc.source, ls.encoding)
    return [t.TextEdit(range=_range(lines, 0, len(doc.source)), new_text=new)]


@server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def _symbols(ls: FlowServer, params: t.DocumentSymbolParams) -> Optional[list[t.DocumentSymbol]]:
    uri = params.text_document.uri
    a = ls.analysis(uri)
    text = ls.document(uri).source
    kept = ls.symbol_answers.get(uri)
    if kept is not None and kept[0] == text and kept[1] == (a is not None):
        return kept[2]  # editors ask again and again (outline, breadcrumbs): answered once per text
    if a is None or a.index is None:
        # a large document still being analysed, or one that does not parse (a statement being
        # typed): its outline, read from the declaration lines, so the editor's outline stays
        lines = ls.lines(uri)
        symbols = outline(lines.text, children=len(headers(lines.text)) <= MAX_SYMBOLS)
    else:
        lines, symbols = a.lines, a.index.symbols()
    if len(symbols) + sum(len(s["children"]) for s in symbols) > MAX_SYMBOLS:
        symbols = [{**s, "children": []} for s in symbols]  # a usable outline of a huge document: its blocks

    def convert(s: dict) -> t.DocumentSymbol:
        return t.DocumentSymbol(name=s["name"], detail=s["detail"] or None,
                                kind=_SYMBOL_KIND.get(s["kind"], t.SymbolKind.Module),
                                range=_range(lines, *s["range"]),
                                selection_range=_range(lines, *s["selection"]),
                                children=[convert(c) for c in s["children"]] or None)

    answer = [convert(s) for s in symbols]
    ls.symbol_answers[uri] = (text, a is not None, answer)
    return answer


COMPILE_ACTION = t.CodeActionKind.Source + ".turnflow.compile"  # `turnflow compile --target` (lsp/targets.py)


@server.feature(t.TEXT_DOCUMENT_CODE_ACTION,
                t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix, COMPILE_ACTION]))
def _code_action(ls: FlowServer, params: t.CodeActionParams) -> list[t.CodeAction]:
    uri = params.text_document.uri
    doc = ls.document(uri)
    lines = ls.lines(uri)
    actions = []
    for diag in params.context.diagnostics:
        if diag.source != "turnflow":
            continue
        help_text = diag.data.get("help") if isinstance(diag.data, dict) else None
        replacement = completion.did_you_mean(help_text or diag.message)
        if replacement is None:
            continue
        start = lines.offset(diag.range.start.line, diag.range.start.character)
        end = lines.offset(diag.range.end.line, diag.range.end.character)
        rel_start, rel_end = completion.fix_span(doc.source[start:end], replacement)
        fix_range = _range(lines, start + rel_start, start + rel_end)
        actions.append(t.CodeAction(
            title=f"Replace with `{replacement}`", kind=t.CodeActionKind.QuickFix, diagnostics=[diag],
            is_preferred=True,
            edit=t.WorkspaceEdit(changes={uri: [t.TextEdit(range=fix_range, new_text=replacement)]})))
    only = params.context.only
    if only is None or any(COMPILE_ACTION.startswith(kind) for kind in only):
        actions += _compile_actions(ls, uri, params.range.start.line + 1)
    return actions


def _compile_actions(ls: FlowServer, uri: str, line: int) -> list[t.CodeAction]:
    """`turnflow compile --target T` for the workflow block whose header is on `line` (1-based):
    each action creates the module beside the flow; a target that refuses the block is offered
    disabled with its first refusal (lsp/targets.py)."""
    a = ls.analysis(uri)
    path = to_fs_path(uri)
    if a is None or a.index is None or path is None:
        return []
    actions = []
    for act in target_actions(a.index.flow, path, line):
        if act.source is None:
            actions.append(t.CodeAction(title=act.title, kind=COMPILE_ACTION,
                                        disabled=t.CodeActionDisabled(reason=act.refusal)))
            continue
        target_uri = from_fs_path(beside(path, act.file_name)) or act.file_name
        edit = t.WorkspaceEdit(document_changes=[
            t.CreateFile(uri=target_uri, options=t.CreateFileOptions(overwrite=True)),
            t.TextDocumentEdit(text_document=t.OptionalVersionedTextDocumentIdentifier(uri=target_uri, version=None),
                               edits=[t.TextEdit(range=t.Range(start=t.Position(line=0, character=0),
                                                               end=t.Position(line=0, character=0)),
                                                 new_text=act.source)])])
        actions.append(t.CodeAction(title=act.title, kind=COMPILE_ACTION, edit=edit))
    return actions


def main() -> int:
    """Serve on stdin/stdout; the exit status is 0 after `shutdown`, 1 when the client sent `exit`
    (or closed the input) without it, as LSP asks (pygls swallows its own `sys.exit`)."""
    server.start_io()
    return 0 if getattr(server.protocol, "_shutdown", False) else 1
