"""eval: the per-case verdict over the metric branches that ran.

passed = every gating metric passed (informational metrics such as ROUGE have passed=None and
do not gate); a metric with an error makes the case fail, because an unscored metric is not a
pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from nexagauge_local.graph import SPECS
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.results import NodeReport

METRIC_NODES = SPECS["eval"].parents


def case_verdict(reports: dict[str, NodeReport]) -> dict[str, Any]:
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
    return {
        "passed": (not failed and not errors) if has_gate else None,
        "score": fmean(gating) if gating else None,
        "nodes": list(reports),
        "failed_metrics": failed,
        "error_metrics": errors,
        "scores": scores,
    }


class EvalNode:
    name = "eval"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        for state in states:
            reports = {n: state.artifacts[n] for n in METRIC_NODES if n in state.artifacts}
            state.artifacts[self.name] = case_verdict(reports)
            ctx.advance(self.name, 1)
