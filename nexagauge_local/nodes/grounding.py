"""grounding: is each extracted claim supported by the case's context (see claim_verdicts)."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.case import Case
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.claim_verdicts import judge_claims

CATEGORY = "output|context"


class GroundingNode:
    name = "grounding"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        judge_claims("grounding", CATEGORY, "context", Case.grounding_cfg, states, ctx)
