"""refalign: semantic alignment of the output's units to the reference's (embeddings).

Units are, by default, nexa-gauge's (scoring/ng_units.py: 100-token semchunk chunks, the output
MMR-refined to `--refalign-output-top-k`), so scores match nexa-gauge's on the same records;
`--refalign-units sentences` uses the refiner's sentence groups instead. When the case's
refalign block sets `atomic_chunks`, they are the
atomic factual units the judge extracted (the atomic_units node, an optional parent: it runs
only for those cases, so this node stays deterministic for every other case). Chunk units are
matched many-to-one, as nexa-gauge does with `atomic_chunks` false; atomic units are claim
coverage matched one to one (scoring/coverage.py), as in nexa-gauge. The result says where the
units came from and lists them. An atomic case whose units are missing or partly failed gets a
metric error, never a score on other units.

The metric passes when F1 >= the global pass threshold; matching uses the block's
`similarity_threshold` (default 0.6, nexa-gauge's) on cosine similarity. semantic_similarity
is the cosine of the whole output and reference texts (as nexa-gauge), so it never depends on
the judge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.refalign_block import RefalignBlock
from nexagauge_local.nodes.refiner import Refined
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import MetricResult, NodeCost, NodeReport, passed_for
from nexagauge_local.scoring.alignment import align, text_cosine
from nexagauge_local.scoring.coverage import claim_coverage
from nexagauge_local.scoring.ng_units import chunk_units, mmr_refine

CATEGORY = "reference|semantic"
ATOMIC = "atomic_units"

SPEC = NodeSpec("refalign", ("refiner", ATOMIC), ("output", "reference"), "deterministic",
                "embedding alignment of output units to reference units (with "
                "refalign.atomic_chunks: of the judge's atomic units, one to one)",
                order=10, impl=f"{__name__}:RefalignNode", metric=True,
                reported=True, optional_parents=(ATOMIC,), block_model=RefalignBlock)


def _atomic_units(state: CaseState) -> tuple[Any, str | None]:
    """(the case's AtomicUnits, None) or (None, why there are none usable)."""
    art = state.artifacts.get(ATOMIC)
    if art is None:
        why = state.skipped.get(ATOMIC, "the atomic_units node did not run")
        return None, f"atomic units not extracted: {why}"
    return art, art.error_summary()


class RefalignNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        # Global similarity embeds each whole text, as nexa-gauge does; whitespace runs become
        # one space (the encoder's tokenizer splits on them anyway), so a one-chunk text is
        # the chunk's own string and the embedder's memo serves it. One encode call per shard.
        whole = [" ".join(t.split()) for s in states for t in (s.case.output, s.case.reference or "")]
        vectors = ctx.embedder.encode(whole)
        atomic_vecs = self._embed_atomic(states, ctx)
        ng = ctx.settings.refalign_units == "nexa-gauge"
        units = self._ng_units(states, ctx) if ng else {}
        for i, state in enumerate(states):
            cfg = state.case.settings(SPEC.name, RefalignBlock)
            if ng:
                out, ref = units[id(state)]
            else:
                refined: Mapping[str, Refined] = state.artifacts["refiner"]
                out, ref = refined["output"], refined["reference"]
            blank = not (whole[2 * i] and whole[2 * i + 1])
            cosine_ = 0.0 if blank else text_cosine(vectors[2 * i], vectors[2 * i + 1])
            a = align(out.texts, out.vectors, ref.texts, ref.vectors, cfg.similarity_threshold,
                      global_cosine=cosine_)
            cost = NodeCost()
            if cfg.atomic_chunks:
                metric, cost = self._atomic_metric(state, atomic_vecs.get(id(state)),
                                                   cfg.similarity_threshold)
            else:
                detail = {"passed": passed_for(a.f1),
                          "similarity_threshold": cfg.similarity_threshold,
                          "atomic_chunks": False, "units_from": "chunks",
                          "units": ctx.settings.refalign_units, **asdict(a)}
                metric = MetricResult(name="refalign", category=CATEGORY, score=a.f1,
                                      result=[detail], passed=passed_for(a.f1))
            cosine = MetricResult(
                name="semantic_similarity", category=CATEGORY, score=a.global_cosine,
                result=[{"global_cosine": a.global_cosine}],
            )
            state.artifacts[self.name] = NodeReport(metrics=[metric, cosine], cost=cost)
            ctx.advance(self.name, 1)

    @staticmethod
    def _ng_units(states: Sequence[CaseState], ctx: RunContext) -> dict[int, tuple[Refined, Refined]]:
        """nexa-gauge's units of every case of the shard, embedded in one encode call."""
        sides = [(chunk_units(s.case.output), chunk_units(s.case.reference or "")) for s in states]
        texts = [t for o, r in sides for t in (*o, *r)]
        vectors = ctx.embedder.encode(texts)
        top_k = ctx.settings.refalign_output_top_k or None
        out: dict[int, tuple[Refined, Refined]] = {}
        pos = 0
        for state, (o, r) in zip(states, sides, strict=True):
            ov, rv = vectors[pos : pos + len(o)], vectors[pos + len(o) : pos + len(o) + len(r)]
            pos += len(o) + len(r)
            ref_k = state.case.settings(SPEC.name, RefalignBlock).refine_top_k
            keep_o = mmr_refine(ov, top_k)
            keep_r = mmr_refine(rv, ref_k) if ref_k is not None else list(range(len(r)))
            out[id(state)] = (Refined([o[k] for k in keep_o], ov[keep_o]),
                              Refined([r[k] for k in keep_r], rv[keep_r]))  # fmt: skip
        return out

    @staticmethod
    def _embed_atomic(
        states: Sequence[CaseState], ctx: RunContext
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """One encode call for the atomic units of every atomic case of the shard."""
        wanted: list[tuple[CaseState, list[str], list[str]]] = []
        for state in states:
            if state.case.settings(SPEC.name, RefalignBlock).atomic_chunks:
                art, error = _atomic_units(state)
                if error is None:
                    wanted.append((state, art.units["output"], art.units["reference"]))
        texts = [t for _, o, r in wanted for t in (*o, *r)]
        if not texts:
            return {}
        vectors = ctx.embedder.encode(texts)
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        pos = 0
        for state, o, r in wanted:
            out[id(state)] = (vectors[pos : pos + len(o)], vectors[pos + len(o) : pos + len(o) + len(r)])
            pos += len(o) + len(r)
        return out

    @staticmethod
    def _atomic_metric(
        state: CaseState, vecs: tuple[np.ndarray, np.ndarray] | None, threshold: float
    ) -> tuple[MetricResult, NodeCost]:
        art, error = _atomic_units(state)
        detail: dict[str, Any] = {"similarity_threshold": threshold, "atomic_chunks": True,
                                  "units_from": "judge"}
        cost = art.cost if art is not None else NodeCost()
        if art is not None:
            detail.update(prompt_version=art.prompt_version, output_units=art.units["output"],
                          reference_units=art.units["reference"])
        if error is not None or vecs is None:
            return MetricResult(name="refalign", category=CATEGORY, score=None, result=[detail],
                                error=error or "atomic units not embedded"), cost
        c = claim_coverage(art.units["output"], vecs[0], art.units["reference"], vecs[1], threshold)
        detail = {"passed": passed_for(c.f1), **detail, "matching": "one_to_one", **asdict(c)}
        return MetricResult(name="refalign", category=CATEGORY, score=c.f1, result=[detail],
                            passed=passed_for(c.f1)), cost
