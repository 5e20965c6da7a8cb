"""The model under test behind an OpenAI-compatible server (`--target-url`): the deployed system
an auditor is asked about, with the server's own system prompt and guardrails in the path.

Built from the judge's endpoint pieces (judge/endpoint: its HTTP client that keeps the key to
its own server and scrubs echoes of it, its retry policy, its GET /models checks), so a
credential follows one set of rules whichever server it belongs to. Requests go out on a
thread pool, `concurrency` at a time: the rest of the target path is synchronous and the
threads only wait on sockets. Each request is retried on its own; one that still fails is a
failed Response for that conversation alone, never an exception that loses the batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from nexagauge_local.judge import Messages
from nexagauge_local.judge.endpoint import (
    ChatCompletion,
    EndpointHTTP,
    EndpointUnusable,
    RetryPolicy,
    ServerRole,
    pick_model,
    served_models,
    server_message,
)
from nexagauge_local.redact import redact_url
from nexagauge_local.redteam.target.types import Response

log = logging.getLogger(__name__)

TARGET_SERVER = ServerRole(
    label="target server", url_option="--target-url",
    key_options="--target-api-key or NEXAGAUGE_TARGET_API_KEY",
    model_options="--model (the served model id)",
)
PREFLIGHT_TIMEOUT = 10.0  # GET /models: a live server answers in milliseconds
REQUEST_TIMEOUT = 600.0  # one answer; a loaded server queues long requests


class TargetOptions(BaseModel):
    """The target server as the command line states it. The key is a SecretStr so no repr,
    log line or dump of these options can show it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    api_key: SecretStr | None = None
    served_model: str | None = None  # the served model id; None = the only one served
    concurrency: int = Field(default=16, ge=1)
    timeout_seconds: float = Field(default=REQUEST_TIMEOUT, gt=0)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{redact_url(url)!r}: expected http(s)://HOST:PORT/v1")
        return url

    @classmethod
    def of(cls, **values: Any) -> TargetOptions:
        """The options, or EndpointUnusable with pydantic's first complaint (its text names
        the field, never the value of the key)."""
        try:
            return cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise EndpointUnusable(f"target server: {where}: {first['msg']}") from None


class EndpointResponder:
    """Answers conversations through POST {url}/chat/completions: greedy, seeded, with an
    explicit max_tokens, so a rerun asks the same thing."""

    name = "endpoint"
    gpu_count = 0  # the server's GPUs are its own: nothing is held here

    def __init__(self, options: TargetOptions, served_model: str, *, seed: int = 0,
                 retry: RetryPolicy | None = None) -> None:
        key = options.api_key.get_secret_value() if options.api_key else None
        self.http = EndpointHTTP(options.url, key, timeout_seconds=options.timeout_seconds,
                                 connections=options.concurrency, retry=retry)
        self.model = served_model
        self.server = self.http.url  # the base URL without userinfo or query: no credential
        self.seed = seed
        self._pool = ThreadPoolExecutor(max_workers=options.concurrency,
                                        thread_name_prefix="endpoint-target")

    def _failed(self, why: str, started: float) -> Response:
        message = self.http.scrubber.text(f"target server {self.server}: {why}")
        # INFO, not WARNING: the record and the command's summary already say it, and an
        # unconfigured logger would print every failure across the progress bar
        log.info("%s", message)
        return Response.failed(message, time.perf_counter() - started)

    def _one(self, messages: Messages, max_tokens: int) -> Response:
        """One conversation to its Response; never raises (a bug here must not lose the
        other answers of the batch)."""
        started = time.perf_counter()
        body = {"model": self.model, "messages": messages, "temperature": 0.0,
                "seed": self.seed, "max_tokens": max_tokens}
        try:
            reply = self.http.send("POST", "/chat/completions", body)
            if reply.error is not None or reply.response is None:
                return self._failed(reply.error or "no response", started)
            if reply.response.status_code != 200:
                return self._failed(f"HTTP {reply.response.status_code}: "
                                    f"{server_message(reply.response)}", started)
            completion = ChatCompletion.model_validate_json(reply.response.content)
            choice = completion.choices[0]
        except (ValidationError, IndexError):
            return self._failed("the reply is not an OpenAI chat completion", started)
        except Exception as exc:  # noqa: BLE001 - reported as this conversation's failure
            return self._failed(f"{type(exc).__name__}: {exc}", started)
        usage = completion.usage
        return Response(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            finished=choice.finish_reason != "length",
            device_seconds=0.0,  # the server's device is out of sight
            wall_seconds=time.perf_counter() - started,
        )

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]:
        """Responses aligned with `conversations`, at most `concurrency` requests in flight."""
        return list(self._pool.map(lambda c: self._one(c, max_tokens), conversations))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()


def open_endpoint(options: TargetOptions, *, seed: int = 0,
                  retry: RetryPolicy | None = None) -> EndpointResponder:
    """The responder for the server's model, after asking the server which models it serves
    (one try, no retry: a set-up problem is reported, not waited out). Raises EndpointUnusable
    with one line: unreachable, a refused key, no model list, an unknown or ambiguous model."""
    key = options.api_key.get_secret_value() if options.api_key else None
    http = EndpointHTTP(options.url, key, timeout_seconds=PREFLIGHT_TIMEOUT, connections=1)
    try:
        served = pick_model(http.url, served_models(http, TARGET_SERVER), options.served_model,
                            TARGET_SERVER)
    except EndpointUnusable as exc:
        raise EndpointUnusable(http.scrubber.text(str(exc))) from None
    finally:
        http.close()
    return EndpointResponder(options, served.id, seed=seed, retry=retry)
