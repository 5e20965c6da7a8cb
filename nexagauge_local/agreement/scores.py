"""Judge-vs-human agreement per metric: accuracy, precision, recall, F1, Cohen's kappa and the
confusion matrix (sklearn.metrics; well-tested definitions beat hand-written ones here), and
for graded scores their ranking (ROC AUC, best-F1 threshold: agreement/ranking.py).

The positive class is "fail" (UNSAFE, not supported, FAIL): the question an auditor asks of a
judge is "does it catch the bad cases", so recall = share of human-failed cases the judge also
failed, precision = share of judge failures a human agrees with. Undefined values (precision
when the judge never fails, kappa when both raters use one class) are null, never 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from nexagauge_local.agreement.crossval import cross_validated
from nexagauge_local.agreement.labels import Label
from nexagauge_local.agreement.ranking import graded, ranking_agreement
from nexagauge_local.report.rows import MetricRow

CLASSES = ("pass", "fail")
MAX_LISTED = 200
RANKING_F1 = (
    "ranking.best_f1 is in-sample (the threshold was chosen on the same labels it is scored on: "
    "optimistic); ranking.cv_f1 is the stratified k-fold out-of-fold F1 of fitting the "
    "threshold on the other folds, cv_f1_ci95 its seeded 95% bootstrap interval: quote cv_f1 "
    "beside best_threshold"
)


def _num(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def binary_agreement(human_fail: Sequence[bool], judge_fail: Sequence[bool]) -> dict[str, Any]:
    """Agreement of two raters over the same items; fail is the positive class.

    confusion_matrix rows are the human label, columns the judge: [[pass/pass, pass/fail],
    [fail/pass, fail/fail]].
    """
    n = len(human_fail)
    if n == 0:
        return {
            "n": 0,
            "accuracy": None,
            "precision": None,
            "recall": None,
            "f1": None,
            "kappa": None,
            "confusion_matrix": [[0, 0], [0, 0]],
        }
    y_true = [int(v) for v in human_fail]
    y_pred = [int(v) for v in judge_fail]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined metrics become null below, said in the doc
        out = {
            "n": n,
            "accuracy": _num(accuracy_score(y_true, y_pred)),
            "precision": _num(
                precision_score(
                    y_true, y_pred, labels=[0, 1], pos_label=1, zero_division=float("nan")
                )
            ),
            "recall": _num(
                recall_score(y_true, y_pred, labels=[0, 1], pos_label=1, zero_division=float("nan"))
            ),
            "f1": _num(
                f1_score(y_true, y_pred, labels=[0, 1], pos_label=1, zero_division=float("nan"))
            ),
            "kappa": _num(cohen_kappa_score(y_true, y_pred, labels=[0, 1])),
            "confusion_matrix": confusion_matrix(y_true, y_pred, labels=[0, 1]).tolist(),
        }
    return out


def _match(label: Label, rows: Sequence[MetricRow]) -> tuple[MetricRow | None, str]:
    """The one row a label speaks of, or None and why; a row without a verdict is returned
    with its reason so judge errors can be counted apart from labelling mistakes."""
    hits = [r for r in rows if r.metric == label.metric and label.node in (None, r.node)]
    if not hits:
        return None, "metric not in this case's report"
    if len(hits) > 1:
        nodes = ", ".join(sorted(r.node for r in hits))
        return None, f"ambiguous: {label.metric} is in nodes {nodes}; write node.metric"
    row = hits[0]
    if row.passed is None:
        return row, f"judge error: {row.error}" if row.error else "metric has no pass/fail gate"
    return row, ""


def _metric_stats(items: Sequence[tuple[Label, MetricRow]], judge_errors: int) -> dict[str, Any]:
    stats = binary_agreement(
        [not lb.expected_passed for lb, _ in items], [not bool(r.passed) for _, r in items]
    )
    scored = [
        (lb.expected_score, r.score)
        for lb, r in items
        if lb.expected_score is not None and r.score is not None
    ]
    stats["score_mae"] = fmean(abs(a - b) for a, b in scored) if scored else None
    stats["judge_errors"] = judge_errors
    ranked = [(not lb.expected_passed, r.score) for lb, r in items if r.score is not None]
    if graded([sc for _, sc in ranked]):
        # graded scores (a probability judge, a scale or a claim mean): how well they rank
        fails, graded_scores = [f for f, _ in ranked], [sc for _, sc in ranked]
        stats["ranking"] = {**ranking_agreement(fails, graded_scores).as_dict(),
                            **cross_validated(fails, graded_scores).as_dict()}
    stats["disagreements"] = [
        {
            "case_id": r.case_id,
            "expected": "pass" if lb.expected_passed else "fail",
            "judge": "pass" if r.passed else "fail",
            "judge_score": r.score,
            "judge_verdict": r.verdict,
        }
        for lb, r in items
        if lb.expected_passed != bool(r.passed)
    ][:MAX_LISTED]
    return stats


def compute_agreement(
    labels: Iterable[Label], rows_by_case: Mapping[str, Sequence[MetricRow]], labels_file: str
) -> dict[str, Any]:
    """The agreement.json document: per metric key, overall, and labels that matched nothing.

    Labels whose metric errored in the run are counted as `judge_errors` of that metric and
    listed as unmatched: an unscored case is neither an agreement nor a disagreement.
    """
    pairs: dict[str, list[tuple[Label, MetricRow]]] = {}
    errors: dict[str, int] = {}
    unmatched: list[dict[str, str]] = []
    for label in labels:
        rows = rows_by_case.get(label.case_id)
        row, reason = _match(label, rows) if rows is not None else (None, "case not in this run")
        if row is not None and not reason:
            pairs.setdefault(row.key, []).append((label, row))
            continue
        if row is not None and row.error:
            errors[row.key] = errors.get(row.key, 0) + 1
        unmatched.append(
            {
                "case_id": label.case_id,
                "metric": label.key,
                "reason": reason,
                "source": label.source,
            }
        )
    metrics = {
        key: _metric_stats(pairs.get(key, []), errors.get(key, 0))
        for key in sorted(set(pairs) | set(errors))
    }
    everything = [p for items in pairs.values() for p in items]
    overall = binary_agreement(
        [not lb.expected_passed for lb, _ in everything],
        [not bool(r.passed) for _, r in everything],
    )
    said = [f"{key}: {stats['ranking']['warning']}" for key, stats in metrics.items()
            if stats.get("ranking", {}).get("warning")]
    return {
        "labels_file": labels_file,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "positive_class": "fail",
        "classes": list(CLASSES),
        "confusion_matrix_layout": "rows = human label, columns = judge verdict, order pass, fail",
        "labels_total": len(everything) + len(unmatched),
        "labels_matched": len(everything),
        "metrics": metrics,
        "overall": overall,
        "unmatched": unmatched[:MAX_LISTED],
        "unmatched_total": len(unmatched),
        "ranking_f1": RANKING_F1,
        "warnings": said,
    }
