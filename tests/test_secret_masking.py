"""Secrets echoed back in altered form are masked too (issue #25, item 9): the key minus its
last characters, base64 (standard, URL-safe, unpadded) and URL-encoded."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from turnflow.runtime.errors import endpoint_failure, mask_secrets

KEY = "sk-live/4f9a+0c2b7e1d3a5f60718293a4b5c6d7e8f"


@pytest.mark.parametrize("echo", [
    KEY, KEY[:-3], KEY[5:], base64.b64encode(KEY.encode()).decode(), base64.b64encode(KEY.encode()).decode()[:-4],
    base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("="), quote(KEY, safe=""),
])
def test_an_altered_key_is_masked(monkeypatch, echo):
    monkeypatch.setenv("TF_TEST_API_KEY", KEY)
    text = str(endpoint_failure("a", RuntimeError(f"401: bad key {echo!s} (check it)"), "TF_TEST_API_KEY"))
    assert echo not in text and "***" in text, text
    assert "401: bad key" in text and "(check it)" in text  # the rest of the message stays


def test_ordinary_text_is_left_alone(monkeypatch):
    monkeypatch.setenv("TF_TEST_API_KEY", KEY)
    text = "rate limited: retry after 20 seconds; see https://status.example.com/incidents"
    assert mask_secrets(text, ("TF_TEST_API_KEY",)) == text
