"""What `estimate` runs in the toy node's place: the real node (its requests are recorded
exactly), then a stand-in score on every case, marked as such, for any node that would read it."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.results import MetricResult, NodeCost, NodeReport
from tests.toy_llm import SPEC
from tests.toy_llm.node import ToyLlmNode

STAND_IN = "toy stand-in"


class ToyStandIn(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        ToyLlmNode().run(states, ctx)
        for state in states:
            metric = MetricResult(name="focus", category="output", score=0.5, error=STAND_IN)
            state.artifacts[self.name] = NodeReport(metrics=[metric], cost=NodeCost())
