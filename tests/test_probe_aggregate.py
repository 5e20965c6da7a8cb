"""Run-level metrics on small hand-computed sets."""

from __future__ import annotations

import json

import pytest

from nexagauge_local.redteam.heuristics.aggregate import (
    aggregate_metrics,
    disagreements,
    verdict_tables,
)
from nexagauge_local.redteam.heuristics.scoring import SEVERITY_WEIGHTS, CaseScore
from nexagauge_local.redteam.outcomes.rate_stats import rate_stat, wilson_ci


def cs(
    case_id: str,
    category: str,
    severity: str,
    risk: float,
    *,
    safe: int = 0,
    unsafe: int = 0,
    modes: tuple[str, ...] = (),
) -> CaseScore:
    w = SEVERITY_WEIGHTS[severity]
    return CaseScore(
        case_id=case_id,
        category=category,
        passed=risk < 0.5,
        risk_score=risk,
        severity=severity,
        severity_weight=w,
        weighted_risk=min(1.0, risk * w),
        safe_signal_hits=safe,
        unsafe_signal_hits=unsafe,
        boundary_or_refusal_signal=safe > 0,
        matched_safe_patterns=[f"s{i}" for i in range(safe)],
        matched_unsafe_patterns=[f"u{i}" for i in range(unsafe)],
        detected_failure_modes=list(modes),
    )


# a: pass low; b: fail critical; c: pass medium; d: fail high  (categories x, x, y, y)
RUN = [
    cs("a", "x", "low", 0.0, safe=2),
    cs("b", "x", "critical", 0.8, unsafe=3, modes=("jailbreak", "toxicity")),
    cs("c", "y", "medium", 0.2, safe=1, unsafe=1),
    cs("d", "y", "high", 0.6, unsafe=2, modes=("jailbreak",)),
]


def test_counts_and_rates() -> None:
    m = aggregate_metrics(RUN).model_dump()
    assert m["counts"] == {
        "probes_evaluated": 4,
        "passed": 2,
        "failed": 2,
        "no_answer": 0,
        "categories_present": 2,
        "category_names": ["x", "y"],
    }
    assert m["pass_rate"] == 0.5 and m["fail_rate"] == 0.5
    assert m["pass_rate_ci95"] == pytest.approx(wilson_ci(m["counts"]["passed"],
                                                          m["counts"]["probes_evaluated"]))


def test_risk_statistics() -> None:
    r = aggregate_metrics(RUN).risk_score
    assert r["mean"] == pytest.approx(0.4)
    assert r["median"] == pytest.approx(0.4)
    # population std of 0, .8, .2, .6: deviations -.4, .4, -.2, .2 -> var = .4/4 = .1
    assert r["std"] == pytest.approx(0.1**0.5)
    # p90 (linear): sorted 0,.2,.6,.8; position .9*3 = 2.7 -> .6 + .7*.2 = .74
    assert r["p90"] == pytest.approx(0.74)
    assert r["max"] == pytest.approx(0.8)


def test_weighted_risk_statistics() -> None:
    m = aggregate_metrics(RUN).model_dump()
    # weighted: a 0, b min(1, 1.6)=1, c .2, d .9  -> sorted 0, .2, .9, 1
    w = m["weighted_risk"]
    assert w["mean"] == pytest.approx(2.1 / 4)
    assert w["median"] == pytest.approx(0.55)
    assert w["p90"] == pytest.approx(0.9 + 0.7 * 0.1)
    assert m["resilience_index"] == pytest.approx(1 - 2.1 / 4)
    assert m["exposure_index"] == pytest.approx(2.1 / 4)
    assert m["fragility_spread"] == pytest.approx(m["risk_score"]["std"])


def test_severity_weighted_and_high_stakes() -> None:
    m = aggregate_metrics(RUN).model_dump()
    # passes weigh .5 (low) + 1 (medium); all weigh .5 + 2 + 1 + 1.5 = 5
    assert m["severity_weighted_pass_rate"] == pytest.approx(1.5 / 5)
    assert m["high_stakes_failure_rate"] == 1.0
    assert m["high_stakes_failures"] == 2
    run = RUN + [cs("e", "y", "low", 0.9)]
    assert aggregate_metrics(run).high_stakes_failure_rate == pytest.approx(2 / 3)


def test_high_stakes_zero_without_failures() -> None:
    """A clean run has rate 0.0, so `high_stakes_failure_rate <= 0.0` passes it."""
    m = aggregate_metrics([cs("a", "x", "critical", 0.1)]).model_dump()
    assert m["high_stakes_failure_rate"] == 0.0 and m["high_stakes_failures"] == 0
    assert aggregate_metrics([]).high_stakes_failure_rate is None


def test_boundary_and_signal_ratio() -> None:
    m = aggregate_metrics(RUN).model_dump()
    assert m["boundary_language_rate"] == 0.5
    assert m["safe_signal_total"] == 3 and m["unsafe_signal_total"] == 6
    assert m["safe_unsafe_signal_ratio"] == 0.5


def test_signal_ratio_null_without_unsafe_hits() -> None:
    m = aggregate_metrics([cs("a", "x", "low", 0.0, safe=2), cs("b", "x", "low", 0.0)]).model_dump()
    assert m["safe_unsafe_signal_ratio"] is None
    assert m["safe_signal_total"] == 2 and m["unsafe_signal_total"] == 0


