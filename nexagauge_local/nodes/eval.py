"""eval: the per-case verdict over the metric branches that ran.

passed = every gating metric passed (informational metrics such as ROUGE have passed=None and
do not gate); a metric with an error makes the case fail, because an unscored metric is not a
pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from nexagauge_local.case_report import VerdictSection
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import NodeReport

SPEC = NodeSpec("eval", (), (), "aggregate", "per-case aggregate of the metric branches that ran",
                order=11, impl=f"{__name__}:EvalNode", reported=True, needs="any",
                gathers_metrics=True)


@dataclass(frozen=True)
class CaseVerdict:
    """eval's artifact: the verdict, written to the case report as its section."""

    verdict: VerdictSection

    def report_dict(self) -> dict[str, Any]:
        """The case report's `eval` section (JSON)."""
        return self.verdict.model_dump()


def case_verdict(reports: dict[str, NodeReport]) -> VerdictSection:
    scores: dict[str, float | None] = {}
    failed: list[str] = []
    errors: list[str] = []
    gating: list[float] = []
    for node, report in reports.items():
        for m in report.metrics:
            key = f"{node}.{m.name}"
            scores[key] = m.score
            if m.error:
                errors.append(key)
            elif m.passed is False:
                failed.append(key)
            if m.passed is not None and m.score is not None:
                gating.append(m.score)
    has_gate = bool(gating) or bool(errors)
    return VerdictSection(
        passed=(not failed and not errors) if has_gate else None,
        score=fmean(gating) if gating else None,
        nodes=list(reports),
        failed_metrics=failed,
        error_metrics=errors,
        scores=scores,
    )


class EvalNode(NodeBase):
    """Aggregates the metric nodes of the run's plan (ctx.metric_nodes), in plan order."""

    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        for state in states:
            reports = {n: state.artifacts[n] for n in ctx.metric_nodes if n in state.artifacts}
            state.artifacts[self.name] = CaseVerdict(case_verdict(reports))
            ctx.advance(self.name, 1)
