"""Issue 33, item 7: one masking function (`turnflow.masking.mask`) for every URL form libpq reads
(`user:password@`, `?password=`, key=value `password=...`), for libpq's parse errors that quote a
piece of the URL, and for every value shaped like an API key whatever field it was pasted into:
none of them is printed (errors, the `inspect --summary` header) or stored."""

from __future__ import annotations

import importlib.util
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnflow.cli import main
from turnflow.masking import looks_like_key, mask, mask_url, url_secrets

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
PASSWORD = "hunter2SECRETpw"
OPENAI_KEY = "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f"
ANTHROPIC_KEY = "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe" * 3 + "-AbCdEf"

LIBPQ_FORMS = [
    f"postgresql://tf:{PASSWORD}@db.example:5432/flows",
    f"postgres://tf:{PASSWORD}@db.example/flows?sslmode=require",
    f"postgresql://tf@db.example/flows?password={PASSWORD}",
    f"postgresql://tf@db.example/flows?sslmode=require&password={PASSWORD}&application_name=x",
    f"postgresql:///flows?host=/run/pg&sslpassword={PASSWORD}",
    f"host=db.example dbname=flows user=tf password={PASSWORD}",
    f"host=db.example password = '{PASSWORD} with spaces\\'q' dbname=flows",
    f"dbname=flows sslpassword={PASSWORD}",
]


@pytest.mark.parametrize("form", LIBPQ_FORMS)
def test_every_libpq_form_is_masked_in_any_message(form):
    for text in (form, f"cannot open {form}: connection refused", f'invalid URI: "{form}"', f"({form})"):
        shown = mask(text)
        assert PASSWORD not in shown and "***" in shown, shown
    assert "flows" in mask(form)  # the rest stays readable


def test_the_url_keeps_what_is_not_secret():
    url = f"postgresql://tf:{PASSWORD}@db.example:5432/flows?sslmode=require&password={PASSWORD}"
    assert mask_url(url) == "postgresql://tf:***@db.example:5432/flows?sslmode=require&password=***"
    assert mask(f"{url}: not a turnflow store") == mask_url(url) + ": not a turnflow store"
    assert set(url_secrets(f"postgresql://tf:a%20{PASSWORD}@h/db")) == {f"a%20{PASSWORD}", f"a {PASSWORD}"}


@pytest.mark.parametrize("key", [OPENAI_KEY, ANTHROPIC_KEY, "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6",
                                 "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "AKIAIOSFODNN7EXAMPLE",
                                 "xoxb-1234567890-abcdefghijkl"])
def test_a_key_shaped_value_is_masked_whatever_it_is_next_to(key):
    for text in (key, f"environment variable {key} is not set", f"model '{key}' does not exist",
                 f"got {key!r}", f"x={key}&y=1"):
        assert key not in mask(text) and "***" in mask(text), mask(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits, min_size=40, max_size=80))
def test_a_random_token_is_masked_and_ordinary_words_are_not(token):
    if looks_like_key(token):
        assert token not in mask(f"401: bad key {token}")


@pytest.mark.parametrize("text", [
    "rate limited: retry after 20 seconds; see https://status.example.com/incidents",
    "session 6f1c1d9c0b0e4d5e9c7a2f7b1b3c4d5e closed: agent_error (TransitionGraphValidationError)",
    "/home/user/projects/turnflow-flows/src/support_desk_escalation_v2.flow: no such file",
    "postgresql://tf@db.example:5432/flows?sslmode=require: cannot connect within 10 s",
    "agent 'billing_specialist_with_a_long_name': unknown key 'model_name' for a openai agent",
])
def test_ordinary_messages_are_left_alone(text):
    assert mask(text) == text


def test_a_random_key_is_masked():
    for _ in range(50):
        key = secrets.token_urlsafe(32)
        if any(c.isupper() for c in key) and any(c.islower() for c in key) and any(c.isdigit() for c in key):
            assert key not in mask(f"Authorization failed for {key}.")


# -- end to end -----------------------------------------------------------------------------------

def _inspect(store: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "turnflow", "inspect", "--summary", store], capture_output=True,
                          text=True, env=env, timeout=60)