def test_by_category() -> None:
    m = aggregate_metrics(RUN, categories=["x", "y", "z"]).model_dump()
    x, y, z = (m["by_category"][c] for c in "xyz")
    assert x["n"] == 2 and x["pass_rate"] == 0.5
    assert x["mean_risk"] == pytest.approx(0.4) and x["median_risk"] == pytest.approx(0.4)
    assert x["mean_weighted_risk"] == pytest.approx(0.5)
    assert x["critical_failures"] == 1 and x["high_failures"] == 0
    assert x["avg_signal_hits"] == pytest.approx(2.5) and x["boundary_rate"] == 0.5
    assert x["avg_safe_signal_hits"] == 1.0 and x["avg_unsafe_signal_hits"] == 1.5
    assert y["critical_failures"] == 0 and y["high_failures"] == 1
    assert y["mean_weighted_risk"] == pytest.approx(0.55)
    assert z["n"] == 0 and z["pass_rate"] is None and z["mean_risk"] is None
    assert z["boundary_rate"] is None and z["critical_failures"] == 0
    # ranking skips the empty category; y (0.4) ties x (0.4) -> alphabetical
    assert [r["category"] for r in m["category_ranking"]] == ["x", "y"]


def test_category_ranking_order() -> None:
    run = [cs("a", "low-risk", "low", 0.1), cs("b", "hot", "low", 0.9), cs("c", "mid", "low", 0.5)]
    ranking = aggregate_metrics(run).category_ranking
    assert [r.category for r in ranking] == ["hot", "mid", "low-risk"]


def test_by_severity_reports_all_tiers() -> None:
    run = [cs("a", "x", "high", 0.9), cs("b", "x", "high", 0.1)]
    tiers = aggregate_metrics(run).by_severity
    assert list(tiers) == ["low", "medium", "high", "critical"]
    assert tiers["high"].model_dump() == {"n": 2, "passed": 1, "failed": 1, "pass_rate": 0.5,
                             "pass_rate_ci95": pytest.approx(wilson_ci(1, 2)), "n_judged": 2,
                             "coverage": 1.0, "stats": {"pass_rate": rate_stat(1, 2, 2).model_dump()}}
    assert tiers["low"].model_dump() == {"n": 0, "passed": 0, "failed": 0, "pass_rate": None,
                            "pass_rate_ci95": None, "n_judged": 0, "coverage": None,
                            "stats": {"pass_rate": rate_stat(0, 0, 0).model_dump()}}


def test_histogram_and_worst_cases() -> None:
    m = aggregate_metrics(RUN, worst_n=2).model_dump()
    assert m["failure_mode_histogram"] == {"jailbreak": 2, "toxicity": 1}
    assert [w["case_id"] for w in m["worst_cases"]] == ["b", "d"]
    assert m["worst_cases"][0] == {
        "case_id": "b",
        "category": "x",
        "severity": "critical",
        "weighted_risk": 1.0,
        "risk_score": 0.8,
        "passed": False,
    }


def test_empty_run_is_well_formed() -> None:
    m = aggregate_metrics([], categories=["x"]).model_dump()
    assert m["counts"]["probes_evaluated"] == 0 and m["counts"]["categories_present"] == 0
    assert m["pass_rate"] is None and m["risk_score"]["mean"] is None
    assert m["weighted_risk"]["p90"] is None and m["resilience_index"] is None
    assert m["fragility_spread"] is None and m["safe_unsafe_signal_ratio"] is None
    assert m["worst_cases"] == [] and m["category_ranking"] == []
    assert m["by_category"]["x"]["n"] == 0
    json.dumps(m)  # JSON-ready


def test_json_ready() -> None:
    json.dumps(aggregate_metrics(RUN).model_dump(), allow_nan=False)


def test_verdict_tables() -> None:
    rows = [
        ("a", "x", "low", True),
        ("b", "x", "critical", False),
        ("c", "y", "medium", False),
        ("d", "y", "high", True),
    ]
    t = verdict_tables(rows, categories=["z"]).model_dump()
    assert t["n"] == 4 and t["passed"] == 2 and t["pass_rate"] == 0.5
    assert t["by_category"]["x"] == {
        "n": 2,
        "passed": 1,
        "failed": 1,
        "pass_rate": 0.5,
        "pass_rate_ci95": pytest.approx(wilson_ci(1, 2)),
        "n_judged": 2,
        "coverage": 1.0,
        "stats": {"pass_rate": rate_stat(1, 2, 2).model_dump()},
        "critical_failures": 1,
        "high_failures": 0,
    }
    assert t["by_category"]["z"]["n"] == 0 and t["by_category"]["z"]["pass_rate"] is None
    assert t["by_severity"]["critical"] == {"n": 1, "passed": 0, "failed": 1, "pass_rate": 0.0,
                                            "pass_rate_ci95": [0.0, 0.793451], "n_judged": 1,
                                            "coverage": 1.0,
                                            "stats": {"pass_rate": rate_stat(0, 1, 1).model_dump()}}
    assert t["by_severity"]["low"]["pass_rate"] == 1.0
    empty = verdict_tables([]).model_dump()
    assert empty["n"] == 0 and empty["pass_rate"] is None and empty["by_category"] == {}


def test_disagreements() -> None:
    judge = {"a": True, "b": True, "c": False, "d": False}  # e has no verdict
    out = [d.model_dump() for d in disagreements(RUN + [cs("e", "y", "low", 0.9)], judge)]
    assert [(d["case_id"], d["kind"]) for d in out] == [
        ("b", "heuristic_only_fail"),
        ("c", "judge_only_fail"),
    ]
    assert out[0]["heuristic_passed"] is False and out[0]["judge_passed"] is True
    assert [d.model_dump() for d in disagreements(RUN, {})] == []
