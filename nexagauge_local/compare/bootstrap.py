"""Paired bootstrap confidence interval for a difference of means (run B minus run A).

Paired, because the same cases were scored twice: resampling cases (not the two runs
independently) removes the case-to-case variance that both runs share, which is most of it.
scipy.stats.bootstrap does the resampling (BCa by default); this module only handles the
degenerate inputs scipy refuses or answers with NaN, and bounds memory on large runs.
scipy.stats is imported where an interval is resampled: `gate` imports this module for its
baseline rule, and a gate without a baseline paid ~1.8 s for an import it never used.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 2000
CONFIDENCE = 0.95
BCA_MAX_PAIRS = 5000
"""BCa's jackknife costs O(pairs^2); above this many pairs the mean's bootstrap distribution is
close enough to symmetric that the percentile interval agrees with BCa to about 1e-4 (measured
at 5,000 and 20,000 pairs) at a third of the cost."""
_SAME = 1e-12  # pair differences this close are one value (0.3 - 0.1 vs 0.6 - 0.4)
_BATCH_CELLS = 4_000_000  # resamples x cases held at once (~32 MB of float64)


@dataclass(frozen=True)
class DeltaCI:
    delta: float
    low: float
    high: float


def _mean_diff(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(b - a, axis=axis)


def paired_delta_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> DeltaCI | None:
    """mean(b - a) with a seeded paired bootstrap CI; None when there is no pair. The same
    seed and inputs give the same interval.

    With fewer than two pairs, or when every pair moved by the same amount, there is no spread
    to resample: the interval is the point itself (scipy would warn and return NaN).
    """
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.shape != xb.shape:
        raise ValueError(f"paired samples differ in length: {xa.size} vs {xb.size}")
    if xa.size == 0:
        return None
    diffs = xb - xa
    delta = float(np.mean(diffs))
    if xa.size < 2 or np.ptp(diffs) <= _SAME:
        return DeltaCI(delta, delta, delta)
    method = "BCa" if xa.size <= BCA_MAX_PAIRS else "percentile"
    low, high = _interval(xa, xb, seed, n_resamples, confidence, method)
    if not (np.isfinite(low) and np.isfinite(high)):
        # BCa needs a jackknife with spread; tiny or lopsided samples can leave it undefined
        low, high = _interval(xa, xb, seed, n_resamples, confidence, "percentile")
    return DeltaCI(delta, low, high)


def _interval(
    xa: np.ndarray, xb: np.ndarray, seed: int, n_resamples: int, confidence: float, method: str
) -> tuple[float, float]:
    from scipy.stats import bootstrap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = bootstrap(
            (xa, xb),
            _mean_diff,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            batch=max(1, _BATCH_CELLS // xa.size),
            confidence_level=confidence,
            method=method,
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)
