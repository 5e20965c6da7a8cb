"""JudgeClient: dedup, one backend call per node, cache reuse, crash-safe resume, ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from nexagauge_local.judge import schemas as S
from nexagauge_local.judge.cache import JudgeCache
from nexagauge_local.judge.client import JudgeClient
from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult, Messages, OnBatch
from nexagauge_local.nodes.geval import geval_schema
from nexagauge_local.nodes.redteam import verdict_schema
from tests.judge_fixtures import redteam_messages

REPO = Path(__file__).resolve().parents[1]
GEVAL = geval_schema("scale_1_5")


class ScriptedBackend:
    """Answers from the prompt text: 'TRUNC' -> cut off, 'FAIL' -> backend error. Hands
    nothing over: the client commits what `generate` returns."""

    name = "scripted"
    fingerprint = "scripted@1/float32/test"
    gpu_count = 0
    load_seconds = 1.5

    def __init__(self) -> None:
        self.calls: list[int] = []

    def count_tokens(self, messages: Messages) -> int:
        return sum(len(m["content"]) for m in messages)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        self.calls.append(len(requests))
        out = []
        for r in requests:
            content = r.messages[-1]["content"]
            if "FAIL" in content:
                out.append(JudgeResult.failed(FailureKind.BACKEND, "backend: out of memory", 10))
                continue
            text = '{"sco' if "TRUNC" in content else f'{{"score":{len(content) % 5 + 1}}}'
            parsed, err, kind = S.parse_answer(r.schema, text, hit_max_tokens="TRUNC" in content)
            lps = [{"{": -0.01}] if r.want_logprobs else None
            out.append(
                JudgeResult(
                    parsed, text, 10, r.max_tokens if err else 4, 0.2, err, kind,
                    token_logprobs=lps,
                )
            )
        return out

    def close(self) -> None:
        pass


class Factory:
    """A backend callable with the decision a run would have made for it."""

    def __init__(self, backend: object, fingerprint: str = ScriptedBackend.fingerprint):
        self.backend, self.built = backend, 0
        self.decision = JudgeDecision(
            profile="scripted", backend="hf", grammar="outlines", dtype="float32", device="cpu",
            demo=True, reason="--backend hf", fingerprint=fingerprint,
        )

    def __call__(self) -> object:
        self.built += 1
        return self.backend


def _req(content: str, **kw: object) -> JudgeRequest:
    return JudgeRequest(
        [{"role": "user", "content": content}], GEVAL, 20, node="geval", prompt_version="v1", **kw
    )  # type: ignore[arg-type]


def _client(tmp_path: Path, backend: ScriptedBackend | None = None, **kw: object):
    factory = Factory(backend or ScriptedBackend())
    client = JudgeClient(factory, JudgeCache(tmp_path), CostLedger(), 2.0,  # type: ignore[arg-type]
                         decision=factory.decision, **kw)
    return client, factory


def test_dedup_one_call_and_order(tmp_path: Path) -> None:
    client, factory = _client(tmp_path)
    contents = ["a", "bb", "a", "ccc", "bb", "dddd", "a"]
    results = client.run("geval", [_req(c) for c in contents])
    assert factory.backend.calls == [4]  # type: ignore[attr-defined]
    assert [r.parsed.score for r in results] == [len(c) % 5 + 1 for c in contents]  # type: ignore[union-attr]
    assert [bool(r.extra.get("duplicate")) for r in results] == [
        False,
        False,
        True,
        False,
        True,
        False,
        True,
    ]
    assert all(r.gpu_seconds == 0.0 for r in results if r.extra.get("duplicate"))
    usage = client.ledger.nodes["geval"]
    assert (usage.requests, usage.backend_calls, usage.backend_requests, usage.deduplicated) == (
        7,
        1,
        4,
        3,
    )
    assert usage.gpu_seconds == pytest.approx(0.8)
    assert client.ledger.load_seconds == 1.5
    assert client.ledger.as_dict()["geval"]["input_tokens"] == 40


def test_rerun_is_served_from_cache_without_loading(tmp_path: Path) -> None:
    reqs = [_req(c * 3) for c in "abcdef"]
    first, _ = _client(tmp_path)
    fresh = first.run("geval", reqs)
    client, factory = _client(tmp_path)
    again = client.run("geval", reqs)
    assert factory.built == 0 and not client.backend_loaded
    assert [r.raw_text for r in again] == [r.raw_text for r in fresh]
    assert all(r.cached and r.gpu_seconds == 0.0 for r in again)
    assert [(r.prompt_tokens, r.output_tokens) for r in again] == [(10, 4)] * 6
    assert [r.parsed for r in again] == [r.parsed for r in fresh]
    usage = client.ledger.nodes["geval"]
    assert (usage.cache_hits, usage.backend_calls, usage.gpu_seconds) == (6, 0, 0.0)
    assert client.cache.stats().hits_by_node == {"geval": 6}  # type: ignore[union-attr]


def test_partial_cache_sends_only_misses_in_one_call(tmp_path: Path) -> None:
    first, _ = _client(tmp_path)
    first.run("geval", [_req(c) for c in "abc"])
    client, factory = _client(tmp_path)
    results = client.run("geval", [_req(c) for c in "abcdefg"])
    assert factory.backend.calls == [4]  # type: ignore[attr-defined]
    assert [r.cached for r in results] == [True] * 3 + [False] * 4


def test_failed_answers_are_kept_but_asked_again_backend_errors_are_not_kept(
        tmp_path: Path) -> None:
    client, _ = _client(tmp_path)
    results = client.run("geval", [_req("TRUNC"), _req("FAIL"), _req("ok")])
    assert [r.error for r in results] == ["truncated", "backend: out of memory", None]
    assert [r.failure for r in results] == [FailureKind.TRUNCATED, FailureKind.BACKEND, None]
    assert client.cache.stats().entries == 2  # type: ignore[union-attr]  TRUNC is kept, FAIL not
    client2, factory2 = _client(tmp_path)
    again = client2.run("geval", [_req("TRUNC"), _req("FAIL"), _req("ok")])
    assert factory2.backend.calls == [2]  # type: ignore[attr-defined]  TRUNC and FAIL asked again
    assert not again[0].cached and again[0].failure is FailureKind.TRUNCATED
    assert again[2].cached and again[2].error is None
    usage = client2.ledger.nodes["geval"]
    assert (usage.cache_hits, usage.cache_retried, usage.backend_requests) == (1, 1, 2)
    assert client2.cache.stats().hits_by_node == {"geval": 1}  # type: ignore[union-attr]


class MendedBackend(ScriptedBackend):
    """Answers prose (a server that ignored the schema) until `mended`, then valid JSON."""

    def __init__(self, mended: bool) -> None:
        super().__init__()
        self.mended = mended

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        if self.mended:
            return super().generate(requests, on_batch)
        self.calls.append(len(requests))
        return [JudgeResult(None, "The answer looks fine to me.", 10, 7, 0.1,
                            "invalid: not JSON", FailureKind.INVALID_OUTPUT) for _ in requests]


def test_answers_that_failed_are_asked_again_once_the_judge_is_mended(tmp_path: Path) -> None:
    """The same cache across both runs: the second computes the failed ones again (and the
    estimate between them counts them as still to compute), and every answer parses."""
    from nexagauge_local.estimate.cost import estimate_llm

    reqs = [_req(c * 4) for c in "abcdefgh"] + [_req("aaaa")]  # one duplicate
    broken, _ = _client(tmp_path, MendedBackend(mended=False))
    assert all(r.failure is FailureKind.INVALID_OUTPUT for r in broken.run("geval", reqs))
    cache = JudgeCache(tmp_path)
    assert cache.stats().entries == 8
    est = estimate_llm(reqs, ScriptedBackend(), None, cache=cache,
                       fingerprint=ScriptedBackend.fingerprint)
    assert (est["cached"], est["uncached"]) == (0, 8)
    mended, factory = _client(tmp_path, MendedBackend(mended=True))
    results = mended.run("geval", reqs)
    assert factory.backend.calls == [8]  # type: ignore[attr-defined]
    assert all(r.parsed is not None and not r.cached for r in results)
    usage = mended.ledger.nodes["geval"]
    assert (usage.cache_hits, usage.cache_retried, usage.errors) == (0, 8, 0)
    third, factory3 = _client(tmp_path, MendedBackend(mended=True))
    assert all(r.cached and r.parsed is not None for r in third.run("geval", reqs))
    assert factory3.built == 0 and third.ledger.nodes["geval"].cache_retried == 0


class WordingBackend(ScriptedBackend):
    """Failures whose wording says the opposite of their kind: caching must follow the kind."""

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        self.calls.append(len(requests))
        return [JudgeResult.failed(FailureKind.BACKEND, "truncated"),
                JudgeResult(None, "{", 10, 20, 0.1, "backend: looks transient",
                            FailureKind.INVALID_OUTPUT)][: len(requests)]


def test_caching_decides_on_the_failure_kind_not_the_message(tmp_path: Path) -> None:
    first, _ = _client(tmp_path, WordingBackend())  # type: ignore[arg-type]
    first.run("geval", [_req("a"), _req("b")])
    # only the BACKEND one was left out of the cache; the INVALID_OUTPUT one is kept
    assert first.cache.stats().entries == 1  # type: ignore[union-attr]
    again, factory = _client(tmp_path, WordingBackend())  # type: ignore[arg-type]
    results = again.run("geval", [_req("a")])
    assert factory.backend.calls == [1] and not results[0].cached  # type: ignore[attr-defined]
    assert again.ledger.nodes["geval"].cache_retried == 0  # nothing of it was cached
    # the kept one re-parses as cut off: a failure, so it is asked again, not served
    [retried] = again.run("geval", [_req("b")])
    assert factory.backend.calls == [1, 1] and not retried.cached  # type: ignore[attr-defined]
    assert again.ledger.nodes["geval"].cache_retried == 1


def test_a_result_carries_its_failure_kind_with_its_error() -> None:
    with pytest.raises(ValueError, match="go together"):
        JudgeResult(None, "", 0, 0, 0.0, error="backend: lost")
    with pytest.raises(ValueError, match="go together"):
        JudgeResult(None, "", 0, 0, 0.0, failure=FailureKind.BACKEND)


def test_a_backend_that_hands_nothing_over_is_committed_when_it_returns(tmp_path: Path) -> None:
    """The client always passes `on_batch`; what a backend returns without calling it is
    cached in one transaction as the call returns, booked as one backend call."""
    client, factory = _client(tmp_path)
    seen: list[int] = []
    client.run("geval", [_req(f"case {i}") for i in range(25)], progress=seen.append)
    assert factory.backend.calls == [25]  # type: ignore[attr-defined]
    assert seen == [25]
    assert client.ledger.nodes["geval"].backend_calls == 1
    assert client.cache.stats().entries == 25  # type: ignore[union-attr]


def test_no_cache_and_logprobs(tmp_path: Path) -> None:
    backend = ScriptedBackend()
    factory = Factory(backend)
    client = JudgeClient(factory, None, CostLedger(), decision=factory.decision)  # type: ignore[arg-type]
    client.run("geval", [_req("x")])
    client.run("geval", [_req("x")])
    assert backend.calls == [1, 1]
    cached_client, _ = _client(tmp_path)
    cached_client.run("geval", [_req("x", want_logprobs=True)])
    c2, _ = _client(tmp_path)
    [hit] = c2.run("geval", [_req("x", want_logprobs=True)])
    assert hit.cached and hit.token_logprobs == [{"{": -0.01}]
    [other] = c2.run("geval", [_req("x")])  # logprobs are part of the key
    assert not other.cached


def test_identity_without_building_backend(tmp_path: Path) -> None:
    client, factory = _client(tmp_path)
    assert client.fingerprint == ScriptedBackend.fingerprint
    assert client.is_demo and client.model_name == "scripted"
    assert factory.built == 0
    info = client.describe()
    assert info["demo"] and "not for decisions" in info["notice"]
    assert (info["backend"], info["backend_reason"]) == ("hf", "--backend hf")  # as decided


# ------------------------------------------------------------------ with the tiny real model


class Counting:
    def __init__(self, inner: object) -> None:
        self.inner, self.calls = inner, []
        self.name, self.fingerprint, self.gpu_count = inner.name, inner.fingerprint, inner.gpu_count  # type: ignore[attr-defined]
        self.load_seconds = 0.0  # the inner backend was loaded by the fixture

    def count_tokens(self, messages: Messages) -> int:
        return self.inner.count_tokens(messages)  # type: ignore[attr-defined]

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        self.calls.append(len(requests))
        return self.inner.generate(requests, on_batch)  # type: ignore[attr-defined]

    def close(self) -> None:
        pass  # the fixture's backend outlives this client


def _tiny_requests(n: int) -> list[JudgeRequest]:
    schema = verdict_schema("scale_1_5", False, max_items=2, span_chars=12)
    return [
        JudgeRequest(
            redteam_messages(i),
            schema,
            S.max_tokens_for(schema, 0.25),
            node="redteam",
            prompt_version="t1",
        )
        for i in range(n)
    ]


def test_tiny_model_rerun_makes_zero_backend_calls(tiny_backend, tmp_path: Path) -> None:
    reqs = _tiny_requests(50)
    counting = Counting(tiny_backend)
    client = JudgeClient(lambda: counting, JudgeCache(tmp_path), CostLedger(),
                         decision=tiny_backend.decision)
    first = client.run("redteam", reqs)
    assert counting.calls == [50] and all(r.error is None for r in first)
    assert client.ledger.nodes["redteam"].gpu_seconds > 0
    again_counting = Counting(tiny_backend)
    client2 = JudgeClient(
        lambda: again_counting,
        JudgeCache(tmp_path),
        CostLedger(),
        decision=tiny_backend.decision,
    )
    again = client2.run("redteam", reqs)
    assert again_counting.calls == [] and not client2.backend_loaded
    assert [r.parsed for r in again] == [r.parsed for r in first]


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from nexagauge_local.judge.cache import JudgeCache
    from nexagauge_local.judge.ledger import CostLedger
    from nexagauge_local.judge.client import JudgeClient
    from nexagauge_local.judge.hf.backend import HFBackend
    from nexagauge_local.judge.profiles import JudgeProfile
    from tests.test_judge_client import _tiny_requests

    model_dir, cache_dir, n, chunk = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    profile = JudgeProfile(name="tiny", weights=model_dir, backend="hf", dtype="float32")

    class StallMidCall:
        # once `chunk` answers are handed over (and committed), stalls inside the call
        def __init__(self):
            self.inner = inner
            self.name, self.fingerprint, self.gpu_count = "hf", self.inner.fingerprint, 0
            self.load_seconds = self.inner.load_seconds
            self.handed = 0
        def generate(self, reqs, on_batch=None):
            def relay(positions, results):
                on_batch(positions, results)
                self.handed += len(positions)
                if self.handed >= chunk:
                    print("STALLING", self.handed, flush=True)
                    time.sleep(120)
            return self.inner.generate(reqs, on_batch=relay)
        def close(self):
            pass

    inner = HFBackend(profile, cache_dir=cache_dir, device="cpu", threads=1,
                      max_batch=5)  # answers handed over in batches of 5
    client = JudgeClient(StallMidCall, JudgeCache(cache_dir), CostLedger(),
                         decision=inner.decision)
    client.run("redteam", _tiny_requests(n))
    print("FINISHED", flush=True)
    """
)


