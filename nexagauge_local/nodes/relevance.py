"""relevance: does each extracted claim address the case's input (see claim_verdicts)."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.case import Case
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.claim_verdicts import judge_claims

CATEGORY = "output|input"


class RelevanceNode:
    name = "relevance"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        judge_claims("relevance", CATEGORY, "input", Case.relevance_cfg, states, ctx)
