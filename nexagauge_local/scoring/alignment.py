"""Reference alignment: one-to-one matching of output units to reference units by cosine.

scipy's linear_sum_assignment gives the matching that maximises total similarity, so a single
strong reference sentence cannot be claimed by two output sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment


@dataclass
class Alignment:
    precision: float
    recall: float
    f1: float
    global_cosine: float
    matched: list[dict] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # reference units with no match
    extra: list[str] = field(default_factory=list)  # output units with no match


def align(
    out_units: list[str], out_vecs: np.ndarray,
    ref_units: list[str], ref_vecs: np.ndarray,
    threshold: float,
) -> Alignment:
    """Precision = matched / output units, recall = matched / reference units (rows unit-norm).

    global_cosine is the cosine of the two texts' mean unit vectors: it covers long texts that a
    256-token encoder would truncate if embedded whole.
    """
    if not out_units or not ref_units:
        return Alignment(0.0, 0.0, 0.0, 0.0, [], list(ref_units), list(out_units))
    sim = out_vecs @ ref_vecs.T
    rows, cols = linear_sum_assignment(-sim)
    pairs = [(int(r), int(c), float(sim[r, c])) for r, c in zip(rows, cols, strict=True)]
    good = [(r, c, s) for r, c, s in pairs if s >= threshold]
    precision = len(good) / len(out_units)
    recall = len(good) / len(ref_units)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    a, b = out_vecs.mean(axis=0), ref_vecs.mean(axis=0)
    denom = float(np.linalg.norm(a) * np.linalg.norm(b))
    cosine = float(a @ b) / denom if denom else 0.0
    hit_out = {r for r, _, _ in good}
    hit_ref = {c for _, c, _ in good}
    return Alignment(
        precision=precision,
        recall=recall,
        f1=f1,
        global_cosine=max(-1.0, min(1.0, cosine)),
        matched=[
            {"output_unit": out_units[r], "reference_unit": ref_units[c], "similarity": round(s, 4)}
            for r, c, s in good
        ],
        missed=[u for i, u in enumerate(ref_units) if i not in hit_ref],
        extra=[u for i, u in enumerate(out_units) if i not in hit_out],
    )
