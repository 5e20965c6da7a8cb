"""A JudgeRequest as an OpenAI chat completion, and the server's answer as a JudgeResult.

The schema goes in OpenAI's `response_format` (json_schema, strict), which vLLM, SGLang,
llama.cpp's server and Ollama all enforce with a grammar; the schema sent is the node's own,
string bounds included, so the server's grammar keeps them. The answer is still validated here
with the request's pydantic schema (schemas.parse_answer, as on every backend): a server that
ignores the parameter yields counted invalid answers, never an unchecked score.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from nexagauge_local.judge.schemas import engine_schema, parse_request_answer
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult

TOP_LOGPROBS = 5  # as the in-process vLLM backend asks
LOGPROB_SOURCE = "endpoint_top5"
# What vLLM, SGLang and llama.cpp say of a prompt over the window (HTTP 400).
_CONTEXT = re.compile(r"maximum context length|context length|too long|max_model_len|"
                      r"exceeds? the (model's )?context", re.IGNORECASE)


def schema_name(request: JudgeRequest) -> str:
    """OpenAI's json_schema name: [a-zA-Z0-9_-], at most 64 characters."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", request.schema.__name__)[:64] or "answer"


def chat_body(request: JudgeRequest, model: str, seed: int) -> dict[str, Any]:
    """Greedy, seeded, explicit max_tokens, the schema where the server enforces it."""
    body: dict[str, Any] = {
        "model": model,
        "messages": request.messages,
        "temperature": 0.0,
        "seed": seed,
        "max_tokens": request.max_tokens,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name(request),
                            "schema": engine_schema(request.schema, clip_strings=False),
                            "strict": True},
        },
    }
    if request.want_logprobs:
        body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
    return body


class _Top(BaseModel):
    token: str
    logprob: float


class _TokenLogprob(BaseModel):
    top_logprobs: list[_Top] = []


class _Logprobs(BaseModel):
    content: list[_TokenLogprob] | None = None


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatCompletion(BaseModel):
    """The parts of an OpenAI chat completion the judge reads (the rest is ignored)."""

    model_config = ConfigDict(extra="ignore")
    choices: list[_Choice]
    usage: _Usage | None = None


def server_message(response: httpx.Response) -> str:
    """The server's own error text (OpenAI's {"error": {"message"}}, vLLM's {"message"})."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
        if data.get("message"):
            return str(data["message"])[:300]
    return response.text[:300]


def to_result(response: httpx.Response, request: JudgeRequest) -> JudgeResult:
    """A final response (after retries) as a result: 200 is parsed like any backend's
    output; a 400 about the window is CONTEXT_WINDOW; any other status is BACKEND."""
    if response.status_code != 200:
        why = server_message(response)
        kind = (FailureKind.CONTEXT_WINDOW
                if response.status_code == 400 and _CONTEXT.search(why) else FailureKind.BACKEND)
        return JudgeResult.failed(kind, f"endpoint: HTTP {response.status_code} for "
                                        f"{request.where()}: {why}")
    try:
        completion = ChatCompletion.model_validate_json(response.content)
        choice = completion.choices[0]
    except (ValidationError, IndexError) as exc:
        return JudgeResult.failed(FailureKind.BACKEND, f"endpoint: the server's reply is not a "
                                  f"chat completion: {str(exc).splitlines()[0][:200]}")
    usage = completion.usage or _Usage()
    text = choice.message.content or ""
    truncated = choice.finish_reason == "length"
    parsed, error, failure = parse_request_answer(request, text, hit_max_tokens=truncated)
    if error and failure is FailureKind.INVALID_OUTPUT:
        why = f" [endpoint finish_reason={choice.finish_reason}]"
        error = error[: 300 - len(why)] + why
    logprobs = None
    if request.want_logprobs and choice.logprobs and choice.logprobs.content:
        logprobs = [{t.token: t.logprob for t in tok.top_logprobs}
                    for tok in choice.logprobs.content]
    return JudgeResult(
        parsed=parsed,
        raw_text=text,
        prompt_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        gpu_seconds=None,  # the backend splits wall x --judge-gpus over a batch when stated
        error=error,
        failure=failure,
        token_logprobs=logprobs,
        extra={"logprob_source": LOGPROB_SOURCE} if logprobs is not None else {},
    )
