"""Every request to `turnflow lsp` gets an answer (issue #25, item 10): a position outside LSP's
unsigned range (line -1, 2**31) gets InvalidParams instead of silence, a request after
`shutdown` gets InvalidRequest. Spoken over real stdio to a real server process."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _answers(proc: subprocess.Popen, want: set, timeout: float = 30) -> dict:
    buf, got = b"", {}
    end = time.monotonic() + timeout
    while not want <= set(got) and time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
        while b"\r\n\r\n" in buf:
            head, rest = buf.split(b"\r\n\r\n", 1)
            n = int(head.split(b"\r\n")[0].split(b":")[1])
            if len(rest) < n:
                break
            msg = json.loads(rest[:n])
            buf = rest[n:]
            if "id" in msg and "method" not in msg:
                got[msg["id"]] = msg
    return got


def test_every_request_gets_an_answer(tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "turnflow", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    uri = (tmp_path / "x.flow").as_uri()

    def send(obj: dict) -> None:
        assert proc.stdin is not None
        proc.stdin.write(_frame({"jsonrpc": "2.0", **obj}))
        proc.stdin.flush()

    try:
        send({"id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None, "rootUri": None}})
        send({"method": "initialized", "params": {}})
        send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "turnflow", "version": 1, "text": "workflow w {\n participant a initiator\n}\n"}}})
        for msg_id, line in ((2, -1), (3, 2 ** 31), (4, 2 ** 31 - 1)):
            send({"id": msg_id, "method": "textDocument/hover",
                  "params": {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}})
        send({"id": 5, "method": "shutdown"})
        send({"id": 6, "method": "textDocument/hover",
              "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}})
        got = _answers(proc, {1, 2, 3, 4, 5, 6})
        send({"method": "exit"})
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    assert set(got) == {1, 2, 3, 4, 5, 6}, sorted(got)
    assert got[2]["error"]["code"] == got[3]["error"]["code"] == -32602  # InvalidParams
    assert got[4].get("result") is None and "error" not in got[4]  # a valid, if far, position: no hover
    assert got[6]["error"]["code"] == -32600  # InvalidRequest after shutdown


def _messages(proc: subprocess.Popen, until, timeout: float = 30) -> list:
    """Every message the server writes until `until(messages)` holds (or the time is up)."""
    buf, got = b"", []
    end = time.monotonic() + timeout
    while not until(got) and time.monotonic() < end:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
        while b"\r\n\r\n" in buf:
            head, rest = buf.split(b"\r\n\r\n", 1)
            n = int(head.split(b"\r\n")[0].split(b":")[1])
            if len(rest) < n:
                break
            got.append(json.loads(rest[:n]))
            buf = rest[n:]
    return got


def test_a_body_that_is_not_json_gets_a_parse_error_and_the_server_stays_up(tmp_path):
    """Issue #33, item 10: a body that is not UTF-8, not JSON, or JSON that is not a request
    object gets JSON-RPC's answer (-32700 Parse error / -32600 Invalid Request, id null) instead
    of silence, and the next request is answered as usual."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "turnflow", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
    assert proc.stdin is not None

    def raw(body: bytes) -> None:
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    answered = lambda ms: any(m.get("id") == 2 for m in ms)
    try:
        raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"capabilities": {}, "processId": None, "rootUri": None}}).encode())
        raw(b'{"jsonrpc": "2.0", "id": 7, "method": "shutdown", "params": "\xff\xfe"}')  # not UTF-8
        raw(b'{"jsonrpc": "2.0", "id": 8, "method": ')  # not JSON (cut short)
        raw(b"[1, 2, 3]")  # JSON, but not a request object
        raw(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}).encode())
        got = _messages(proc, answered)
        raw(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    errors = [m for m in got if "error" in m and m.get("id") is None]
    assert [e["error"]["code"] for e in errors] == [-32700, -32700, -32600], got
    assert all("id" in e for e in errors)  # `"id": null`, as JSON-RPC 2.0 says
    assert answered(got) and [m for m in got if m.get("id") == 2][0].get("result") is None
    assert proc.returncode == 0  # `exit` after `shutdown`: the server was up all along


def _start(tmp_path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "turnflow", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)


def _reap(proc: subprocess.Popen) -> None:
    """A server the test did not see exit (a failed assertion, a hang): killed, and waited for."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _send(proc: subprocess.Popen, obj: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", **obj}))
    proc.stdin.flush()


def test_exit_without_shutdown_ends_with_status_1(tmp_path):
    """LSP: `exit` ends the server with status 0 after `shutdown`, 1 without (an editor, e.g.
    VS Code, reports the latter as a crash). The server ended with 0 either way."""
    statuses = []
    for shut_down in (True, False):
        proc = _start(tmp_path)
        try:
            _send(proc, {"id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None,
                                                                     "rootUri": None}})
            _send(proc, {"method": "initialized", "params": {}})
            want = {1}
            if shut_down:
                _send(proc, {"id": 2, "method": "shutdown"})
                want.add(2)
            assert set(_answers(proc, want)) == want
            _send(proc, {"method": "exit"})
            statuses.append(proc.wait(timeout=10))
        finally:
            _reap(proc)
    assert statuses == [0, 1]


def test_a_request_before_initialize_gets_server_not_initialized(tmp_path):
    """LSP: a request before `initialize` gets -32002 (ServerNotInitialized); it got -32603 with
    pygls' traceback ("The workspace is not available"). `initialize` afterwards works as usual."""
    proc = _start(tmp_path)
    uri = (tmp_path / "x.flow").as_uri()
    try:
        _send(proc, {"id": 1, "method": "textDocument/hover",
                     "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}})
        _send(proc, {"id": 2, "method": "initialize", "params": {"capabilities": {}, "processId": None,
                                                                 "rootUri": None}})
        _send(proc, {"id": 3, "method": "shutdown"})
        got = _answers(proc, {1, 2, 3})
        _send(proc, {"method": "exit"})
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    assert got[1]["error"]["code"] == -32002, got[1]
    assert "capabilities" in got[2]["result"] and got[3].get("result") is None
    assert proc.returncode == 0


def test_a_request_for_a_document_never_opened_gets_invalid_params(tmp_path):
    """A request naming a document that was never opened (and is no file) gets InvalidParams
    saying so, not -32603 with a FileNotFoundError traceback; a closed document likewise."""
    proc = _start(tmp_path)
    missing = (tmp_path / "missing.flow").as_uri()
    pos = {"line": 0, "character": 0}
    requests = {
        2: ("textDocument/hover", {"position": pos}),
        3: ("textDocument/completion", {"position": pos}),
        4: ("textDocument/formatting", {"options": {"tabSize": 4, "insertSpaces": True}}),
        5: ("textDocument/documentSymbol", {}),
        6: ("textDocument/definition", {"position": pos}),
        7: ("textDocument/codeAction", {"range": {"start": pos, "end": pos}, "context": {"diagnostics": []}}),
    }
    try:
        _send(proc, {"id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": None,
                                                                 "rootUri": None}})
        _send(proc, {"method": "initialized", "params": {}})
        for msg_id, (method, params) in requests.items():
            _send(proc, {"id": msg_id, "method": method, "params": {"textDocument": {"uri": missing}, **params}})
        got = _answers(proc, set(requests) | {1})
        _send(proc, {"id": 99, "method": "shutdown"})
        _answers(proc, {99})
        _send(proc, {"method": "exit"})
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    for msg_id in requests:
        error = got[msg_id].get("error")
        assert error is not None and error["code"] == -32602, got[msg_id]
        assert "not open" in error["message"] and "Traceback" not in str(error), error


def test_a_second_initialize_gets_invalid_request_and_the_server_keeps_working(tmp_path):
    """LSP: `initialize` is sent once; a second one must get an error. It was answered as the
    first (capabilities again, the initialization options applied again). Now -32600 saying the
    server is already initialized, and the open document is still checked and answered."""
    proc = _start(tmp_path)
    uri = (tmp_path / "x.flow").as_uri()
    init = {"capabilities": {}, "processId": None, "rootUri": None}
    published = lambda ms: any(m.get("method") == "textDocument/publishDiagnostics" for m in ms)
    try:
        _send(proc, {"id": 1, "method": "initialize", "params": init})
        _send(proc, {"method": "initialized", "params": {}})
        _send(proc, {"id": 2, "method": "initialize", "params": {**init, "initializationOptions": {"debounce": 9}}})
        _send(proc, {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "turnflow", "version": 1,
            "text": "workflow w {\n    participant a\n    start b\n}\n"}}})
        _send(proc, {"id": 3, "method": "textDocument/hover",
                     "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 17}}})
        got = _messages(proc, lambda ms: published(ms) and {2, 3} <= {m.get("id") for m in ms})
        _send(proc, {"id": 4, "method": "shutdown"})
        assert set(_answers(proc, {4})) == {4}
        _send(proc, {"method": "exit"})
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    answers = {m["id"]: m for m in got if "id" in m and "method" not in m}
    assert answers[2]["error"]["code"] == -32600 and "result" not in answers[2], answers[2]
    assert "already initialized" in answers[2]["error"]["message"]
    assert "participant" in answers[3]["result"]["contents"]["value"]  # still answering
    [diags] = [m["params"]["diagnostics"] for m in got if m.get("method") == "textDocument/publishDiagnostics"]
    assert "TF102" in [d["code"] for d in diags]  # `start b`: b is not declared
    assert proc.returncode == 0


def test_a_changed_configuration_file_rechecks_the_open_documents(tmp_path):
    """The project configuration (turnflow.toml, pyproject.toml's [tool.turnflow]) decides which
    findings an open document shows and how severe they are. The server asks the client to watch
    those files (dynamic registration) and, on `workspace/didChangeWatchedFiles` naming one,
    checks every open document again and publishes. It ignored the notification: an edited
    configuration showed only once the document itself changed."""
    proc = _start(tmp_path)
    config = tmp_path / "turnflow.toml"
    config.write_text('[severity]\nTF102 = "warning"\n')
    uri = (tmp_path / "x.flow").as_uri()
    other = (tmp_path / "sub" / "y.flow").as_uri()
    text = "workflow w {\n    participant a\n    participant b\n    start ab\n    a -> b\n    b -> terminate\n}\n"
    caps = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
    seen: list = []

    def publishes(n: int, timeout: float = 15) -> list:
        """The next `n` publishDiagnostics (uri -> {code: severity})."""
        def enough(ms: list) -> bool:
            return sum(m.get("method") == "textDocument/publishDiagnostics" for m in ms) >= n
        got = _messages(proc, enough, timeout)
        seen.extend(got)
        return [{m["params"]["uri"]: {d["code"]: d["severity"] for d in m["params"]["diagnostics"]}}
                for m in got if m.get("method") == "textDocument/publishDiagnostics"]

    def changed(kind: int) -> None:
        _send(proc, {"method": "workspace/didChangeWatchedFiles",
                     "params": {"changes": [{"uri": config.as_uri(), "type": kind}]}})

    try:
        _send(proc, {"id": 1, "method": "initialize", "params": {"capabilities": caps, "processId": None,
                                                                 "rootUri": tmp_path.as_uri()}})
        assert set(_answers(proc, {1})) == {1}
        _send(proc, {"method": "initialized", "params": {}})
        for u in (uri, other):
            _send(proc, {"method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": u, "languageId": "turnflow", "version": 1, "text": text}}})
        first = publishes(2)
        register = [m for m in seen if m.get("method") == "client/registerCapability"]
        assert first == [{uri: {"TF102": 2}}, {other: {"TF102": 2}}]  # a warning, as configured
        config.write_text('ignore = ["TF102"]\n')
        changed(2)
        assert sorted(publishes(2), key=str) == [{other: {}}, {uri: {}}]  # both checked again: ignored now
        config.unlink()
        changed(3)
        assert sorted(publishes(2), key=str) == [{other: {"TF102": 1}}, {uri: {"TF102": 1}}]  # no configuration: an error
        _send(proc, {"method": "workspace/didChangeWatchedFiles",  # a file that configures nothing: no new check
                     "params": {"changes": [{"uri": (tmp_path / "notes.txt").as_uri(), "type": 2}]}})
        _send(proc, {"id": 2, "method": "shutdown"})
        tail = _messages(proc, lambda ms: any(m.get("id") == 2 for m in ms))
        _send(proc, {"method": "exit"})
        proc.wait(timeout=10)
    finally:
        _reap(proc)
    assert not [m for m in tail if m.get("method") == "textDocument/publishDiagnostics"]
    [request] = register
    [registration] = request["params"]["registrations"]
    assert registration["method"] == "workspace/didChangeWatchedFiles"
    globs = {w["globPattern"] for w in registration["registerOptions"]["watchers"]}
    assert globs == {"**/turnflow.toml", "**/pyproject.toml"}
