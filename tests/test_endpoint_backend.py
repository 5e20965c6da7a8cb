"""The endpoint backend against a scripted OpenAI server: every request ends in an answer, a
successful retry or a counted error for that request alone; never a hang, never a lost one."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from nexagauge_local.judge import CostLedger, FailureKind, JudgeCache, JudgeClient, JudgeRequest
from nexagauge_local.judge.endpoint import EndpointBackend, EndpointConfig, RetryPolicy
from tests.decisions import decision_for
from tests.endpoint_stub import Reply, StubServer

FAST = RetryPolicy(attempts=3, base_seconds=0.05, max_sleep_seconds=2.0, total_seconds=5.0)


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["SAFE", "UNSAFE"]
    reason: str = Field(max_length=40)


def requests(n: int) -> list[JudgeRequest]:
    return [JudgeRequest(messages=[{"role": "system", "content": "Judge."},
                                   {"role": "user", "content": f"answer number {i}"}],
                         schema=Verdict, max_tokens=64, node="redteam", case_id=f"c{i}")
            for i in range(n)]


def backend(stub: StubServer, *, concurrency: int = 4, gpus: int | None = None,
            timeout: float = 5.0, retry: RetryPolicy = FAST) -> EndpointBackend:
    cfg = EndpointConfig(url=stub.url, model="stub-judge", concurrency=concurrency, gpus=gpus,
                         timeout_seconds=timeout, retry=retry)
    return EndpointBackend(cfg, seed=7, rng=random.Random(0))


def collect(b: EndpointBackend, reqs: list[JudgeRequest]) -> tuple[list, list[int]]:
    handed: list[int] = []
    out = b.generate(reqs, on_batch=lambda pos, res: handed.extend(pos))
    return out, handed


def test_answers_parse_stream_one_by_one_and_carry_usage() -> None:
    with StubServer() as stub:
        b = backend(stub)
        out, handed = collect(b, requests(6))
    assert sorted(handed) == list(range(6))
    assert all(r.parsed is not None and r.failure is None for r in out)
    assert [r.parsed.verdict for r in out] == ["SAFE"] * 6  # type: ignore[union-attr]
    assert all(r.prompt_tokens >= 10 and r.output_tokens > 0 for r in out)
    assert all(r.gpu_seconds is None for r in out)  # server's GPUs unknown: null, not 0.0
    assert b.attempts == 6 and b.gpu_count == 0
    body = stub.chat_calls()[0].body
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["max_tokens"] == 64
    assert body["model"] == "stub-judge"
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["reason"]["maxLength"] == 40  # bounds kept


def test_concurrency_bounds_requests_in_flight_and_overlaps_them() -> None:
    with StubServer(script=lambda n, body: Reply(delay=0.3)) as stub:
        started = time.monotonic()
        out, _ = collect(backend(stub, concurrency=4), requests(8))
        wall = time.monotonic() - started
    assert all(r.parsed is not None for r in out)
    assert stub.max_in_flight == 4
    assert wall < 8 * 0.3 * 0.75, wall  # overlapped, not one after another


def test_stated_gpus_charge_wall_time_times_gpus() -> None:
    with StubServer(script=lambda n, body: Reply(delay=0.1)) as stub:
        started = time.monotonic()
        out, _ = collect(backend(stub, concurrency=2, gpus=2), requests(4))
        wall = time.monotonic() - started
    total = sum(r.gpu_seconds for r in out)
    assert 2 * 0.15 < total <= 2 * wall + 1e-6


def test_500_then_success_is_retried() -> None:
    with StubServer(script=lambda n, body: Reply(status=500) if n == 0 else Reply()) as stub:
        b = backend(stub, concurrency=1)
        out, handed = collect(b, requests(1))
    assert out[0].parsed is not None and handed == [0]
    assert b.attempts == 2 and len(stub.chat_calls()) == 2


def test_429_honours_retry_after() -> None:
    def script(n: int, body: dict) -> Reply:
        return Reply(status=429, headers={"Retry-After": "1"}) if n == 0 else Reply()

    with StubServer(script=script) as stub:
        b = backend(stub, concurrency=1)
        out, _ = collect(b, requests(1))
        calls = stub.chat_calls()
    assert out[0].parsed is not None and b.attempts == 2
    assert 0.95 <= calls[1].at - calls[0].at < 3.0


def test_timeout_then_answer_is_retried() -> None:
    with StubServer(script=lambda n, body: Reply(delay=1.5) if n == 0 else Reply()) as stub:
        b = backend(stub, concurrency=1, timeout=0.5)
        started = time.monotonic()
        out, _ = collect(b, requests(1))
    assert out[0].parsed is not None and b.attempts == 2
    assert time.monotonic() - started < 3.0


def test_persistent_500_is_a_counted_backend_error_in_bounded_time() -> None:
    def script(n: int, body: dict) -> Reply:
        return Reply(status=503) if "number 1" in body["messages"][1]["content"] else Reply()

    with StubServer(script=script) as stub:
        b = backend(stub, concurrency=2)
        started = time.monotonic()
        out, handed = collect(b, requests(3))
        elapsed = time.monotonic() - started
    assert sorted(handed) == [0, 1, 2]  # the failure is handed over like any result
    assert out[1].failure is FailureKind.BACKEND and "3 attempt" in (out[1].error or "")
    assert "HTTP 503" in (out[1].error or "")
    assert out[0].parsed is not None and out[2].parsed is not None
    assert b.attempts == 2 + 3
    assert elapsed < 5.0


def test_malformed_json_answer_is_invalid_output() -> None:
    with StubServer(script=lambda n, body: Reply(content='{"verdict": "SAFE", "reas')) as stub:
        out, _ = collect(backend(stub), requests(1))
    assert out[0].failure in (FailureKind.INVALID_OUTPUT, FailureKind.TRUNCATED)
    assert out[0].raw_text.startswith('{"verdict"')


def test_a_reply_that_is_not_a_chat_completion_is_a_backend_error() -> None:
    with StubServer(script=lambda n, body: Reply(raw=b"<html>proxy error</html>")) as stub:
        out, _ = collect(backend(stub), requests(1))
    assert out[0].failure is FailureKind.BACKEND and "not a chat completion" in (out[0].error or "")


def test_a_server_that_ignores_the_schema_gives_invalid_output() -> None:
    with StubServer(script=lambda n, body: Reply(content="The answer is safe.")) as stub:
        out, _ = collect(backend(stub), requests(2))
    assert all(r.failure is FailureKind.INVALID_OUTPUT and r.parsed is None for r in out)
    assert "finish_reason=stop" in (out[0].error or "")


def test_finish_reason_length_is_truncated() -> None:
    with StubServer(script=lambda n, body: Reply(content='{"verdict": "SAFE", "reason": "ab',
                                                 finish_reason="length")) as stub:
        out, _ = collect(backend(stub), requests(1))
    assert out[0].failure is FailureKind.TRUNCATED


def test_context_window_400_is_its_own_failure() -> None:
    script = (lambda n, body: Reply(status=400, error="This model's maximum context length is "
                                    "2048 tokens. However, you requested 5000 tokens."))
    with StubServer(script=script) as stub:
        b = backend(stub)
        out, _ = collect(b, requests(1))
    assert out[0].failure is FailureKind.CONTEXT_WINDOW and b.attempts == 1  # not retried


def test_server_killed_mid_run_keeps_every_answer_and_fails_the_rest() -> None:
    stub = StubServer(script=lambda n, body: Reply(delay=0.05)).start()
    b = backend(stub, concurrency=1)
    handed: list[int] = []

    def on_batch(pos: list[int], res: list) -> None:
        handed.extend(pos)
        if len(handed) == 3:
            stub.stop()  # the server dies after three answers

    started = time.monotonic()
    out = b.generate(requests(6), on_batch=on_batch)
    assert time.monotonic() - started < 10.0
    assert sorted(handed) == list(range(6))
    # the pool may have sent the fourth request before the third answer's hand-over stopped
    # the server, so three or four answers arrive; every other request is a counted failure
    answered = sum(r.parsed is not None for r in out)
    assert answered in (3, 4)
    failed = [r for r in out if r.failure is not None]
    assert len(failed) == 6 - answered and all(r.failure is FailureKind.BACKEND for r in failed)
    assert all("gave up" in (r.error or "") for r in failed)


def test_client_caches_answers_and_not_backend_failures(tmp_path: Path) -> None:
    """Through JudgeClient: answers are committed as they come and reused; a failed request
    is asked again on the next run."""
    broken = {"on": True}

    def script(n: int, body: dict) -> Reply:
        if broken["on"] and "number 2" in body["messages"][1]["content"]:
            return Reply(status=500)
        return Reply()

    with StubServer(script=script) as stub:
        cfg = EndpointConfig(url=stub.url, model="stub-judge", retry=FAST, timeout_seconds=5)

        def client() -> JudgeClient:
            return JudgeClient(lambda: EndpointBackend(cfg), JudgeCache(tmp_path), CostLedger(),
                               decision=decision_for(cfg.fingerprint, backend="endpoint"))

        first = client().run("redteam", requests(4))
        assert [r.failure for r in first].count(FailureKind.BACKEND) == 1
        broken["on"] = False
        calls_before = len(stub.chat_calls())
        c2 = client()
        second = c2.run("redteam", requests(4))
        assert len(stub.chat_calls()) == calls_before + 1  # only the failed one asked again
        assert sum(r.cached for r in second) == 3 and all(r.parsed for r in second)
        assert c2.ledger.nodes["redteam"].cache_hits == 3
    assert json.loads(second[0].raw_text)["verdict"] == "SAFE"


@pytest.mark.parametrize("n", [0])
def test_no_requests_no_calls(n: int) -> None:
    with StubServer() as stub:
        assert backend(stub).generate(requests(n)) == []
        assert stub.chat_calls() == []
