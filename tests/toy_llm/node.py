"""The toy node's logic: one judge request per case, a yes/no (or 1..5) rating of its focus.

Only its prompt, schema, asks and scoring: LLMNode (nodes/llm_node.py) does the rest."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, create_model

from nexagauge_local.judge.prompts.base import data_sections, messages
from nexagauge_local.judge.schemas import StrictSchema, max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from nexagauge_local.results import MetricResult, NodeReport, passed_for
from nexagauge_local.scoring.mode import ScoringMode
from tests.toy_llm import SPEC
from tests.toy_llm.block import ToyBlock

PROMPT_VERSION = "toy_llm/v1"


def toy_schema(mode: ScoringMode) -> type[BaseModel]:
    fields: dict[str, Any] = mode.rating_fields()
    return create_model(f"Toy{mode.schema_tag}", __base__=StrictSchema, **fields)


def toy_request(state: CaseState, block: ToyBlock) -> JudgeRequest:
    schema = toy_schema(block.scoring_mode)
    line = block.scoring_mode.rating_line('"yes" when it stays on it', "5 = fully on it")
    user = (f"Task: does the output stay on {block.focus}?\n{line}\n\n"
            + data_sections({"output": state.case.output}))
    return JudgeRequest(messages=messages(user), schema=schema, max_tokens=max_tokens_for(schema),
                        node=SPEC.name, prompt_version=PROMPT_VERSION,
                        case_id=state.case.case_id, metric="focus")


class ToyLlmNode(LLMNode[ToyBlock, NodeReport]):
    name = SPEC.name

    def __init__(self) -> None:
        self._scores: list[float] = []

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[ToyBlock]]:
        block = state.case.settings(self.name, ToyBlock)
        return [Ask(toy_request(state, block), block)]

    def score_case(self, state: CaseState, answers: Answers[ToyBlock]) -> NodeReport:
        [(block, res)] = answers.pairs
        if res.parsed is None:
            metric = MetricResult(name="focus", category="output", score=None,
                                  error=res.error or "no parse")
        else:
            score = block.scoring_mode.rating_score(res.parsed)
            self._scores.append(score)
            metric = MetricResult(name="focus", category="output", score=score,
                                  passed=passed_for(score))
        return NodeReport(metrics=[metric], cost=answers.cost)

    def finalize(self) -> dict[str, Any]:
        """The run-level figure the panel shows: the share of cases judged on focus."""
        on_focus = sum(s >= 0.6 for s in self._scores)
        return {"on_focus_share": on_focus / len(self._scores) if self._scores else None}
