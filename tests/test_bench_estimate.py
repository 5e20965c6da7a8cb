"""scripts/bench_estimate.py's arithmetic: what `estimate` predicted against what the run did."""

from __future__ import annotations

import pytest

from tests.bench_scripts import load_script

B = load_script("bench_estimate")


def _est(*judges: dict) -> dict:
    nodes = {f"n{i}": {"kind": "llm", "judge": j} for i, j in enumerate(judges)}
    return {"nodes": nodes | {"scan": {"kind": "deterministic"}}}


def _judge(out: int, spread: int, secs: float | None, source: str | None = "history") -> dict:
    return {"uncached": 10, "output_tokens": out, "output_spread": spread, "gpu_seconds": secs,
            "gpu_seconds_source": source}  # fmt: skip


def test_predictions_sum_over_llm_nodes() -> None:
    pred = B.predicted(_est(_judge(300, 30, 10.0), _judge(100, 40, 5.5)))
    assert pred == {"requests": 20, "output_tokens": 400, "output_spread": 50,
                    "gpu_seconds": 15.5, "sources": ["history"]}  # fmt: skip
    # one node without a device-seconds figure leaves the total unknown, not understated
    assert B.predicted(_est(_judge(300, 0, 10.0), _judge(1, 0, None, None)))["gpu_seconds"] is None


def test_compare_against_the_run() -> None:
    act = B.actual({"cost": {"requests": 40, "cache_hits": 10, "output_tokens": 1000,
                             "gpu_seconds": 50.004}})  # fmt: skip
    assert act == {"requests": 30, "output_tokens": 1000, "gpu_seconds": 50.0}
    cmp = B.compare({"output_tokens": 1250, "gpu_seconds": 39.0}, act)
    assert cmp["output_tokens"]["error"] == pytest.approx(0.25) and cmp["output_tokens"]["met"]
    assert cmp["gpu_seconds"]["error"] == pytest.approx(-0.22) and not cmp["gpu_seconds"]["met"]
    assert B.compare({"output_tokens": 1, "gpu_seconds": None}, act)["gpu_seconds"]["met"] is False


def test_one_rate_and_model_side_by_side_from_the_cache(tmp_path) -> None:
    """The history run's answers (before the boundary) predict the run's (after it)."""
    from nexagauge_local.judge.cache import CacheEntry, JudgeCache

    cache = JudgeCache(tmp_path)

    def put(start: int, prompts: range, outputs: int) -> None:
        entries = [CacheEntry(key=f"k{start + i}", node="n", raw_text="{}", prompt_tokens=p,
                              output_tokens=outputs, gpu_seconds=0.05 * outputs)
                   for i, p in enumerate(prompts)]  # seconds: output tokens only
        cache.put_many(entries, judge="j", schemas=["s"] * len(entries))

    put(0, range(100, 700, 40), 20)  # 15 history answers
    boundary = B._last_sample(cache.path)
    assert boundary == 15
    put(100, range(1000, 1100, 10), 20)  # 10 answers with longer prompts, same output
    got = B.one_rate_vs_model(cache.path, boundary)
    assert got["requests"] == 10 and got["actual"] == pytest.approx(10.0)
    assert got["model"] == pytest.approx(10.0, rel=1e-6)  # the model finds seconds ~ output
    assert got["one_rate"] > 2 * got["actual"]  # one rate charges the longer prompts
    assert B.one_rate_vs_model(cache.path, 25) is None  # no answers after the boundary
