"""geval: score the output against each metric's evaluation steps (one call per shard).

binary_yes_no: yes -> 1.0, no -> 0.0. scale_1_5: the rating is normalised (s - 1) / 4. In
scale mode the request asks for logprobs; when the backend returns them, the rating is the
probability-weighted mean over the allowed digits 1..5 at the score position (G-Eval's
form-filling trick, which turns a coarse 1-5 into a finer score), and the result says
`score_method: logprob_weighted`; otherwise it is the generated digit, `argmax`. The method is
always reported, so no fallback is silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nexagauge_local.judge import JudgeRequest, JudgeResult, max_tokens_for
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.geval import SPEC
from nexagauge_local.nodes.geval.block import GevalBlock, GevalMetric
from nexagauge_local.nodes.geval.prompt import PROMPT_VERSION, render_geval
from nexagauge_local.nodes.geval.schema import geval_schema
from nexagauge_local.nodes.geval_steps.node import ResolvedSteps
from nexagauge_local.nodes.judging import CaseProgress, case_cost, run_judge
from nexagauge_local.results import MetricResult, NodeReport, passed_for
from nexagauge_local.scoring.judge_scores import digit_distribution, weighted_rating
from nexagauge_local.scoring.mode import ScoringMode, unit_from_rating


def category(metric: GevalMetric) -> str:
    return "|".join(metric.item_fields)


def score_answer(
    parsed: Any, token_logprobs: list[dict[str, float]] | None, mode: ScoringMode
) -> tuple[float, dict[str, Any]]:
    """(score, detail keys) for one parsed answer; pure, so the math is tested directly."""
    if not mode.scaled:
        return mode.rating_score(parsed), {"score_method": "argmax"}
    detail: dict[str, Any] = {"rating": mode.rating(parsed)}
    dist = digit_distribution(token_logprobs) if token_logprobs else None
    if dist is None:
        detail["score_method"] = "argmax"
        return mode.rating_score(parsed), detail
    rating = weighted_rating(dist)
    detail["score_method"] = "logprob_weighted"
    detail["weighted_rating"] = rating
    detail["digit_probabilities"] = {str(d): p for d, p in dist.items()}
    return unit_from_rating(rating), detail


def metric_result(
    metric: GevalMetric, block: GevalBlock, steps: ResolvedSteps, res: JudgeResult | None
) -> MetricResult:
    name, cat = metric.name, category(metric)
    if steps.steps is None:
        return MetricResult(name=name, category=cat, score=None, error=steps.error)
    if res is None or res.error or res.parsed is None:
        error = (res.error if res is not None else None) or "no parse"
        return MetricResult(name=name, category=cat, score=None, error=error)
    score, detail = score_answer(res.parsed, res.token_logprobs, block.scoring_mode)
    passed = bool(passed_for(score))
    entry: dict[str, Any] = {"verdict": "PASS" if passed else "FAIL", "passed": passed, **detail}
    if block.include_reasoning:
        entry["reasoning"] = res.parsed.reasoning  # type: ignore[attr-defined]
    entry["evaluation_steps"] = list(steps.steps)
    entry["steps_source"] = steps.source
    return MetricResult(name=name, category=cat, score=score, result=[entry], passed=passed)


class GevalNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        requests: list[JudgeRequest] = []
        where: dict[tuple[int, int], int] = {}  # (case, metric) -> request index
        for ci, state in enumerate(states):
            block = state.case.block_of(self.name, GevalBlock)
            if block is None:
                continue
            schema = geval_schema(block.scoring_mode, block.include_reasoning)
            for mi, (metric, steps) in enumerate(self._pairs(state)):
                if steps.steps is None:
                    continue
                fields = {f: state.case.field(f) for f in dict.fromkeys(metric.item_fields)}
                where[(ci, mi)] = len(requests)
                requests.append(JudgeRequest(
                    messages=render_geval(metric.name, metric.criteria, steps.steps, fields,
                                          block.scoring_mode, block.include_reasoning),
                    schema=schema, max_tokens=max_tokens_for(schema),
                    want_logprobs=block.scoring_mode.scaled,
                    node=self.name, prompt_version=PROMPT_VERSION,
                    case_id=state.case.case_id, metric=metric.name,
                ))

        progress = CaseProgress(ctx, self.name, len(requests), len(states))
        results = run_judge(ctx, self.name, requests, progress)
        for ci, state in enumerate(states):
            block = state.case.block_of(self.name, GevalBlock)
            if block is None:
                continue
            metrics: list[MetricResult] = []
            mine: list[JudgeResult] = []
            for mi, (metric, steps) in enumerate(self._pairs(state)):
                idx = where.get((ci, mi))
                res = results[idx] if idx is not None else None
                if res is not None:
                    mine.append(res)
                metrics.append(metric_result(metric, block, steps, res))
            state.artifacts[self.name] = NodeReport(
                metrics=metrics, cost=case_cost(mine, ctx.settings.gpu_hour_price)
            )
        progress.finish()

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
