"""refiner: drop near-duplicate chunks (embedding cosine); an MMR top-k of the reference.

All chunks of the shard are embedded in one encode call; the kept chunks' embeddings travel
with them so refalign does not embed twice.

The work is done at the first read, not when the node runs: only claims, atomic_units and
refalign with `--refalign-units sentences` read the refined chunks. refalign's default units
(nexa-gauge's) never do, and embedding them eagerly spent about half of a 2,000-record
refalign run's model time on vectors nobody looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nexagauge_local.embed import Embedder
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


SIDES = ("output", "reference")


class _ShardRefinement:
    """The refined chunks of every case of one shard, computed (one encode call) at the first
    read of any case's, so a shard nobody reads costs nothing and one that is read is still
    embedded in one batch."""

    def __init__(self, states: Sequence[CaseState], embedder: Callable[[], Embedder]) -> None:
        self._states = list(states)
        self._embedder = embedder
        self._refined: list[dict[str, Refined]] | None = None

    def of(self, index: int) -> dict[str, Refined]:
        if self._refined is None:
            self._refined = self._compute()
            self._states = []  # the chunks were read; the states need not be kept alive here
        return self._refined[index]

    def _compute(self) -> list[dict[str, Refined]]:
        texts: list[str] = []
        for state in self._states:
            chunks = state.artifacts["chunk"]
            for side in SIDES:
                texts.extend(chunks[side])
        vectors = self._embedder().encode(texts)
        pos = 0
        out: list[dict[str, Refined]] = []
        for state in self._states:
            chunks = state.artifacts["chunk"]
            # refalign.refine_top_k caps the REFERENCE side only, as nexa-gauge's reference
            # refiner does; the output keeps every distinct chunk.
            ref_k = state.case.settings("refalign", RefalignBlock).refine_top_k
            top_k = {"output": None, "reference": ref_k}
            sides: dict[str, Refined] = {}
            for side in SIDES:
                n = len(chunks[side])
                sides[side] = refine(chunks[side], vectors[pos : pos + n], top_k[side])
                pos += n
            out.append(sides)
        return out


class RefinedSides(Mapping[str, Refined]):
    """One case's refiner artifact: side ("output", "reference") -> Refined, computed with the
    rest of its shard when first read."""

    def __init__(self, shard: _ShardRefinement, index: int) -> None:
        self._shard = shard
        self._index = index

    def __getitem__(self, side: str) -> Refined:
        return self._shard.of(self._index)[side]

    def __iter__(self) -> Iterator[str]:
        return iter(SIDES)

    def __len__(self) -> int:
        return len(SIDES)


class RefinerNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        shard = _ShardRefinement(states, lambda: ctx.embedder)
        for i, state in enumerate(states):
            state.artifacts[self.name] = RefinedSides(shard, i)
            ctx.advance(self.name, 1)
