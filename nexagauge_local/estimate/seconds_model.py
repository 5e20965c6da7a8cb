"""A judge's device-seconds per request as a function of its prompt and output tokens.

Why not one rate per token: the peer sample (21 records) has prompts 30% longer than the bundled
sample the history came from, and one rate over prompt + output tokens predicted its run 20-28%
short. Output tokens cost far more than prompt tokens (a decode step per token against one
prefill pass), and on the hf backend a decode step is shared by the rows of a micro-batch whose
size is a prompt-token budget over the longest prompt: the longer the prompts, the fewer rows
share each step, so an output token's share grows with the prompt. Hence three terms, each
physical and non-negative:

    seconds = a * prompt + b * output + c * prompt * output

fitted by non-negative least squares (scipy's nnls) to the judge's recent answers for a schema
(judge_samples in the cache); which terms matter is the fit's to say. The demo judge in float32
on a 2-core AVX2 host came out as output tokens alone (0.074-0.078 s each), and predicted the
peer run's device-seconds +12% where one rate per token said +36% (scripts/bench_estimate.py).
On vLLM, whose device time is split over a call's requests in proportion to their tokens, the
fit comes out as a ~= b and c ~= 0: the old single rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MIN_SAMPLES = 10  # answers before three coefficients are trusted over one rate


@dataclass(frozen=True)
class SecondsModel:
    per_prompt: float
    per_output: float
    per_prompt_output: float
    n: int

    def predict(self, prompt_tokens: float, output_tokens: float) -> float:
        return (
            self.per_prompt * prompt_tokens
            + self.per_output * output_tokens
            + self.per_prompt_output * prompt_tokens * output_tokens
        )


def fit_seconds(samples: Sequence[tuple[int, int, float]]) -> SecondsModel | None:
    """The model for (prompt tokens, output tokens, device-seconds) samples; None when there are
    fewer than MIN_SAMPLES or they fix no coefficient (all zero)."""
    rows = [(p, o, s) for p, o, s in samples if s > 0 and p >= 0 and o >= 0]
    if len(rows) < MIN_SAMPLES:
        return None
    import numpy as np  # lazy: `estimate` alone needs them, not every CLI start
    from scipy.optimize import nnls

    data = np.asarray(rows, dtype=float)
    p, o, s = data[:, 0], data[:, 1], data[:, 2]
    x = np.stack([p, o, p * o], axis=1)
    scale = x.max(axis=0)
    scale[scale == 0] = 1.0  # a column of zeros (no output ever) stays zero
    coef, _ = nnls(x / scale, s)
    coef = coef / scale
    if not coef.any():
        return None
    return SecondsModel(float(coef[0]), float(coef[1]), float(coef[2]), len(rows))
