"""Atomic claim coverage: one-to-one matching of output units to reference units at a threshold.

Used by refalign when the judge has split both sides into atomic units (refalign.atomic_chunks):
each unit may support at most one unit on the other side, so a claim repeated three times in
the output is counted once. nexa-gauge finds a maximum-cardinality matching among the pairs
that clear the threshold; here scipy's linear_sum_assignment (the Hungarian method, as in
alignment.py) solves the same problem with weights BIG + similarity on threshold-clearing pairs
and 0 elsewhere. BIG exceeds any sum of similarities, so the matching first has the most pairs
(nexa-gauge's count, hence its precision/recall) and among those the highest total similarity.
Plain Hungarian on raw similarity can trade two threshold pairs for one stronger pair plus a
useless one, and report fewer matches than exist.

Kept apart from alignment.py so the chunk-level matching there can change (many-to-one, as in
nexa-gauge's non-atomic mode) without changing what atomic coverage means.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Coverage:
    precision: float  # supported output units / output units
    recall: float  # covered reference units / reference units
    f1: float
    matched: list[dict] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # reference units with no match
    extra: list[str] = field(default_factory=list)  # output units with no match


def claim_coverage(
    out_units: list[str], out_vecs: np.ndarray,
    ref_units: list[str], ref_vecs: np.ndarray,
    threshold: float,
) -> Coverage:
    """One-to-one coverage of unit-norm embeddings; a pair counts when its cosine >= threshold."""
    if not out_units or not ref_units:
        return Coverage(0.0, 0.0, 0.0, [], list(ref_units), list(out_units))
    from scipy.optimize import linear_sum_assignment  # 0.4 s to import: loaded on first use

    sim = out_vecs @ ref_vecs.T
    ok = sim >= threshold
    big = float(min(sim.shape)) + 1.0
    rows, cols = linear_sum_assignment(np.where(ok, big + sim, 0.0), maximize=True)
    good = [(int(r), int(c), float(sim[r, c])) for r, c in zip(rows, cols, strict=True) if ok[r, c]]
    precision = len(good) / len(out_units)
    recall = len(good) / len(ref_units)
    f1 = 0.0 if not good else 2 * precision * recall / (precision + recall)
    hit_out = {r for r, _, _ in good}
    hit_ref = {c for _, c, _ in good}
    return Coverage(
        precision=precision,
        recall=recall,
        f1=f1,
        matched=[
            {"output_unit": out_units[r], "reference_unit": ref_units[c], "similarity": round(s, 4)}
            for r, c, s in sorted(good)
        ],
        missed=[u for i, u in enumerate(ref_units) if i not in hit_ref],
        extra=[u for i, u in enumerate(out_units) if i not in hit_out],
    )