def test_sigkill_mid_run_recomputes_nothing_finished(
    tiny_backend, tiny_judge_dir: Path, tmp_path: Path
) -> None:
    n, chunk = 30, 10
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(repo=str(REPO)))
    cache_dir = tmp_path / "cache"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tiny_judge_dir), str(cache_dir), str(n), str(chunk)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 180
        assert proc.stdout is not None
        handed = 0
        for line in proc.stdout:  # wait until `chunk` answers are in and the child is mid-call
            if line.startswith("STALLING"):
                handed = int(line.split()[1])
                break
            if time.monotonic() > deadline:
                break
        assert proc.poll() is None, "child ended before it could be killed"
        assert chunk <= handed < n
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    cache = JudgeCache(cache_dir)
    assert cache.stats().entries == handed  # exactly what was handed over, nothing half-written
    counting = Counting(tiny_backend)
    client = JudgeClient(lambda: counting, cache, CostLedger(), decision=tiny_backend.decision)
    results = client.run("redteam", _tiny_requests(n))
    assert counting.calls == [n - handed]  # what was handed over was not recomputed
    usage = client.ledger.nodes["redteam"]
    assert usage.cache_hits == handed and usage.backend_requests == n - handed
    assert all(r.error is None for r in results)
    assert sum(r.cached for r in results) == handed


