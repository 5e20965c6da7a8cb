"""The F1 a fitted threshold can be expected to reach on cases it was not fitted on.

The best-F1 threshold (ranking.py) is chosen on the labels and scored on the same labels, so
its F1 is in-sample: the best of many cuts, optimistic by construction, most of all on a
small set. Stratified k-fold cross-validation (scikit-learn's StratifiedKFold, seeded) fits
the threshold on k-1 folds and applies it to the held-out fold; the F1 of those out-of-fold
verdicts, over every label, is the estimate to quote beside the threshold fitted on all
labels. Its 95% interval is a seeded percentile bootstrap (scipy.stats.bootstrap) over the
out-of-fold (label, verdict) pairs: it says how much the figure would move with other labels
of the same kind, not how the threshold itself varies (`fold_thresholds` shows that).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import bootstrap
from sklearn.model_selection import StratifiedKFold

from nexagauge_local.agreement.ranking import PASS_THRESHOLD, best_f1_threshold

FOLDS = 5
SEED = 0
RESAMPLES = 1000
MIN_LABELS = 50  # below this many labels a fitted threshold is a rough guide only
MIN_MINORITY = 10  # nor with fewer than this many of the rarer class (pass or fail)


@dataclass(frozen=True)
class CrossValidated:
    """Out-of-fold F1 of the fitted threshold (fail = positive class), with its interval."""

    folds: int | None  # None: too few of a class to cross-validate at all
    f1: float | None
    f1_ci95: list[float] | None
    fold_thresholds: list[float]
    seed: int
    resamples: int
    warning: str | None

    def as_dict(self) -> dict[str, Any]:
        return {f"cv_{k}" if k != "warning" else k: v for k, v in asdict(self).items()}


def _f1(y: NDArray[np.float64], pred: NDArray[np.float64], axis: int = -1) -> Any:
    """F1 of fail predictions along `axis`, 0 where there is nothing to find or predict.
    Written with numpy (not sklearn's f1_score) so that scipy's bootstrap evaluates every
    resample in one vectorised call instead of a thousand Python calls."""
    tp = np.sum(y * pred, axis=axis)
    wrong = np.sum(np.abs(y - pred), axis=axis)  # false positives + false negatives
    denom = 2 * tp + wrong
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def small_set_warning(n: int, n_fail: int) -> str | None:
    """The line said when the labels are too few for a fitted threshold to be trusted."""
    minority = min(n_fail, n - n_fail)
    if n >= MIN_LABELS and minority >= MIN_MINORITY:
        return None
    return (f"{n} labels ({n_fail} fail, {n - n_fail} pass): fewer than {MIN_LABELS} labels or "
            f"fewer than {MIN_MINORITY} of the rarer class, so the fitted threshold is a rough "
            "guide; quote cv_f1 with its interval, and label more cases before relying on it")


def cross_validated(
    human_fail: Sequence[bool], scores: Sequence[float], *, folds: int = FOLDS,
    seed: int = SEED, resamples: int = RESAMPLES,
) -> CrossValidated:
    """Stratified k-fold F1 of the best-F1 threshold; k is `folds`, reduced to the size of
    the rarer class when that is smaller (each fold must hold both classes), and no
    cross-validation at all below 2 of either class."""
    y = np.asarray(human_fail, dtype=int)
    s = np.asarray(scores, dtype=float)
    n, n_fail = len(y), int(y.sum())
    warning = small_set_warning(n, n_fail)
    k = min(folds, n_fail, n - n_fail)
    if k < 2:
        return CrossValidated(None, None, None, [], seed, resamples, warning)
    pred = np.zeros(n, dtype=int)
    thresholds: list[float] = []
    for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(s, y):
        fitted = best_f1_threshold(y[train], s[train])
        t = PASS_THRESHOLD if fitted is None else fitted[1]
        thresholds.append(t)
        pred[test] = s[test] < t  # fails below the threshold, as the product's gate
    yf, pf = y.astype(float), pred.astype(float)
    f1 = float(_f1(yf, pf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a degenerate resample distribution: said as None
        res = bootstrap((yf, pf), _f1, paired=True, vectorized=True, n_resamples=resamples,
                        confidence_level=0.95, method="percentile",
                        rng=np.random.default_rng(seed))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    ci = None if np.isnan(low) or np.isnan(high) else [low, high]
    return CrossValidated(k, f1, ci, thresholds, seed, resamples, warning)