@pytest.mark.skipif(importlib.util.find_spec("psycopg") is None, reason="psycopg is not installed")
@pytest.mark.parametrize("store", [
    f"postgresql://tf@127.0.0.1:1/flows?password={PASSWORD}",  # refused: the error names the store
    f"postgresql://tf@127.0.0.1:1/flows?password={PASSWORD}&sslmode=bogus",  # libpq: invalid sslmode value
    f"postgresql://tf:{PASSWORD}%zz@127.0.0.1:1/flows",  # libpq quotes the bad percent-encoded password alone
    f"postgresql://tf@127.0.0.1:1/flows?password={PASSWORD}%zz",
    f"postgresql://tf:{PASSWORD}@[::1/flows",  # libpq quotes the whole URI
])
def test_libpq_errors_never_print_the_password(store):
    r = _inspect(store)
    assert r.returncode == 2 and "turnflow inspect: postgresql://tf" in r.stderr, r.stderr
    assert PASSWORD not in r.stdout + r.stderr, r.stderr


def test_the_summary_header_masks_a_password_given_as_a_query_parameter(pg_url):
    from turnflow.runtime.store.postgres import PostgresStore

    PostgresStore(pg_url).close()  # an empty turnflow store
    r = _inspect(f"{pg_url}?password={PASSWORD}")  # trust authentication: the password is not needed
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0]
    assert header.startswith(f"store {pg_url}?password=***"), header
    assert PASSWORD not in r.stdout + r.stderr


def _agents(tmp_path, triage: str) -> str:
    path = tmp_path / "agents.yaml"
    path.write_text(f"""agents:
  triage: {triage}
  tech: {{kind: scripted, steps: [{{say: "x"}}]}}
  billing: {{kind: scripted, steps: [{{say: "x"}}]}}
  user: {{kind: scripted, steps: [{{say: "x"}}]}}
""")
    return str(path)


def _run_and_show(tmp_path, capsys, agents: str) -> tuple[int, str, bytes]:
    db = tmp_path / "hub.db"
    rc = main(["run", str(ROOT / "examples" / "support.flow"), "--agents", agents, "--task", "It crashes",
               "--store", str(db)])
    shown = capsys.readouterr()
    text = shown.out + shown.err
    if db.exists():
        main(["inspect", str(db), "--events"])
        text += capsys.readouterr().out
    return rc, text, b"".join(p.read_bytes() for p in tmp_path.glob("hub.db*"))


@pytest.mark.parametrize("key", [OPENAI_KEY, ANTHROPIC_KEY])
def test_a_key_pasted_into_api_key_env_is_refused_and_never_printed(tmp_path, capsys, key):
    pytest.importorskip("openai")
    rc, shown, stored = _run_and_show(tmp_path, capsys, _agents(
        tmp_path, f'{{kind: openai, model: test-model, api_key_env: "{key}", base_url: "http://127.0.0.1:9/v1"}}'))
    assert rc != 0 and "`api_key_env` holds what looks like an API key" in shown, shown
    assert key not in shown and key[:24] not in shown
    assert key.encode() not in stored


def test_a_key_pasted_into_model_is_never_printed_or_stored(tmp_path, capsys, monkeypatch):
    pytest.importorskip("openai")
    from openai_server import FakeOpenAI

    monkeypatch.setenv("TF_TEST_KEY33", "local")
    srv = FakeOpenAI(lambda body, n: (404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                                      "type": "invalid_request_error"}}))
    try:
        rc, shown, stored = _run_and_show(tmp_path, capsys, _agents(
            tmp_path, f'{{kind: openai, model: "{OPENAI_KEY}", api_key_env: TF_TEST_KEY33, '
                      f'base_url: "{srv.base_url}", timeout: 5}}'))
    finally:
        srv.stop()
    assert srv.requests and srv.requests[0]["body"]["model"] == OPENAI_KEY  # it was sent as the model...
    assert rc == 1 and "does not exist" in shown, shown  # ...the endpoint's error is reported...
    assert OPENAI_KEY not in shown and OPENAI_KEY.encode() not in stored  # ...with the key masked
