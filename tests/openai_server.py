"""A local OpenAI-compatible chat-completions server for tests: real HTTP on 127.0.0.1 (stdlib
http.server in a thread), answers from a test-given responder, records every request body.
Bounded: it stops by itself after `max_requests` requests or `deadline` seconds.

Like the real API it refuses (400) a request whose `tool` messages do not answer the tool calls
of the assistant message before them, so a client that gets the protocol wrong fails the test.
tests/anthropic_server.py reuses the machinery for the Anthropic Messages API."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

# (request body, 1-based request number) -> (status, payload[, delay[, response headers]]).
# A payload of type bytes is sent as it is (garbage where JSON is expected); status DROP sends the
# headers and half the body, then closes the connection (a server or proxy dying mid-response).
Responder = Callable[[dict, int], tuple]
DROP = 0


def with_test_key(monkeypatch, key_env: str) -> None:
    """The environment a model agent test runs in: its API key in `key_env`, and no proxy
    variable that would send the client anywhere but the fake server on 127.0.0.1."""
    monkeypatch.setenv(key_env, "sk-test")
    for v in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(v, raising=False)


def completion(message: dict, finish_reason: str = "stop", model: str = "test-model") -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def say(text: str) -> tuple:
    return 200, completion({"role": "assistant", "content": text})


def call(name: str, arguments: str = "{}", text: Optional[str] = None, n: int = 1) -> tuple:
    return calls([(name, arguments)], text, n)


def calls(named: list, text: Optional[str] = None, n: int = 1) -> tuple:
    """One reply with several tool calls: `named` is [(name, arguments JSON text or a mapping)];
    their ids are call_N_1, call_N_2, ..."""
    return 200, completion({"role": "assistant", "content": text,
                            "tool_calls": [{"id": f"call_{n}" if len(named) == 1 else f"call_{n}_{i}",
                                            "type": "function",
                                            "function": {"name": name, "arguments": a if isinstance(a, str)
                                                         else json.dumps(a)}}
                                           for i, (name, a) in enumerate(named, 1)]}, "tool_calls")


def tool_results(body: dict) -> list[str]:
    """The contents of the `tool` messages of the last round of a request."""
    out = []
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "tool":
            break
        out.insert(0, m["content"])
    return out


def openai_problem(body: dict) -> Optional[str]:
    """Why the real chat-completions API would refuse this request (the parts a tool loop can get wrong)."""
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages must be a non-empty list"
    pending: list = []
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                return f"messages[{i}]: tool message answers no pending tool call"
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            return f"messages[{i}]: tool calls {pending} were not answered"
        if role == "assistant" and m.get("tool_calls"):
            pending = [c["id"] for c in m["tool_calls"]]
    for t in body.get("tools") or []:
        f = t.get("function") or {}
        if t.get("type") != "function" or not f.get("name") or (f.get("parameters") or {}).get("type") != "object":
            return f"bad tool definition {t!r}"
    return None


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with owner.lock:
            owner.requests.append({"path": self.path, "body": body,
                                   "authorization": self.headers.get("Authorization"),
                                   "x-api-key": self.headers.get("x-api-key")})
            n = len(owner.requests)
        problem = owner.problem(body)
        answer = (400, owner.error_payload(problem)) if problem else owner.responder(body, n)
        status, payload = answer[0], answer[1]
        delay = answer[2] if len(answer) > 2 else 0
        headers = answer[3] if len(answer) > 3 else {}
        if delay:
            time.sleep(delay)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status or 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if status == DROP:
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test)
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: "FakeOpenAI"


class FakeOpenAI:
    def __init__(self, responder: Responder, max_requests: int = 40, deadline: float = 30.0) -> None:
        self.responder = responder
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.max_requests = max_requests
        self.deadline = deadline
        self._stop = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.owner = self
        self.server.timeout = 0.05
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def problem(self, body: dict) -> Optional[str]:
        return openai_problem(body)

    def error_payload(self, problem: str) -> dict:
        return {"error": {"message": problem, "type": "invalid_request_error"}}

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    def _serve(self) -> None:
        end = time.monotonic() + self.deadline
        try:
            while not self._stop.is_set() and len(self.requests) < self.max_requests and time.monotonic() < end:
                self.server.handle_request()
        finally:
            self.server.server_close()

    def stop(self) -> None:
        self._stop.set()
        # wake the serving loop now, not at its next 0.05 s poll (58 teardowns of the suite waited it)
        with contextlib.suppress(OSError):
            socket.create_connection(self.server.server_address, timeout=1).close()
        self.thread.join(timeout=5)
