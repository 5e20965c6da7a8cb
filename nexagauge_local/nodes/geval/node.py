"""geval: score the output against each metric's evaluation steps (one call per shard).

binary_yes_no: yes -> 1.0, no -> 0.0. scale_1_5: the rating is normalised (s - 1) / 4. In
scale mode the request asks for logprobs; when the backend returns them, the rating is the
probability-weighted mean over the allowed digits 1..5 at the score position (G-Eval's
form-filling trick, which turns a coarse 1-5 into a finer score), and the result says
`score_method: logprob_weighted`; otherwise it is the generated digit, `argmax`. The method is
always reported, so no fallback is silent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from nexagauge_local.judge import JudgeRequest, JudgeResult, max_tokens_for
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.geval import SPEC
from nexagauge_local.nodes.geval.block import GevalBlock, GevalMetric
from nexagauge_local.nodes.geval.prompt import PROMPT_VERSION, render_geval
from nexagauge_local.nodes.geval.schema import geval_schema
from nexagauge_local.nodes.geval_steps.node import ResolvedSteps
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from nexagauge_local.results import GevalEntry, MetricResult, NodeReport, passed_for
from nexagauge_local.scoring.judge_scores import digit_distribution, weighted_rating
from nexagauge_local.scoring.mode import ScoringMode, unit_from_rating


def category(metric: GevalMetric) -> str:
    return "|".join(metric.item_fields)


class ScoreReading(BaseModel):
    """How a G-Eval score was made (GevalEntry's keys of the same names); a key is set only
    where the method produces it: `rating` in scale mode, the weighted rating and the digit
    probabilities only under logprob weighting."""

    rating: int | None = None
    score_method: Literal["argmax", "logprob_weighted"]
    weighted_rating: float | None = None
    digit_probabilities: dict[str, float] | None = None


def score_answer(
    parsed: Any, token_logprobs: list[dict[str, float]] | None, mode: ScoringMode
) -> tuple[float, ScoreReading]:
    """(score, how it was read) for one parsed answer; pure, so the math is tested directly."""
    if not mode.scaled:
        return mode.rating_score(parsed), ScoreReading(score_method="argmax")
    rated = mode.rating(parsed)
    dist = digit_distribution(token_logprobs) if token_logprobs else None
    if dist is None:
        return mode.rating_score(parsed), ScoreReading(rating=rated, score_method="argmax")
    rating = weighted_rating(dist)
    return unit_from_rating(rating), ScoreReading(
        rating=rated, score_method="logprob_weighted", weighted_rating=rating,
        digit_probabilities={str(d): p for d, p in dist.items()})


def metric_result(
    metric: GevalMetric, block: GevalBlock, steps: ResolvedSteps, res: JudgeResult | None
) -> MetricResult:
    name, cat = metric.name, category(metric)
    if steps.steps is None:
        return MetricResult(name=name, category=cat, score=None, error=steps.error)
    if res is None or res.error or res.parsed is None:
        error = (res.error if res is not None else None) or "no parse"
        return MetricResult(name=name, category=cat, score=None, error=error)
    score, reading = score_answer(res.parsed, res.token_logprobs, block.scoring_mode)
    passed = bool(passed_for(score))
    reasoning = ({"reasoning": res.parsed.reasoning}  # type: ignore[attr-defined]
                 if block.include_reasoning else {})
    entry = GevalEntry(verdict="PASS" if passed else "FAIL", passed=passed,
                       **reading.model_dump(exclude_unset=True), **reasoning,
                       evaluation_steps=list(steps.steps), steps_source=steps.source)
    return MetricResult(name=name, category=cat, score=score, result=[entry], passed=passed)


class GevalNode(LLMNode[int, NodeReport]):
    name = SPEC.name

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[int]] | None:
        """One request per metric whose steps resolved, about the metric's position."""
        block = state.case.block_of(self.name, GevalBlock)
        if block is None:
            return None
        schema = geval_schema(block.scoring_mode, block.include_reasoning)
        asks: list[Ask[int]] = []
        for mi, (metric, steps) in enumerate(self._pairs(state)):
            if steps.steps is None:
                continue
            fields: dict[str, str | None] = {
                f: state.case.field(f) for f in dict.fromkeys(metric.item_fields)
            }
            asks.append(Ask(JudgeRequest(
                messages=render_geval(metric.name, metric.criteria, steps.steps, fields,
                                      block.scoring_mode, block.include_reasoning),
                schema=schema, max_tokens=max_tokens_for(schema),
                want_logprobs=block.scoring_mode.scaled,
                node=self.name, prompt_version=PROMPT_VERSION,
                case_id=state.case.case_id, metric=metric.name,
            ), mi))
        return asks

    def score_case(self, state: CaseState, answers: Answers[int]) -> NodeReport:
        """Every metric of the block: scored from its answer, or the steps' error."""
        block = state.case.settings(self.name, GevalBlock)
        by_metric = dict(answers.pairs)
        metrics = [metric_result(metric, block, steps, by_metric.get(mi))
                   for mi, (metric, steps) in enumerate(self._pairs(state))]
        return NodeReport(metrics=metrics, cost=answers.cost)

    @staticmethod
    def _pairs(state: CaseState) -> list[tuple[GevalMetric, ResolvedSteps]]:
        block = state.case.block_of(SPEC.name, GevalBlock)
        if block is None:
            return []
        resolved: list[ResolvedSteps] = state.artifacts.get("geval_steps") or []
        by_pos = list(resolved) + [
            ResolvedSteps(m.name, None, "generated", "evaluation steps: not resolved")
            for m in block.metrics[len(resolved):]
        ]
        return list(zip(block.metrics, by_pos, strict=True))
