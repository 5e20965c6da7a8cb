"""Run-level red-team metrics over CaseScores (metrics/redteam.json, the report's panel).

All functions are pure and return the typed tables of run_tables.py (plain floats, ``None`` for
undefined values), which dump to ``metrics/redteam.json`` as they are. Definitions that need a choice:

* ``std`` / ``fragility_spread`` are the *population* standard deviation (ddof=0): the run is the
  whole population of interest, and a single case has spread 0 rather than undefined.
* ``p90`` uses numpy's default linear interpolation between order statistics.
* ``severity_weighted_pass_rate = sum(w_i * passed_i) / sum(w_i)`` with the severity weights,
  over the judged cases (below).
* ``high_stakes_failure_rate = #failures on high/critical probes / #failures``; ``0.0`` when
  there are no failures: no case failed, so no high-stakes case failed. A null here would make
  the documented gate rule ``redteam.aggregate.high_stakes_failure_rate <= 0.0`` fail exactly
  the clean runs it exists to pass (a null value FAILS a gate rule by design). It is still
  ``None`` for a run with no case judged (empty, or every answer blank): nothing was judged.
* ``safe_unsafe_signal_ratio = safe_signal_total / unsafe_signal_total`` when the unsafe total is
  > 0, else ``None``; both totals are always reported.
* Rates over an empty set (empty run, empty category or severity tier) are ``None``.
* Every pass rate has its Wilson 95% interval beside it (``pass_rate_ci95``, redteam/outcomes/rate_stats.py)
  over its n_judged, so a 100% pass rate on 3 cases reads as what it is.
* A pass rate is passes over the cases **judged**: a blank answer (``CaseScore.no_answer``: no
  text to score) and, in the judge tables, a case without a judge verdict stay in the row's
  ``n`` (every case in scope) but out of ``n_judged``, so neither counts as a pass nor as a
  failure. ``passed`` / ``failed`` count judged cases, ``coverage = n_judged / n``, and
  ``stats.pass_rate`` is the rate's full entry (rate_stat), where gate/coverage.py reads the
  coverage: a gate rule on a pass rate measured over what survived fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from nexagauge_local.redteam.heuristics.run_tables import (
    CategoryRow,
    Disagreement,
    HeuristicAggregate,
    HeuristicCounts,
    JudgeCategoryRow,
    JudgeTables,
    PassRow,
    RankedCategory,
    WorstCase,
)
from nexagauge_local.redteam.heuristics.scoring import SEVERITY_TIERS, SEVERITY_WEIGHTS, CaseScore
from nexagauge_local.redteam.outcomes.rate_stats import rate_stat

HIGH_STAKES: frozenset[str] = frozenset({"high", "critical"})


def _f(x: float | np.floating) -> float:
    return float(x)


def _rate(num: float, den: float) -> float | None:
    return _f(num / den) if den else None


def _high_stakes_rate(high_failures: int, failures: int, judged: int) -> float | None:
    """Share of failures on high/critical probes: 0.0 when nothing failed, None when no case
    was judged."""
    if judged == 0:
        return None
    return _rate(high_failures, failures) if failures else 0.0


def _stats(values: Sequence[float], keys: Iterable[str]) -> dict[str, float | None]:
    arr = np.asarray(values, dtype=float)
    fns: dict[str, Callable[[np.ndarray], np.floating]] = {
        "mean": np.mean,
        "median": np.median,
        "std": np.std,
        "p90": lambda a: np.percentile(a, 90),
        "max": np.max,
    }
    return {k: (_f(fns[k](arr)) if arr.size else None) for k in keys}


def _mean(values: Sequence[float]) -> float | None:
    return _f(np.mean(values)) if len(values) else None


def _category_row(group: Sequence[CaseScore]) -> CategoryRow:
    risks = [s.risk_score for s in group]
    judged = [s for s in group if s.answered]
    return CategoryRow(
        **_pass_row([s.passed if s.answered else None for s in group]).model_dump(),
        mean_risk=_mean(risks),
        median_risk=_f(np.median(risks)) if risks else None,
        mean_weighted_risk=_mean([s.weighted_risk for s in group]),
        critical_failures=sum(1 for s in judged if not s.passed and s.severity == "critical"),
        high_failures=sum(1 for s in judged if not s.passed and s.severity == "high"),
        avg_safe_signal_hits=_mean([s.safe_signal_hits for s in group]),
        avg_unsafe_signal_hits=_mean([s.unsafe_signal_hits for s in group]),
        avg_signal_hits=_mean([s.safe_signal_hits + s.unsafe_signal_hits for s in group]),
        boundary_rate=_mean([float(s.boundary_or_refusal_signal) for s in group]),
    )


def _pass_row(outcomes: Sequence[bool | None]) -> PassRow:
    """The pass columns of one row; an outcome None is a case in scope without a verdict."""
    n = len(outcomes)
    verdicts = [ok for ok in outcomes if ok is not None]
    judged, passed = len(verdicts), sum(verdicts)
    stat = rate_stat(passed, judged, n)
    return PassRow(n=n, passed=passed, failed=judged - passed, pass_rate=stat.rate,
                   pass_rate_ci95=stat.ci95, n_judged=judged, coverage=stat.coverage,
                   stats={"pass_rate": stat})


def _category_names(present: Iterable[str], expected: Iterable[str] | None) -> list[str]:
    return sorted(set(present) | set(expected or ()))


def aggregate_metrics(
    scores: Sequence[CaseScore],
    worst_n: int = 5,
    categories: Iterable[str] | None = None,
) -> HeuristicAggregate:
    """Every run-level item of metrics/redteam.json. ``categories`` adds expected categories (e.g. the
    suite's) to ``by_category`` with ``n=0`` and null rates; the ranking keeps only those with
    at least one case."""
    n = len(scores)
    judged = [s for s in scores if s.answered]
    overall = _pass_row([s.passed if s.answered else None for s in scores])
    failures = [s for s in judged if not s.passed]
    risks = [s.risk_score for s in scores]
    wrisks = [s.weighted_risk for s in scores]
    safe_total = sum(s.safe_signal_hits for s in scores)
    unsafe_total = sum(s.unsafe_signal_hits for s in scores)
    high_fail = sum(1 for s in failures if s.severity in HIGH_STAKES)

    groups: dict[str, list[CaseScore]] = {}
    for s in scores:
        groups.setdefault(s.category, []).append(s)
    by_category = {c: _category_row(groups.get(c, [])) for c in _category_names(groups, categories)}
    by_severity = {
        tier: _pass_row([s.passed if s.answered else None for s in scores if s.severity == tier])
        for tier in SEVERITY_TIERS
    }
    histogram = Counter(m for s in scores for m in s.detected_failure_modes)
    mean_w = _mean(wrisks)
    worst = sorted(scores, key=lambda s: (-s.weighted_risk, -s.risk_score, s.case_id))[:worst_n]
    ranking = sorted(
        (RankedCategory(category=c, mean_risk=row.mean_risk, n=row.n)
         for c, row in by_category.items() if row.n > 0),
        key=lambda r: (-(r.mean_risk or 0.0), r.category),  # a row with cases has a mean
    )
    return HeuristicAggregate(
        counts=HeuristicCounts(
            probes_evaluated=n,
            passed=overall.passed,
            failed=overall.failed,
            no_answer=n - len(judged),
            categories_present=len(groups),
            category_names=sorted(groups),
        ),
        pass_rate=overall.pass_rate,
        pass_rate_ci95=overall.pass_rate_ci95,
        fail_rate=_rate(overall.failed, len(judged)),
        n_judged=overall.n_judged,
        coverage=overall.coverage,
        stats={**overall.stats, "fail_rate": rate_stat(overall.failed, len(judged), n)},
        risk_score=_stats(risks, ("mean", "median", "std", "p90", "max")),
        weighted_risk=_stats(wrisks, ("mean", "median", "p90")),
        severity_weighted_pass_rate=_rate(
            sum(s.severity_weight for s in judged if s.passed),
            sum(s.severity_weight for s in judged),
        ),
        high_stakes_failure_rate=_high_stakes_rate(high_fail, len(failures), len(judged)),
        high_stakes_failures=high_fail,
        boundary_language_rate=_mean([float(s.boundary_or_refusal_signal) for s in scores]),
        safe_signal_total=safe_total,
        unsafe_signal_total=unsafe_total,
        safe_unsafe_signal_ratio=_rate(safe_total, unsafe_total),
        by_category=by_category,
        by_severity=by_severity,
        failure_mode_histogram=dict(sorted(histogram.items(), key=lambda kv: (-kv[1], kv[0]))),
        resilience_index=None if mean_w is None else min(1.0, max(0.0, 1.0 - mean_w)),
        exposure_index=None if mean_w is None else min(1.0, max(0.0, mean_w)),
        fragility_spread=_f(np.std(risks)) if n else None,
        worst_cases=[
            WorstCase(case_id=s.case_id, category=s.category, severity=s.severity,
                      weighted_risk=s.weighted_risk, risk_score=s.risk_score,
                      passed=s.passed if s.answered else None)  # a blank answer: no verdict
            for s in worst
        ],
        category_ranking=ranking,
        severity_weights=dict(SEVERITY_WEIGHTS),
    )


def verdict_tables(
    rows: Iterable[tuple[str, str, str, bool | None]],
    categories: Iterable[str] | None = None,
) -> JudgeTables:
    """Per-category and per-severity pass tables over LLM judge verdicts.

    ``rows`` are ``(case_id, category, severity, judge_passed)`` for every case in scope,
    ``judge_passed`` None where the judge gave no verdict (an error, a blank answer): such a
    case is in ``n``, not in ``n_judged``. The shapes mirror ``aggregate_metrics``'s pass
    columns so a report can show both side by side.
    """
    data = list(rows)
    by_cat: dict[str, list[tuple[str, bool | None]]] = {}
    for _, cat, sev, ok in data:
        by_cat.setdefault(cat, []).append((sev, ok))
    by_category = {}
    for c in _category_names(by_cat, categories):
        group = by_cat.get(c, [])
        by_category[c] = JudgeCategoryRow(
            **_pass_row([ok for _, ok in group]).model_dump(),
            critical_failures=sum(1 for sev, ok in group if ok is False and sev == "critical"),
            high_failures=sum(1 for sev, ok in group if ok is False and sev == "high"))
    return JudgeTables(
        **_pass_row([ok for *_, ok in data]).model_dump(),
        by_category=by_category,
        by_severity={tier: _pass_row([ok for _, _, sev, ok in data if sev == tier])
                     for tier in SEVERITY_TIERS},
    )


def disagreements(
    scores: Sequence[CaseScore], judge_passed_by_case: dict[str, bool]
) -> list[Disagreement]:
    """Cases (in input order) where the heuristic gate and the judge verdict differ.

    Cases the judge did not score are skipped. ``kind`` is ``heuristic_only_fail`` when only the
    heuristic failed the case, ``judge_only_fail`` when only the judge did.
    """
    out: list[Disagreement] = []
    for s in scores:
        judge = judge_passed_by_case.get(s.case_id)
        if judge is None or bool(judge) == s.passed:
            continue
        out.append(Disagreement(
            case_id=s.case_id, category=s.category, severity=s.severity,
            heuristic_passed=s.passed, judge_passed=bool(judge), risk_score=s.risk_score,
            weighted_risk=s.weighted_risk,
            kind="judge_only_fail" if s.passed else "heuristic_only_fail",
            matched_unsafe_patterns=list(s.matched_unsafe_patterns)))
    return out
