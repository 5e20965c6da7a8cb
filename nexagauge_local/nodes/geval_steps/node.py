"""geval_steps: evaluation steps for every G-Eval metric of the shard.

Metrics with `evaluation_steps` use them as given. For the others the judge turns the criteria
into 2-5 steps from the criteria and the field NAMES only (never a case's values), so one answer
serves every case with the same (criteria, item_fields): the node asks once per distinct pair
per shard, remembers answers across shards, and the judge cache makes it once across runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nexagauge_local.judge import JudgeRequest, JudgeResult, max_tokens_for
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.geval.block import GevalBlock, GevalMetric
from nexagauge_local.nodes.geval_steps import SPEC
from nexagauge_local.nodes.geval_steps.prompt import (
    MAX_STEPS,
    MIN_STEPS,
    PROMPT_VERSION,
    render_steps,
)
from nexagauge_local.nodes.geval_steps.schema import steps_schema
from nexagauge_local.nodes.llm_node import LLMNode, ShardPlan

StepsKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class ResolvedSteps:
    """One metric's steps for the geval node: given, generated, or an error saying why not."""

    name: str
    steps: tuple[str, ...] | None
    source: Literal["given", "generated"]
    error: str | None = None


def steps_key(metric: GevalMetric) -> StepsKey:
    criteria = " ".join((metric.criteria or "").split())
    return criteria, tuple(metric.item_fields)


class GevalStepsNode(LLMNode[None, list[ResolvedSteps]]):
    """Overrides `plan_shard`, not `plan_case`: a request serves every case with the same
    criteria (it shows no case's values), so requests are per distinct key of the shard, and
    a case's steps may come from a request another case needed first."""

    name = SPEC.name

    def __init__(self) -> None:
        self._memo: dict[StepsKey, tuple[str, ...]] = {}

    def plan_shard(self, states: Sequence[CaseState], ctx: RunContext) -> ShardPlan:
        schema = steps_schema(MIN_STEPS, MAX_STEPS)
        max_tokens = max_tokens_for(schema)
        keys: list[StepsKey] = []
        for state in states:
            for metric in self._metrics(state):
                key = steps_key(metric)
                if not metric.evaluation_steps and key not in self._memo and key not in keys:
                    keys.append(key)
        requests = [
            JudgeRequest(messages=render_steps(criteria, fields), schema=schema,
                         max_tokens=max_tokens, node=self.name, prompt_version=PROMPT_VERSION)
            for criteria, fields in keys
        ]

        def write(results: list[JudgeResult]) -> None:
            fresh = dict(zip(keys, results, strict=True))
            for key, res in fresh.items():
                if res.error is None and res.parsed is not None:
                    self._memo[key] = tuple(" ".join(s.split()) for s in res.parsed.steps)  # type: ignore[attr-defined]
            for state in states:
                state.artifacts[self.name] = [self._resolve(m, fresh) for m in self._metrics(state)]

        return ShardPlan(requests, write)

    @staticmethod
    def _metrics(state: CaseState) -> list[GevalMetric]:
        block = state.case.block_of("geval", GevalBlock)
        return list(block.metrics) if block is not None else []

    def _resolve(self, metric: GevalMetric, fresh: dict[StepsKey, JudgeResult]) -> ResolvedSteps:
        if metric.evaluation_steps:
            return ResolvedSteps(metric.name, tuple(metric.evaluation_steps), "given")
        key = steps_key(metric)
        if key in self._memo:
            return ResolvedSteps(metric.name, self._memo[key], "generated")
        res = fresh.get(key)
        error = (res.error if res is not None else None) or "no parse"
        return ResolvedSteps(metric.name, None, "generated", f"evaluation steps: {error}")