def test_calibrate_and_estimate_without_weights(tiny_backend, tiny_profile, tmp_path: Path) -> None:
    from nexagauge_local.app.throughput import calibrate
    from nexagauge_local.estimate.cost import estimate_llm
    from nexagauge_local.judge.runtime import TokenCounter

    calib = calibrate(tiny_backend, n=4)
    assert calib["fingerprint"] == tiny_backend.fingerprint and calib["device"].startswith("cpu:")
    assert calib["seconds_per_prompt_token"] > 0 and calib["seconds_per_output_token"] > 0
    assert calib["parsed"] == 8
    counter = TokenCounter(tiny_profile, tmp_path)
    reqs = _tiny_requests(6) + _tiny_requests(2)  # 2 duplicates
    est = estimate_llm(reqs, counter, None)
    assert (est["requests"], est["unique"], est["uncached"]) == (8, 6, 6)
    assert est["prompt_tokens"] == sum(tiny_backend.count_tokens(r.messages) for r in reqs[:6])
    assert est["output_tokens"] == round(6 * reqs[0].max_tokens / 2)
    assert est["gpu_seconds"] is None
    cache = JudgeCache(tmp_path)
    client = JudgeClient(lambda: tiny_backend, cache, CostLedger(),
                         decision=tiny_backend.decision)
    client.run("redteam", reqs[:2])
    est = estimate_llm(reqs, counter, calib, cache=cache, fingerprint=tiny_backend.fingerprint)
    assert (est["cached"], est["uncached"]) == (2, 4)
    assert est["gpu_seconds"] > 0 and est["output_source"].startswith("calibration")


