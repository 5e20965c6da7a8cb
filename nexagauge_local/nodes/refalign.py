"""refalign: semantic alignment of the output's refined units to the reference's.

The metric passes when F1 >= the global pass threshold; the matching itself uses the block's
`similarity_threshold` (default 0.8) on cosine similarity, many-to-one as nexa-gauge does with
`atomic_chunks` false.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.refiner import Refined
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import MetricResult, NodeReport, passed_for
from nexagauge_local.scoring.alignment import align, text_cosine

CATEGORY = "reference|semantic"


SPEC = NodeSpec("refalign", ("refiner",), ("output", "reference"), "deterministic",
                "embedding alignment of output units to reference units",
                order=10, impl="nexagauge_local.nodes.refalign:RefalignNode", metric=True, reported=True)


class RefalignNode(NodeBase):
    name = "refalign"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        # Global similarity embeds each whole text, as nexa-gauge does; whitespace runs become
        # one space (the encoder's tokenizer splits on them anyway), so a one-chunk text is
        # the chunk's own string and the embedder's memo serves it. One encode call per shard.
        whole = [" ".join(t.split()) for s in states for t in (s.case.output, s.case.reference or "")]
        vectors = ctx.embedder.encode(whole)
        for i, state in enumerate(states):
            refined: dict[str, Refined] = state.artifacts["refiner"]
            threshold = state.case.refalign_cfg().similarity_threshold
            out, ref = refined["output"], refined["reference"]
            blank = not (whole[2 * i] and whole[2 * i + 1])
            cosine_ = 0.0 if blank else text_cosine(vectors[2 * i], vectors[2 * i + 1])
            a = align(out.texts, out.vectors, ref.texts, ref.vectors, threshold, global_cosine=cosine_)
            detail = {"passed": passed_for(a.f1), "similarity_threshold": threshold, **asdict(a)}
            metric = MetricResult(
                name="refalign", category=CATEGORY, score=a.f1, result=[detail], passed=passed_for(a.f1)
            )
            cosine = MetricResult(
                name="semantic_similarity", category=CATEGORY, score=a.global_cosine,
                result=[{"global_cosine": a.global_cosine}],
            )
            state.artifacts[self.name] = NodeReport(metrics=[metric, cosine])
            ctx.advance(self.name, 1)
