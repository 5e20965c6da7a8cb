"""The device-seconds model `estimate` fits to a judge's own answers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nexagauge_local.estimate.seconds_model import MIN_SAMPLES, fit_seconds
from nexagauge_local.judge import cache as cache_mod
from nexagauge_local.judge.cache import CacheEntry, JudgeCache


def _samples(a: float, b: float, c: float, n: int = 60, noise: float = 0.0, prompt=(300, 700)):
    rng = random.Random(0)
    out = []
    for _ in range(n):
        p, o = rng.randint(*prompt), rng.randint(5, 80)
        out.append((p, o, (a * p + b * o + c * p * o) * (1 + rng.uniform(-noise, noise))))
    return out


def test_fit_recovers_a_step_shared_decode_and_extrapolates_to_longer_prompts():
    """hf: an output token's share of a decode step grows with the prompt (fewer rows share
    it). One rate per token fitted on 300-700-token prompts misses 900-1100-token ones by more
    than 10%; the model lands within 5%."""
    a, b, c = 2e-4, 1e-2, 3e-5
    model = fit_seconds(_samples(a, b, c, noise=0.05))
    assert model is not None and model.n == 60
    longer = _samples(a, b, c, n=40, prompt=(900, 1100))
    truth = sum(s for *_, s in longer)
    predicted = sum(model.predict(p, o) for p, o, _ in longer)
    assert predicted == pytest.approx(truth, rel=0.05)
    train = _samples(a, b, c, noise=0.05)
    rate = sum(s for *_, s in train) / sum(p + o for p, o, _ in train)
    assert abs(sum(rate * (p + o) for p, o, _ in longer) / truth - 1) > 0.10


def test_token_proportional_seconds_fit_one_rate():
    """vLLM charges a call's device time by tokens: the fit is the old single rate."""
    model = fit_seconds([(p, o, 1e-3 * (p + o)) for p, o, _ in _samples(0, 0, 0)])
    assert model is not None
    assert model.per_prompt == pytest.approx(1e-3, rel=1e-6)
    assert model.per_output == pytest.approx(1e-3, rel=1e-6)
    assert model.per_prompt_output == pytest.approx(0, abs=1e-12)


def test_too_few_or_empty_samples_give_no_model():
    assert fit_seconds(_samples(1e-3, 1e-2, 0, n=MIN_SAMPLES - 1)) is None
    assert fit_seconds([(100, 10, 0.0)] * 50) is None  # no device time recorded
    assert all(v >= 0 for v in vars(fit_seconds(_samples(1e-3, 0, 0))).values())


def test_cache_keeps_bounded_recent_samples_per_judge_and_schema(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(cache_mod, "MAX_SAMPLES", 7)
    cache = JudgeCache(tmp_path)

    def put(judge: str, schema: str, start: int, n: int, seconds: float = 0.5) -> None:
        entries = [CacheEntry(key=f"{judge}{schema}{i}", node="n", raw_text="{}",
                              prompt_tokens=100 + i, output_tokens=i, gpu_seconds=seconds)
                   for i in range(start, start + n)]
        cache.put_many(entries, judge=judge, schemas=[schema] * n)

    put("j1", "s1", 0, 5)
    put("j1", "s1", 5, 5)
    put("j1", "s2", 0, 3)
    put("j2", "s1", 0, 2)
    put("j1", "s3", 0, 4, seconds=0.0)  # no device time (e.g. a failed load): not a sample
    hist = cache.output_history("j1")
    assert [o for _, o, _ in hist["s1"].samples] == list(range(3, 10))  # the 7 newest
    assert hist["s1"].n == 10  # the running sums still count every answer
    assert len(hist["s2"].samples) == 3 and hist["s3"].samples == []
    assert len(cache.output_history("j2")["s1"].samples) == 2
