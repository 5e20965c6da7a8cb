"""A toy metric node defined in this one module, to prove a node joins the pipeline without
editing anything else: test_graph_assembly.py adds its SPEC to the real nodes."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import MetricResult, NodeCost, NodeReport, passed_for

SPEC = NodeSpec("toy", ("scan",), ("output",), "deterministic", "words in the output, capped at 10",
                order=50, impl="tests.toy_node:ToyNode", metric=True, reported=True)


class ToyNode(NodeBase):
    name = "toy"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        for state in states:
            score = min(len(state.case.output.split()), 10) / 10
            metric = MetricResult(name="words", category="output", score=score,
                                  passed=passed_for(score))
            state.artifacts[self.name] = NodeReport(metrics=[metric], cost=NodeCost())
            ctx.advance(self.name, 1)
