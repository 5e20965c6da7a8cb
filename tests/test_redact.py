"""The credential rule (redact.py): what counts as a credential and how its removal shows."""

from __future__ import annotations

import base64
import logging

import pytest

from nexagauge_local.judge.endpoint import EndpointHTTP
from nexagauge_local.redact import (
    Scrubber,
    has_credentials,
    redact_settings,
    redact_text,
    redact_url,
    split_url,
)
from tests.endpoint_stub import Reply, StubServer


def test_a_url_keeps_its_shape_with_each_credential_masked() -> None:
    url = "http://bob:hunter2@127.0.0.1:8795/v1?api-key=k1&api-version=2024&X-Access-Token=k2"
    assert redact_url(url) == ("http://***@127.0.0.1:8795/v1?api-key=***&api-version=2024"
                               "&X-Access-Token=***")
    assert redact_url("https://tok@h/v1#access_token=k") == "https://***@h/v1#access_token=***"
    for name in ("key", "TOKEN", "sig", "password", "client_secret", "api_key"):
        assert has_credentials(f"http://h/v1?{name}=v"), name
    for plain in ("http://127.0.0.1:8000/v1", "http://h/v1?api-version=1", "demo", "auto",
                  "ray://head:10001"):
        assert not has_credentials(plain) and redact_url(plain) == plain


def test_a_url_taken_apart_for_the_client() -> None:
    parts = split_url("http://bob:p%40ss@h:1/v1?api-key=k%2B1&x=1")
    assert parts.base == "http://h:1/v1" and (parts.username, parts.password) == ("bob", "p@ss")
    assert parts.params == (("api-key", "k+1"), ("x", "1"))
    assert parts.secrets == ("bob", "p@ss", "k+1")


def test_free_text_and_settings() -> None:
    text = ("judge server http://u:secret-pw-1@h/v1 said: Authorization: Bearer sk-abcdef123 "
            "and echoed sk-abcdef123")
    assert redact_text(text, ["sk-abcdef123"]) == (
        "judge server http://***@h/v1 said: Authorization: Bearer *** and echoed [redacted]")
    dump = {"judge_url": "http://u:p@h/v1", "cluster": None, "model": "demo"}
    assert redact_settings(dump) == {"judge_url": "http://***@h/v1", "cluster": None,
                                     "model": "demo"}
    # short values are not searched for: they would match ordinary words of an answer
    assert Scrubber.of("http://u:pw@h/v1", "short").values == ()


def test_the_urls_credentials_reach_the_server_and_its_echo_comes_back_scrubbed(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="httpx")  # httpx logs each request's URL
    key = "sk-echoed-key-123"
    with StubServer(script=lambda n, body: Reply(status=400, error=f"bad key {key}")) as stub:
        url = stub.url.replace("http://", "http://bob:pw-long-enough@") + "?api-key=q-secret-99"
        http = EndpointHTTP(url, key, timeout_seconds=5, connections=1)
        try:
            assert http.url == stub.url  # what messages name
            reply = http.send("POST", "/chat/completions", {"model": "m", "messages": []})
        finally:
            http.close()
        (route, query, auth), = stub.seen
    assert route == "/v1/chat/completions" and query == "api-key=q-secret-99"
    assert auth == "Basic " + base64.b64encode(b"bob:pw-long-enough").decode()
    assert reply.response is not None and key not in reply.response.text
    assert "bad key [redacted]" in reply.response.text
    assert "api-key=***" in caplog.text and "q-secret-99" not in caplog.text
