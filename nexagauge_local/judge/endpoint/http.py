"""HTTP to the judge server: one httpx client, bounded retries with back-off.

httpx (not the openai package) because the project already ships it with the vLLM stack and
the judge needs only two routes; retries are hand-written here because their policy is part
of the judge's contract (which statuses, Retry-After, a total cap, every attempt counted),
which a transport-level retry would hide.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from nexagauge_local.judge.endpoint.config import RetryPolicy
from nexagauge_local.redact import Scrubber, redact_logger, split_url

# Transient by nature: the server restarting, overloaded or slow.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_TRANSIENT = (httpx.TransportError,)  # connect/read/write/pool timeouts, refused, reset


@dataclass
class Reply:
    """The final outcome of a request after retries: a response (any status that is not
    retried, or the last retried one), or `error` when no response came."""

    response: httpx.Response | None
    error: str | None
    attempts: int
    seconds: float


def retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ScrubbedClient(httpx.Client):
    """An httpx client whose replies have its own credentials taken out: a server that
    echoes the key or password it was sent (in an error text, say) would otherwise put it
    in a case report's error, the judge cache or an error line. (A client, not a transport:
    a transport of our own would turn off httpx's proxy settings from the environment.)"""

    def __init__(self, scrubber: Scrubber, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scrubber = scrubber

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        response = super().send(request, **kwargs)
        if not self.scrubber.values or kwargs.get("stream"):
            return response
        clean = self.scrubber.data(response.content)
        if clean == response.content:
            return response
        kept = [(k, v) for k, v in response.headers.multi_items()
                if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
        return httpx.Response(response.status_code, headers=kept, content=clean,
                              request=request, extensions=response.extensions)


class EndpointHTTP:
    """The judge server's base URL with its key; thread-safe (httpx.Client is). The URL's
    userinfo becomes basic auth and its query parameters go with every request; `url` is the
    base without either, so a message that names the server names no credential."""

    def __init__(self, url: str, api_key: str | None, *, timeout_seconds: float,
                 connections: int, retry: RetryPolicy | None = None,
                 rng: random.Random | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        redact_logger("httpx")  # it logs each request's URL, query included
        target = split_url(url.rstrip("/"))
        self.url = target.base.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._rng = rng or random.Random()
        self.scrubber = Scrubber.of(url, api_key)
        auth = (httpx.BasicAuth(target.username or "", target.password or "")
                if target.username is not None else None)
        self.client = ScrubbedClient(
            self.scrubber, base_url=self.url, headers=headers, params=list(target.params),
            auth=auth, timeout=httpx.Timeout(timeout_seconds, connect=min(10.0, timeout_seconds)),
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    def once(self, method: str, path: str, json: Any = None,
             timeout: float | None = None) -> httpx.Response:
        """One try, no retry (pre-flight: a set-up error is reported, not waited out)."""
        kwargs: dict[str, Any] = {"json": json} if json is not None else {}
        if timeout is not None:
            kwargs["timeout"] = timeout
        return self.client.request(method, path, **kwargs)

    def send(self, method: str, path: str, json: Any = None) -> Reply:
        """The request with retries on 408/429/5xx and transport errors, back-off doubling
        from `base_seconds` with full jitter in its upper half, Retry-After honoured (up to
        `max_sleep_seconds`), stopped by `attempts` or `total_seconds`."""
        policy, started = self.retry, time.monotonic()
        attempt, last_error = 0, ""
        while True:
            attempt += 1
            response: httpx.Response | None = None
            try:
                response = self.client.request(method, path, json=json)
            except _TRANSIENT as exc:
                last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                last_error = self.scrubber.text(last_error)
            if response is not None and response.status_code not in RETRY_STATUSES:
                return Reply(response, None, attempt, time.monotonic() - started)
            if response is not None:
                last_error = f"HTTP {response.status_code}: {response.text[:200]}"
            sleep = policy.base_seconds * 2 ** (attempt - 1) * self._rng.uniform(0.5, 1.0)
            hinted = retry_after(response) if response is not None else None
            if hinted is not None:
                sleep = hinted
            sleep = min(sleep, policy.max_sleep_seconds)
            elapsed = time.monotonic() - started
            if attempt >= policy.attempts or elapsed + sleep > policy.total_seconds:
                return Reply(response, f"{last_error} (gave up after {attempt} attempt(s), "
                             f"{elapsed:.1f}s)", attempt, elapsed)
            time.sleep(sleep)

    def close(self) -> None:
        self.client.close()
