"""relevance: does each extracted claim address the case's input (see claim_check)."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.case import Case
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.claim_check import ClaimCheck, judge_claims
from nexagauge_local.nodes.spec import NodeSpec

PROMPT_VERSION = "relevance/v1"
CATEGORY = "output|input"

SPEC = NodeSpec("relevance", ("claims",), ("output", "input"), "llm",
                "per claim: does it address the input", order=4,
                impl="nexagauge_local.nodes.relevance:RelevanceNode", metric=True, reported=True)

CHECK = ClaimCheck(
    node="relevance",
    category=CATEGORY,
    evidence_field="input",
    task="Task: decide, for each numbered claim, whether it addresses the input.",
    yes_no=(
        '"yes" when the claim helps answer or carry out the input; "no" when it is off '
        "topic or does not contribute. Judge relevance only, not truth."
    ),
    scale=(
        "5 = directly answers the input, 4 = clearly relevant, 3 = partly relevant, "
        "2 = barely relevant, 1 = irrelevant. Judge relevance only, not truth."
    ),
    labels=("relevant", "not_relevant"),
    prompt_version=PROMPT_VERSION,
    knobs_of=Case.relevance_cfg,
)


class RelevanceNode(NodeBase):
    name = "relevance"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        judge_claims(CHECK, states, ctx)