def test_calibrate_cli_writes_profile(tiny_judge_dir: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nexagauge_local.cli.judge_cmds import calibrate_cmd
    from nexagauge_local.estimate.cost import load_calibration

    args = [
        "--model",
        str(tiny_judge_dir),
        "--backend",
        "hf",
        "--n",
        "2",
        "--cache-dir",
        str(tmp_path),
    ]
    out = CliRunner().invoke(calibrate_cmd, args)
    assert out.exit_code == 0, out.output
    [written] = list((tmp_path / "calibration").glob("*.json"))
    data = json.loads(written.read_text())
    assert load_calibration(tmp_path, data["fingerprint"]) == data
    assert "tok/s" in out.output


class StreamingBackend(ScriptedBackend):
    """Hands results over in batches of 3; raises after `die_after` batches (a crash)."""

    def __init__(self, die_after: int | None = None) -> None:
        super().__init__()
        self.die_after = die_after

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        out = super().generate(requests)
        for n, start in enumerate(range(0, len(requests), 3)):
            if self.die_after is not None and n == self.die_after:
                raise RuntimeError("engine died")
            positions = list(range(start, min(start + 3, len(requests))))
            if on_batch:
                on_batch(positions, [out[i] for i in positions])
        return out


def test_streaming_backend_commits_each_batch_before_the_call_returns(tmp_path: Path) -> None:
    reqs = [_req(f"case {i}") for i in range(10)]
    client, _factory = _client(tmp_path, StreamingBackend(die_after=2))  # type: ignore[arg-type]
    seen: list[int] = []
    with pytest.raises(RuntimeError, match="engine died"):
        client.run("geval", reqs, progress=seen.append)
    assert seen == [3, 3]
    assert client.cache.stats().entries == 6  # type: ignore[union-attr]  two batches committed
    again, factory2 = _client(tmp_path, StreamingBackend())  # type: ignore[arg-type]
    results = again.run("geval", reqs)
    assert factory2.backend.calls == [4]  # type: ignore[attr-defined]  only the lost work
    assert [r.cached for r in results] == [True] * 6 + [False] * 4
    usage = again.ledger.nodes["geval"]
    assert (usage.cache_hits, usage.backend_calls, usage.backend_requests) == (6, 1, 4)


def test_hf_backend_hands_over_each_micro_batch_as_it_ends(tiny_backend, tmp_path: Path) -> None:
    """The real hf backend hands each micro-batch over as it ends, before the next one runs,
    and splits the device time over the rows."""
    schema = geval_schema("scale_1_5")
    reqs = [JudgeRequest(redteam_messages(i), schema, 12, node="geval") for i in range(6)]
    reqs.append(JudgeRequest(redteam_messages(9), verdict_schema(), 40, node="redteam"))
    budget, tiny_backend.max_batch = tiny_backend.max_batch, 2
    handed: list[tuple[list[int], list[int]]] = []  # (positions, their output token counts)
    try:
        started = time.perf_counter()
        results = tiny_backend.generate(
            reqs, on_batch=lambda pos, res: handed.append((pos, [r.output_tokens for r in res])))
        wall = time.perf_counter() - started
    finally:
        tiny_backend.max_batch = budget
    assert sorted(i for pos, _ in handed for i in pos) == list(range(7))  # each once
    assert len(handed) == 4  # one per micro-batch: 3 geval + 1 redteam (another schema)
    assert all(len(pos) <= 2 for pos, _ in handed)
    by_position = {i: t for pos, ts in handed for i, t in zip(pos, ts)}
    assert [by_position[i] for i in range(7)] == [r.output_tokens for r in results]
    assert all(r.error is None for r in results[:6])
    assert all(r.gpu_seconds > 0 for r in results)
    assert sum(r.gpu_seconds for r in results) <= wall
    assert all(r.extra["batch_size"] in (1, 2) for r in results)


def test_the_cache_keeps_each_judges_output_history_and_estimate_predicts_from_it(
    tmp_path: Path,
) -> None:
    """Output tokens predicted from what this judge wrote for the same schema, with
    a spread, instead of half the schema bound (7.3x over on the peer sample)."""
    from nexagauge_local.estimate.cost import MIN_HISTORY, estimate_llm

    cache = JudgeCache(tmp_path)
    factory = Factory(ScriptedBackend())
    client = JudgeClient(factory, cache, CostLedger(), decision=factory.decision)  # type: ignore[arg-type]
    client.run("geval", [_req(f"case {i}") for i in range(4)] + [_req("TRUNC x")])
    sid = S.schema_id(_req("x").schema)
    hist = cache.output_history(ScriptedBackend.fingerprint)
    assert set(hist) == {sid} and hist[sid].n == 5  # a truncated answer is a real length too
    assert hist[sid].mean == pytest.approx((4 * 4 + 20) / 5)
    assert hist[sid].std == pytest.approx(6.4)
    assert cache.output_history("another judge") == {}
    client.run("geval", [_req(f"case {i}") for i in range(4)])  # cache hits add nothing
    assert cache.output_history(ScriptedBackend.fingerprint)[sid].n == 5

    new = [_req(f"new case {i}") for i in range(3)]
    est = estimate_llm(new, ScriptedBackend(), None, cache=cache,
                       fingerprint=ScriptedBackend.fingerprint, history=hist)  # fmt: skip
    assert est["output_tokens"] == round(3 * 7.2)
    assert est["output_spread"] == round((3 * 6.4**2) ** 0.5)
    assert est["output_source"] == "history" and est["output_sources"] == {"history": 3}
    # device-seconds at the judge's own rate on real work: 5 answers, 0.2 s each, over
    # 5 x 10 prompt tokens + 36 output tokens
    rate = hist[sid].seconds_per_token
    assert rate == pytest.approx(5 * 0.2 / (5 * 10 + 36))
    prompt = sum(ScriptedBackend().count_tokens(r.messages) for r in new)
    assert est["gpu_seconds"] == pytest.approx((prompt + 3 * 7.2) * rate)
    assert est["gpu_seconds_source"] == "history"
    few = {sid: hist[sid].model_copy(update={"n": MIN_HISTORY - 1})}
    est = estimate_llm(new, ScriptedBackend(), None, history=few)
    assert est["output_source"] == "schema_bounds/2"
    assert est["output_tokens"] == round(3 * new[0].max_tokens / 2)
