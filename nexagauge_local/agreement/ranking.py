"""How well a judge's graded scores rank human-failed cases below human-passed ones.

For a probability judge (a guard family's 1 - P(unsafe), a logprob-weighted score) a single
verdict at the product's 0.6 threshold hides how good the scores are: ROC AUC says how often a
failed case scores below a passed one whatever the threshold, and the threshold with the best
F1 says where this judge should cut on this labelled set (its F1 there is in-sample, hence
optimistic; crossval.py estimates the F1 on labels it was not fitted on). Fail is the positive class, as in the
rest of agreement.json; scikit-learn's definitions rather than hand-written ones.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.metrics import f1_score, precision_recall_curve, roc_auc_score

PASS_THRESHOLD = 0.6  # the product's gate: a metric passes when score >= 0.6


@dataclass(frozen=True)
class RankingAgreement:
    n: int
    roc_auc: float | None  # None when the labels hold one class only
    best_threshold: float | None  # passes when score >= this; None when undefined
    best_f1: float | None  # in-sample: the threshold was chosen on these same labels
    f1_at_threshold: float | None  # F1 of the product's own gate (score >= 0.6 passes)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["threshold"] = PASS_THRESHOLD
        return out


def graded(scores: Sequence[float]) -> bool:
    """Whether scores carry more than a verdict (some lie strictly between 0 and 1)."""
    return any(0.0 < s < 1.0 for s in scores)


def best_f1_threshold(
    y: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> tuple[float, float] | None:
    """(F1, threshold) of the pass threshold with the best F1 on these labels (fail = 1), or
    None when no threshold separates anything (no fails, or every cut fails every case).

    A low score means fail, so the fail score is -score; a cut of precision_recall_curve at
    -s fails every case with score <= s, which in the product's rule (passes when score >= t)
    is t = the next distinct score above s. The cut that fails every case has no such t and is
    left out; ties in F1 go to the threshold closest to 0.6.
    """
    if y.sum() == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, cuts = precision_recall_curve(y, -s)
    distinct = np.unique(s)
    best: tuple[float, float] | None = None  # (f1, threshold)
    for p, r, cut in zip(precision[:-1], recall[:-1], cuts, strict=True):
        above = distinct[distinct > -cut]
        if above.size == 0:
            continue
        f1 = 0.0 if p + r == 0 else float(2 * p * r / (p + r))
        t = float(above[0])
        if (best is None or f1 > best[0] + 1e-12
                or (math.isclose(f1, best[0]) and abs(t - PASS_THRESHOLD)
                    < abs(best[1] - PASS_THRESHOLD))):
            best = (f1, t)
    return best


def ranking_agreement(human_fail: Sequence[bool], scores: Sequence[float]) -> RankingAgreement:
    """ROC AUC of the judge's scores against human fail labels, the pass threshold with the
    best F1 (in-sample: fitted and scored on these labels; crossval.py says what it reaches
    on held-out labels), and the F1 at the product's threshold."""
    n = len(human_fail)
    if n == 0 or len(scores) != n:
        if len(scores) != n:
            raise ValueError(f"{n} labels but {len(scores)} scores")
        return RankingAgreement(0, None, None, None, None)
    y = np.asarray(human_fail, dtype=int)
    s = np.asarray(scores, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-class sets: undefined values are None below
        auc = float(roc_auc_score(y, -s)) if 0 < y.sum() < n else None
        at_gate = float(f1_score(y, (s < PASS_THRESHOLD).astype(int), zero_division=0.0))
    best = best_f1_threshold(y, s)
    if best is None:
        return RankingAgreement(n, auc, None, None, at_gate)
    return RankingAgreement(n, auc, best[1], best[0], at_gate)
