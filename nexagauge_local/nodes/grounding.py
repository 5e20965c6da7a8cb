"""grounding: is each extracted claim supported by the case's context (see claim_check)."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.case import Case
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.claim_check import ClaimCheck, judge_claims
from nexagauge_local.nodes.spec import NodeSpec

PROMPT_VERSION = "grounding/v1"
CATEGORY = "output|context"

SPEC = NodeSpec("grounding", ("claims",), ("output", "context"), "llm",
                "per claim: is it supported by the context", order=5,
                impl="nexagauge_local.nodes.grounding:GroundingNode", metric=True, reported=True)

CHECK = ClaimCheck(
    node="grounding",
    category=CATEGORY,
    evidence_field="context",
    task="Task: decide, for each numbered claim, whether the context supports it.",
    yes_no=(
        '"yes" when the context states the claim or clearly implies it; "no" when the '
        "context contradicts it or does not contain it. Use only the context, not your own "
        "knowledge."
    ),
    scale=(
        "5 = fully supported by the context, 4 = mostly supported, 3 = partly supported, "
        "2 = barely supported, 1 = not supported or contradicted. Use only the context, not "
        "your own knowledge."
    ),
    labels=("supported", "not_supported"),
    prompt_version=PROMPT_VERSION,
    knobs_of=Case.grounding_cfg,
)


class GroundingNode(NodeBase):
    name = "grounding"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        judge_claims(CHECK, states, ctx)
