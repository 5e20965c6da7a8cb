"""Reference alignment: output units against reference units by cosine, as nexa-gauge counts it.

Users who move from nexa-gauge need its numbers, so both of its rules are here:

- many-to-one (nexa-gauge with `atomic_chunks` false, our default): an output unit is supported
  when its best reference unit clears the threshold, a reference unit is covered when any output
  unit clears it. Several output chunks may lean on one reference chunk: coarse chunks overlap.
- one-to-one (nexa-gauge with `atomic_chunks` true): each unit is used at most once, and the
  pairs are a maximum-cardinality matching of the pairs that clear the threshold (nexa-gauge's
  augmenting-path search); among those we keep the one with the most total similarity, so the
  reported pairs are the strongest. Atomic claims should not be counted twice.

Global similarity is nexa-gauge's: the cosine of the two whole texts' embeddings (the encoder
cuts each at its 256 word pieces), clamped to [0, 1]; the caller embeds the texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Rule = Literal["many_to_one", "one_to_one"]


@dataclass
class Alignment:
    precision: float
    recall: float
    f1: float
    global_cosine: float
    matching: Rule = "many_to_one"
    matched: list[dict] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # reference units with no match
    extra: list[str] = field(default_factory=list)  # output units with no match


def text_cosine(out_vec: np.ndarray, ref_vec: np.ndarray) -> float:
    """nexa-gauge's global similarity from two whole-text embeddings, clamped to [0, 1]."""
    denom = float(np.linalg.norm(out_vec) * np.linalg.norm(ref_vec))
    return max(0.0, min(1.0, float(out_vec @ ref_vec) / denom)) if denom else 0.0


def _many_to_one(sim: np.ndarray, threshold: float) -> tuple[list[tuple[int, int, float]], set[int]]:
    """(pairs of each output row with its best column where that clears the threshold, the
    columns some row clears the threshold against)."""
    best = sim.argmax(axis=1)
    pairs = [(r, int(c), float(sim[r, c])) for r, c in enumerate(best) if sim[r, c] >= threshold]
    covered = {int(c) for c in np.flatnonzero(sim.max(axis=0) >= threshold)}
    return pairs, covered


def _one_to_one(sim: np.ndarray, threshold: float) -> tuple[list[tuple[int, int, float]], set[int]]:
    """Maximum-cardinality matching on the pairs that clear the threshold, strongest among ties:
    each clearing pair weighs `bonus + similarity` with a bonus above any sum of similarities, so
    one more pair always beats more similarity."""
    from scipy.optimize import linear_sum_assignment  # 0.4 s to import: only this rule needs it

    ok = sim >= threshold
    bonus = float(min(sim.shape)) + 1.0
    rows, cols = linear_sum_assignment(np.where(ok, bonus + sim, 0.0), maximize=True)
    pairs = [(int(r), int(c), float(sim[r, c])) for r, c in zip(rows, cols, strict=True) if ok[r, c]]
    return pairs, {c for _, c, _ in pairs}


def align(
    out_units: list[str], out_vecs: np.ndarray,
    ref_units: list[str], ref_vecs: np.ndarray,
    threshold: float,
    *,
    global_cosine: float,
    rule: Rule = "many_to_one",
) -> Alignment:
    """Precision = supported output units / output units, recall = covered reference units /
    reference units (rows unit-norm). `global_cosine` is `text_cosine` of the whole texts."""
    if not out_units or not ref_units:
        return Alignment(0.0, 0.0, 0.0, global_cosine, rule, [], list(ref_units), list(out_units))
    sim = out_vecs @ ref_vecs.T
    pairs, covered = (_many_to_one if rule == "many_to_one" else _one_to_one)(sim, threshold)
    precision = len(pairs) / len(out_units)
    recall = len(covered) / len(ref_units)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    hit_out = {r for r, _, _ in pairs}
    return Alignment(
        precision=precision,
        recall=recall,
        f1=f1,
        global_cosine=global_cosine,
        matching=rule,
        matched=[
            {"output_unit": out_units[r], "reference_unit": ref_units[c], "similarity": round(s, 4)}
            for r, c, s in pairs
        ],
        missed=[u for i, u in enumerate(ref_units) if i not in covered],
        extra=[u for i, u in enumerate(out_units) if i not in hit_out],
    )
