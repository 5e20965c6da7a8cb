"""What the judge asks of a server before judging: which model it serves, whether the key
is accepted, whether it enforces a JSON schema, and (for `estimate`) how it counts tokens.

Every failure here is an EndpointUnusable with one line that says what to fix; the run stops
with exit 2 before any record is judged.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from nexagauge_local.judge.endpoint.config import JUDGE_SERVER, EndpointUnusable, ServerRole
from nexagauge_local.judge.endpoint.http import EndpointHTTP
from nexagauge_local.judge.endpoint.wire import ChatCompletion, server_message
from nexagauge_local.judge.types import Messages

PREFLIGHT_TIMEOUT = 10.0  # seconds for GET /models; a live server answers in milliseconds
PROBE_TIMEOUT = 120.0  # the probe decodes a few tokens; a busy CPU server may take a while
# The probe asks in plain words for PROBE_ASKED, which its schema forbids: the one value the
# schema allows (PROBE_ENFORCED, an enum no prompt names) comes only from a server whose grammar
# enforces the schema; an obedient model on a server that ignores response_format answers what
# it was asked and fails. enum: every schema-enforcing server (vLLM, SGLang, llama.cpp, Ollama,
# OpenAI's strict mode) supports it.
PROBE_ASKED = {"answer": "yes"}
PROBE_ENFORCED = {"grammar_check": "enforced-q7z"}
PROBE_PROMPT = ("Reply with exactly this JSON object and nothing else: "
                + json.dumps(PROBE_ASKED))
PROBE_MAX_TOKENS = 64  # the enforced answer closes in about a dozen tokens
_PROBE_SCHEMA = {"type": "object",
                 "properties": {"grammar_check": {"type": "string", "enum": ["enforced-q7z"]}},
                 "required": ["grammar_check"], "additionalProperties": False}

class ServedModel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    max_model_len: int | None = None  # vLLM reports it; OpenAI does not
    root: str | None = None  # vLLM: the weights behind the id (path or hub name)


class _ModelList(BaseModel):
    model_config = ConfigDict(extra="ignore")
    data: list[ServedModel]


def _unreachable(url: str, route: str, exc: httpx.HTTPError,
                 role: ServerRole = JUDGE_SERVER) -> EndpointUnusable:
    if isinstance(exc, httpx.TimeoutException):
        return EndpointUnusable(f"{role.label} {url}: no answer to {route} within "
                                f"{PREFLIGHT_TIMEOUT:.0f}s; is it up and listening there?")
    return EndpointUnusable(f"{role.label} {url}: cannot reach it ({type(exc).__name__}: {exc}); "
                            f"is it running, and is {role.url_option} right (it ends in /v1)?")


def _refused_key(url: str, response: httpx.Response,
                 role: ServerRole = JUDGE_SERVER) -> EndpointUnusable:
    return EndpointUnusable(
        f"{role.label} {url} refused the request (HTTP {response.status_code}: "
        f"{server_message(response)}); give its API key with {role.key_options}")


def served_models(http: EndpointHTTP, role: ServerRole = JUDGE_SERVER) -> list[ServedModel]:
    """GET /models, one try."""
    try:
        response = http.once("GET", "/models", timeout=PREFLIGHT_TIMEOUT)
    except httpx.HTTPError as exc:
        raise _unreachable(http.url, "GET /models", exc, role) from None
    if response.status_code in (401, 403):
        raise _refused_key(http.url, response, role)
    if response.status_code != 200:
        raise EndpointUnusable(f"{role.label} {http.url}: GET /models answered HTTP "
                               f"{response.status_code}: {server_message(response)}")
    try:
        return _ModelList.model_validate_json(response.content).data
    except ValidationError:
        raise EndpointUnusable(f"{role.label} {http.url}: GET /models did not answer an "
                               "OpenAI model list; is it an OpenAI-compatible server?") from None


def pick_model(url: str, models: list[ServedModel], wanted: str | None,
               role: ServerRole = JUDGE_SERVER) -> ServedModel:
    """The model named (served_model / --judge-model-name), or the only one served."""
    ids = ", ".join(m.id for m in models) or "none"
    if wanted:
        for m in models:
            if m.id == wanted:
                return m
        raise EndpointUnusable(f"{role.label} {url} does not serve {wanted!r}; it serves: {ids}")
    if len(models) == 1:
        return models[0]
    raise EndpointUnusable(f"{role.label} {url} serves {len(models)} models ({ids}); name one "
                           f"with {role.model_options}")


def probe_schema(http: EndpointHTTP, model: str) -> None:
    """One tiny request whose prompt asks for what its schema forbids: a server that rejects
    `response_format` json_schema (HTTP 400), ignores it (the model answers what the words ask,
    or anything but the one value the schema allows) or cuts the answer at its length limit
    cannot judge."""
    body = {"model": model, "messages": [{"role": "user", "content": PROBE_PROMPT}],
            "temperature": 0.0, "max_tokens": PROBE_MAX_TOKENS,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "probe", "schema": _PROBE_SCHEMA, "strict": True}}}
    try:
        response = http.once("POST", "/chat/completions", json=body, timeout=PROBE_TIMEOUT)
    except httpx.HTTPError as exc:
        raise _unreachable(http.url, "a probe chat completion", exc) from None
    if response.status_code in (401, 403):
        raise _refused_key(http.url, response)
    if response.status_code != 200:
        raise EndpointUnusable(
            f"judge server {http.url} rejected a chat completion with response_format "
            f"json_schema (HTTP {response.status_code}: {server_message(response)}); the "
            "judge needs a server that enforces a JSON schema (vLLM, SGLang, llama.cpp, Ollama)")
    try:
        choice = ChatCompletion.model_validate_json(response.content).choices[0]
    except (ValidationError, IndexError):
        raise EndpointUnusable(f"judge server {http.url}: its chat completion is not an "
                               "OpenAI chat completion") from None
    text = " ".join((choice.message.content or "").split())[:80]
    if choice.finish_reason == "length":
        raise EndpointUnusable(
            f"judge server {http.url}: its answer to the schema probe was cut at "
            f"{PROBE_MAX_TOKENS} tokens (finish_reason length: {text!r}); a server that "
            "enforces response_format json_schema closes that answer in a dozen")
    try:
        answer = json.loads(choice.message.content or "")
    except ValueError:
        answer = None
    if answer != PROBE_ENFORCED:
        raise EndpointUnusable(
            f"judge server {http.url} ignores response_format json_schema: asked in words for "
            f"{json.dumps(PROBE_ASKED)}, which the schema forbids, it answered {text!r}, not "
            f"the only answer the schema allows; the judge needs a server that enforces it "
            "(vLLM, SGLang, llama.cpp, Ollama)")


def tokenize_url(url: str) -> str:
    """vLLM serves /tokenize at the server root, beside /v1."""
    base = url.rstrip("/")
    return base[: -len("/v1")] + "/tokenize" if base.endswith("/v1") else base + "/tokenize"


class ServerTokenCounter:
    """Prompt tokens counted by the server's own tokenizer and chat template (vLLM's
    POST /tokenize), for an endpoint judge with no local tokenizer."""

    def __init__(self, http: EndpointHTTP, model: str) -> None:
        self.http, self.model = http, model
        self._route = tokenize_url(http.url)

    def count_tokens(self, messages: Messages) -> int:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "add_generation_prompt": True}
        try:
            response = self.http.client.post(self._route, json=body, timeout=PREFLIGHT_TIMEOUT)
        except httpx.HTTPError as exc:
            raise _unreachable(self.http.url, "POST /tokenize", exc) from None
        if response.status_code != 200:
            raise EndpointUnusable(
                f"judge server {self.http.url} cannot count tokens (POST {self._route}: HTTP "
                f"{response.status_code}); vLLM offers /tokenize, other servers do not: give "
                "the profile `weights = <folder with the model's tokenizer>` to count locally")
        count = response.json().get("count")
        if not isinstance(count, int):
            raise EndpointUnusable(f"judge server {self.http.url}: /tokenize answered no count")
        return count
