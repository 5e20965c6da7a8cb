"""The toy node's report panels: its run-level figure from metrics/toy_llm.json, and its part
of each case's drill-down (the focus it was judged on, from the case report)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nexagauge_local.case_report import CaseReport
from nexagauge_local.nodes.panel import CasePanel, PanelTools, ReportPanel


def toy_view(metrics: Mapping[str, Any] | None, tools: PanelTools) -> dict[str, Any]:
    if not metrics:
        return {"present": False}
    return {"present": True, "share": metrics.get("on_focus_share"),
            "scored": metrics.get("scored")}


PANEL = ReportPanel(title="toy focus", view=toy_view, template="panel.html.j2")


def toy_case_view(report: CaseReport) -> dict[str, Any] | None:
    section = report.metrics_of("toy_llm")
    if section is None or not section.metrics:
        return None
    return {"score": section.metrics[0].score}


CASE_PANEL = CasePanel(view=toy_case_view, template="case.html.j2")
