"""The toy node's report panel: its run-level figure from metrics/toy_llm.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nexagauge_local.nodes.panel import PanelTools, ReportPanel


def toy_view(metrics: Mapping[str, Any] | None, tools: PanelTools) -> dict[str, Any]:
    if not metrics:
        return {"present": False}
    return {"present": True, "share": metrics.get("on_focus_share"),
            "scored": metrics.get("scored")}


PANEL = ReportPanel(title="toy focus", view=toy_view, template="panel.html.j2")
