"""What `estimate` runs in place of geval_steps (SPEC.estimate_stand_in).

geval builds one request per metric from its evaluation steps; a metric whose steps the judge
would generate has none until the judge answers. The stand-in runs the real node (its requests
are recorded exactly), then resolves every generated rubric to mid-range stand-in steps, so the
geval requests can be built and counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.geval_steps import MAX_STEPS, MIN_STEPS, SPEC
from nexagauge_local.nodes.geval_steps.node import GevalStepsNode, ResolvedSteps

PROXY_STEP = "Check the judged text against this part of the criteria and note the evidence."


class ProxyStepsNode(NodeBase):
    """Records the real steps requests, then resolves generated rubrics to mid-range steps."""

    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        GevalStepsNode().run(states, ctx)
        n_steps = (MIN_STEPS + MAX_STEPS + 1) // 2
        for state in states:
            resolved: list[ResolvedSteps] = state.artifacts.get(self.name) or []
            state.artifacts[self.name] = [
                r
                if r.steps is not None
                else ResolvedSteps(r.name, (PROXY_STEP,) * n_steps, "generated")
                for r in resolved
            ]
