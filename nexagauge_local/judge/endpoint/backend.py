"""The `endpoint` judge backend: a node's requests as chat completions to a judge server.

`concurrency` requests are in flight at once on a thread pool; the calling thread collects
each answer as it finishes and hands it to `on_batch` at once, so the client caches every
answer as it is produced and a killed run loses only what was in flight. Threads (not
asyncio) because `on_batch` writes the judge cache, whose SQLite connection belongs to the
calling thread, and because the rest of the judge is synchronous: the pool only waits on
sockets, the GIL costs nothing here.

Each request is retried on its own (http.EndpointHTTP.send); one that still fails is a
BACKEND result for that request alone (not cached, so a rerun asks again).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from nexagauge_local.judge.endpoint.config import EndpointConfig
from nexagauge_local.judge.endpoint.http import EndpointHTTP
from nexagauge_local.judge.endpoint.wire import chat_body, to_result
from nexagauge_local.judge.ledger import split_device_seconds
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult, OnBatch


class EndpointBackend:
    """Judges through an OpenAI-compatible server (`EndpointConfig`)."""

    name = "endpoint"

    def __init__(self, config: EndpointConfig, *, seed: int = 0,
                 rng: random.Random | None = None) -> None:
        self.config = config
        self.seed = seed
        self.fingerprint = config.fingerprint
        # The server's GPUs as the user stated them; 0 when unknown (the ledger then reports
        # null device-seconds, see app/judge.py)
        self.gpu_count = config.gpus or 0
        self.load_seconds = 0.0  # the server is already up: nothing is loaded here
        self.http = EndpointHTTP(config.url, config.api_key, timeout_seconds=config.timeout_seconds,
                                 connections=config.concurrency, retry=config.retry, rng=rng)
        self.attempts = 0  # HTTP attempts made, retries included (for tests and benchmarks)
        self._count = threading.Lock()

    def _one(self, request: JudgeRequest) -> JudgeResult:
        """One request to its final result; never raises (a bug here must not lose the
        node's other answers)."""
        try:
            reply = self.http.send("POST", "/chat/completions",
                                   chat_body(request, self.config.model, self.seed))
            with self._count:
                self.attempts += reply.attempts
            if reply.error is not None or reply.response is None:
                return JudgeResult.failed(FailureKind.BACKEND,
                                          f"endpoint: {request.where()}: {reply.error}")
            return to_result(reply.response, request)
        except Exception as exc:  # noqa: BLE001 - reported as this request's failure
            return JudgeResult.failed(FailureKind.BACKEND,
                                      f"endpoint: {request.where()}: {type(exc).__name__}: {exc}")

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        """Results aligned with `requests`; `on_batch([i], [result])` as each one finishes.
        With the server's GPUs stated, each result is charged the wall time since the last
        one finished times those GPUs (their sum is the call's wall time x GPUs)."""
        results: list[JudgeResult | None] = [None] * len(requests)
        if not requests:
            return []
        pool = ThreadPoolExecutor(max_workers=self.config.concurrency,
                                  thread_name_prefix="endpoint-judge")
        last = time.perf_counter()
        try:
            pending: dict[Future[JudgeResult], int] = {
                pool.submit(self._one, r): i for i, r in enumerate(requests)}
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                now = time.perf_counter()
                positions = [pending.pop(f) for f in finished]
                batch = [f.result() for f in finished]
                if self.config.gpus:
                    split_device_seconds(batch, now - last, self.config.gpus)
                last = now
                for i, res in zip(positions, batch):
                    results[i] = res
                if on_batch:
                    on_batch(positions, batch)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return [r for r in results if r is not None]

    def close(self) -> None:
        self.http.close()
