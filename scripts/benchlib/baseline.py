"""The per-request baseline: how evaluation tools drive a local OpenAI-compatible server.

Peers (deepeval, ragas, nexa-gauge) send one chat-completion request per case per metric
with a fixed client concurrency, each carrying its JSON schema as `response_format`. The
benchmark runs exactly that against vLLM's own server, started with the same engine settings
as our backend (`engine_cli_args` turns `vllm_backend.engine_kwargs` into server flags), so
the ratio compares the two ways of driving one engine, not two engines.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from nexagauge_local.judge.endpoint.wire import chat_body
from nexagauge_local.judge.types import JudgeRequest

SERVED_NAME = "judge"
DEFAULT_CONCURRENCY = 16


def chat_payload(request: JudgeRequest, seed: int) -> dict[str, Any]:
    """The body a per-request tool sends: our endpoint client's greedy, seeded request, but with
    the schema as pydantic writes it (no engine clipping) and no logprobs."""
    body = chat_body(request, SERVED_NAME, seed)
    body.pop("logprobs", None)
    body.pop("top_logprobs", None)
    body["response_format"]["json_schema"] |= {"name": request.schema.__name__,
                                               "schema": request.schema.model_json_schema()}
    return body


def engine_cli_args(kwargs: dict[str, Any]) -> list[str]:
    """`vllm.LLM(**kwargs)` as `vllm serve` flags: same model, dtype, length, seed, prefix
    caching and structured-output backend as the in-process engine."""
    args: list[str] = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, dict):
            args += [flag, json.dumps(value, separators=(",", ":"))]
        else:
            args += [flag, str(value)]
    return args


def server_argv(python: str, kwargs: dict[str, Any], port: int) -> list[str]:
    return [
        python, "-m", "vllm.entrypoints.openai.api_server",
        *engine_cli_args(kwargs),
        "--served-model-name", SERVED_NAME,
        "--host", "127.0.0.1",
        "--port", str(port),
    ]  # fmt: skip


Send = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def run_concurrent(
    send: Send,
    payloads: Sequence[dict[str, Any]],
    concurrency: int = DEFAULT_CONCURRENCY,
    deadline_s: float | None = None,
) -> tuple[list[dict[str, Any] | None], float]:
    """Send every payload with at most `concurrency` in flight; (answers in order, wall s).

    With `deadline_s`, no request starts after that many seconds: the ones not sent are None
    and the wall time covers the ones that were, so a slow baseline still yields a measured
    rate inside a bounded time instead of nothing.
    """
    gate = asyncio.Semaphore(concurrency)
    started = time.perf_counter()

    async def one(body: dict[str, Any]) -> dict[str, Any] | None:
        async with gate:
            if deadline_s is not None and time.perf_counter() - started > deadline_s:
                return None
            return await send(body)

    answers = await asyncio.gather(*(one(p) for p in payloads))
    return list(answers), time.perf_counter() - started


def openai_sender(base_url: str) -> tuple[Send, Callable[[], Awaitable[None]]]:
    """A `send` through the official `openai` client (what per-request tools use), and its
    closer. Returns text, token usage and finish reason of each answer."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=900)

    async def send(body: dict[str, Any]) -> dict[str, Any]:
        resp = await client.chat.completions.create(**body)
        choice = resp.choices[0]
        usage = resp.usage
        return {
            "text": choice.message.content or "",
            "finish_reason": choice.finish_reason,
            "prompt_tokens": usage.prompt_tokens if usage else 0,
            "output_tokens": usage.completion_tokens if usage else 0,
        }

    return send, client.close
