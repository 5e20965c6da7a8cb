"""refiner: drop near-duplicate chunks (embedding cosine); an MMR top-k of the reference.

All chunks of the shard are embedded in one encode call; the kept chunks' embeddings travel
with them so refalign does not embed twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.refalign_block import RefalignBlock
from nexagauge_local.nodes.spec import NodeSpec

DUPLICATE_COSINE = 0.95
MMR_LAMBDA = 0.7


@dataclass(frozen=True)
class Refined:
    texts: list[str]
    vectors: np.ndarray  # (len(texts), dim), unit rows


def dedupe(vectors: np.ndarray, threshold: float = DUPLICATE_COSINE) -> list[int]:
    """Indices to keep: a chunk is dropped when it is within `threshold` cosine of a kept one."""
    kept: list[int] = []
    for i in range(len(vectors)):
        if not kept or float(np.max(vectors[kept] @ vectors[i])) < threshold:
            kept.append(i)
    return kept


def mmr(vectors: np.ndarray, k: int, lam: float = MMR_LAMBDA) -> list[int]:
    """Maximal marginal relevance against the text's centroid: k representative, diverse units.

    Written by hand: it is ten lines, and no maintained library offers MMR over given vectors.
    """
    if k >= len(vectors):
        return list(range(len(vectors)))
    centroid = vectors.mean(axis=0)
    relevance = vectors @ centroid
    chosen: list[int] = [int(np.argmax(relevance))]
    while len(chosen) < k:
        redundancy = np.max(vectors @ vectors[chosen].T, axis=1)
        score = lam * relevance - (1 - lam) * redundancy
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return sorted(chosen)


def refine(texts: list[str], vectors: np.ndarray, top_k: int | None) -> Refined:
    keep = dedupe(vectors)
    if top_k is not None:
        keep = [keep[i] for i in mmr(vectors[keep], top_k)]
    return Refined([texts[i] for i in keep], vectors[keep])


SPEC = NodeSpec("refiner", ("chunk",), ("output",), "utility",
                "drop near-duplicate chunks by embedding cosine; reference MMR top-k (refine_top_k)",
                order=2, impl=f"{__name__}:RefinerNode")


class RefinerNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        texts: list[str] = []
        for state in states:
            chunks = state.artifacts["chunk"]
            texts.extend(chunks["output"])
            texts.extend(chunks["reference"])
        vectors = ctx.embedder.encode(texts)
        pos = 0
        for state in states:
            chunks = state.artifacts["chunk"]
            # refalign.refine_top_k caps the REFERENCE side only, as nexa-gauge's reference
            # refiner does; the output keeps every distinct chunk.
            ref_k = state.case.settings("refalign", RefalignBlock).refine_top_k
            top_k = {"output": None, "reference": ref_k}
            out: dict[str, Refined] = {}
            for side in ("output", "reference"):
                n = len(chunks[side])
                out[side] = refine(chunks[side], vectors[pos : pos + n], top_k[side])
                pos += n
            state.artifacts[self.name] = out
            ctx.advance(self.name, 1)
