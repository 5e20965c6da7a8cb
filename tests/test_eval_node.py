from __future__ import annotations

from nexagauge_local.nodes.eval import case_verdict
from nexagauge_local.results import MetricResult, NodeReport


def _m(name: str, score: float | None, passed: bool | None, error: str | None = None) -> MetricResult:
    return MetricResult(name=name, category="c", score=score, passed=passed, error=error)


def test_all_gating_metrics_pass() -> None:
    v = case_verdict({"refalign": NodeReport(metrics=[_m("refalign", 0.9, True)]),
                      "refmatch": NodeReport(metrics=[_m("rouge1", 0.1, None)])})
    assert v.passed is True
    assert v.score == 0.9  # informational metrics do not enter the gate or the score
    assert v.scores == {"refalign.refalign": 0.9, "refmatch.rouge1": 0.1}


def test_one_failure_fails_the_case() -> None:
    v = case_verdict({"redteam": NodeReport(metrics=[_m("bias", 1.0, True), _m("toxicity", 0.0, False)])})
    assert v.passed is False
    assert v.failed_metrics == ["redteam.toxicity"]


def test_error_is_not_a_pass() -> None:
    v = case_verdict({"grounding": NodeReport(metrics=[_m("grounding", None, None, error="no claims")])})
    assert v.passed is False
    assert v.error_metrics == ["grounding.grounding"]


def test_informational_only_has_no_verdict() -> None:
    v = case_verdict({"refmatch": NodeReport(metrics=[_m("bleu", 0.3, None)])})
    assert v.passed is None
