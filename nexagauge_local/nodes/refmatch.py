"""refmatch: lexical overlap with the reference (ROUGE-1/2/L F-measure, BLEU, METEOR).

These are informational metrics: their scale depends on answer length and phrasing, so they
carry no pass/fail of their own and do not gate the case's `eval.passed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import MetricResult, NodeReport

if TYPE_CHECKING:  # the scorer imports nltk, rouge-score and sacrebleu: loaded when the node runs
    from nexagauge_local.scoring.lexical import LexicalScorer

CATEGORY = "reference|lexical"


def refmatch_metrics(
    scorer: LexicalScorer, reference: str, output: str, wordnet: object, matching: str
) -> list[MetricResult]:
    metrics: list[MetricResult] = []
    for name, parts in scorer.rouge(reference, output).items():
        metrics.append(MetricResult(name=name, category=CATEGORY, score=parts["fmeasure"], result=[parts]))
    b = scorer.bleu(reference, output)
    metrics.append(MetricResult(name="bleu", category=CATEGORY, score=b["score"], result=[b]))
    m = scorer.meteor(reference, output, wordnet)
    metrics.append(
        MetricResult(name="meteor", category=CATEGORY, score=m, result=[{"score": m, "matching": matching}])
    )
    return metrics


SPEC = NodeSpec("refmatch", ("scan",), ("output", "reference"), "deterministic",
                "ROUGE-1/2/L, BLEU, METEOR against the reference",
                order=9, impl="nexagauge_local.nodes.refmatch:RefmatchNode", metric=True, reported=True)


class RefmatchNode(NodeBase):
    name = "refmatch"

    def __init__(self) -> None:
        from nexagauge_local.scoring.lexical import LexicalScorer

        self.scorer = LexicalScorer()

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        from nexagauge_local.scoring.meteor import wordnet_for

        wordnet, matching = wordnet_for(ctx.settings.cache_dir)
        for state in states:
            case = state.case
            try:
                metrics = refmatch_metrics(self.scorer, case.reference or "", case.output, wordnet, matching)
            except Exception as exc:  # noqa: BLE001 - a metric failure is reported on the case, never fatal
                metrics = [MetricResult(name="refmatch", category=CATEGORY, score=None, error=repr(exc))]
            state.artifacts[self.name] = NodeReport(metrics=metrics)
            ctx.advance(self.name, 1)
