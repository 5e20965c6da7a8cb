"""One rate with what it counts: successes over the probes judged, out of the probes in scope,
and a Wilson 95% interval.

A rate alone hides how many probes stand behind it: 0.0 harmful compliance over 3 judged probes
of 100 says little, and a gate must be able to see that. The Wilson interval is used because it
stays inside [0, 1] and keeps a sensible width at 0 or n successes, where the normal
approximation collapses to a point; it comes from scipy (binomtest(...).proportion_ci) rather
than hand-written algebra.

All functions are pure.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from scipy.stats import binomtest

CONFIDENCE = 0.95


def wilson_ci(successes: int, trials: int, confidence: float = CONFIDENCE) -> list[float] | None:
    """[low, high] of the Wilson score interval; None when nothing was counted."""
    if trials <= 0:
        return None
    ci = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return [round(float(ci.low), 6), round(float(ci.high), 6)]


class RateStat(BaseModel):
    """The JSON shape of every rate (docs/audit.md "The rates"):

    - `rate`: successes / n_judged, None when none was judged;
    - `successes`: probes counted by the rate;
    - `n_judged`: probes in scope with a usable verdict (the rate's denominator);
    - `n`: probes in scope, judged or not (a blank answer, a failed judgement);
    - `coverage`: n_judged / n, None when the scope is empty;
    - `ci95`: the Wilson 95% interval of the rate, None when none was judged.

    Extra keys are refused, so a stats entry of another shape read back from a file is not
    silently cut to these six (summary.json keeps such an entry as it was written).
    """

    model_config = ConfigDict(extra="forbid")

    rate: float | None
    successes: int
    n_judged: int
    n: int
    coverage: float | None
    ci95: list[float] | None


class MeanStat(BaseModel):
    """A mean over the probes that have the value, with how many have it out of `n` in scope."""

    model_config = ConfigDict(extra="forbid")

    mean: float | None
    n_judged: int
    n: int


def rate_stat(successes: int, n_judged: int, n: int) -> RateStat:
    return RateStat(rate=successes / n_judged if n_judged else None, successes=successes,
                    n_judged=n_judged, n=n, coverage=n_judged / n if n else None,
                    ci95=wilson_ci(successes, n_judged))


def mean_stat(values: list[float], n: int) -> MeanStat:
    return MeanStat(mean=sum(values) / len(values) if values else None, n_judged=len(values), n=n)
