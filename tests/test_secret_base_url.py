"""Issue 25, item 9: a credential in an endpoint's URL — `base_url: https://host/v1?api-key=KEY`
as Azure-style endpoints take it, or `https://user:password@host/v1` — is never stored or
printed: the query string is sent with every request (the client's default query) rather than
kept in the URL, and an endpoint error that echoes the request URL is masked. End to end:
`turnflow run` against a local server that echoes the path it was asked for, then `inspect`
and the store's own bytes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="openai is not installed")

from anthropic_server import FakeAnthropic  # noqa: E402
from openai_server import FakeOpenAI  # noqa: E402
from turnflow.cli.app import main  # noqa: E402
from turnflow.runtime.agents.endpoint import endpoint  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "TURNFLOW_TEST_URL_KEY"
SECRET = "qs-9f8e7d6c5b4a3210"
PASSWORD = "pw-0a1b2c3d4e5f6789"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    for v in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(v, raising=False)


def _echoing(cls):
    """A local server whose 404 quotes the path and query it was asked for, as some gateways do."""
    srv = cls(lambda body, n: (404, {"error": {"message": f"no route for {srv.requests[-1]['path']}",
                                               "type": "not_found"}}))
    return srv


def _agents_file(tmp_path, kind: str, url: str) -> str:
    path = tmp_path / "agents.yaml"
    path.write_text(f"""agents:
  triage: {{kind: {kind}, model: test-model, base_url: "{url}", api_key_env: {KEY_ENV}, timeout: 5}}
  tech: {{kind: scripted, steps: [{{say: "x"}}]}}
  billing: {{kind: scripted, steps: [{{say: "x"}}]}}
  user: {{kind: scripted, steps: [{{say: "x"}}]}}
""")
    return str(path)


@pytest.mark.parametrize("kind, cls", [("openai", FakeOpenAI), ("anthropic", FakeAnthropic)])
def test_a_key_in_base_urls_query_string_is_sent_but_never_printed_or_stored(tmp_path, capsys, kind, cls):
    if importlib.util.find_spec(kind) is None:
        pytest.skip(f"{kind} is not installed")
    srv = _echoing(cls)
    try:
        url = srv.base_url.replace("http://", f"http://user:{PASSWORD}@") + f"?api-key={SECRET}&v=1"
        db = tmp_path / "hub.db"
        rc = main(["run", str(ROOT / "examples" / "support.flow"), "--agents", _agents_file(tmp_path, kind, url),
                   "--task", "It crashes", "--store", str(db)])
        run_out = capsys.readouterr()
        assert main(["inspect", str(db), "--events"]) == 0
        shown = run_out.out + run_out.err + capsys.readouterr().out
    finally:
        srv.stop()
    assert rc == 1 and "no route for" in shown  # the endpoint's error is reported...
    path = srv.requests[0]["path"]
    assert path.endswith(f"?api-key={SECRET}&v=1") and "/v1/" in path  # ...the key reached it, as a query
    assert SECRET not in shown and PASSWORD not in shown, shown  # ...and is shown masked
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("hub.db*"))
    assert stored and SECRET.encode() not in stored and PASSWORD.encode() not in stored


def test_the_endpoint_keeps_the_url_without_its_query_and_names_what_to_mask():
    e = endpoint(f"https://me:{PASSWORD}@example.com/openai/v1?api-key={SECRET}&api-version=2024-06-01#x")
    assert e.url == f"https://me:{PASSWORD}@example.com/openai/v1"
    assert e.query == {"api-key": SECRET, "api-version": "2024-06-01"}
    assert {SECRET, PASSWORD, f"api-key={SECRET}", f"me:{PASSWORD}"} <= set(e.secrets)
    assert endpoint("http://127.0.0.1:8000/v1") == type(e)("http://127.0.0.1:8000/v1", {}, ())
    assert endpoint("http://[::1/v1?k=" + SECRET).secrets == ("http://[::1/v1?k=" + SECRET,)
