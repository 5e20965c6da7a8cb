"""claims' part of each case's drill-down: the case's claims, each with the verdicts the
claim-checking nodes (relevance, grounding) gave it, printed by case.html.j2 next to this file.

The report calls this through the SPEC (nodes/panel.py: CasePanel), so report/ names no node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nexagauge_local.case_report import CaseReport
from nexagauge_local.nodes.panel import CasePanel

NODE = "claims"
CLAIM_CHECKS = ("relevance", "grounding")  # the nodes that judge each claim, in column order
MAX_CLAIMS = 12  # claims shown per case; all of them are in the case file


@dataclass
class ClaimsView:
    """The claims node's section: its status and each claim with the verdicts it got."""

    status: str
    error: str | None
    rows: list[dict[str, Any]]  # claim, and per checking node (relevance, grounding) a verdict
    checks: list[str]  # the checking nodes that judged these claims
    more: int


def claims_view(report: CaseReport) -> ClaimsView | None:
    """The case's claims, each with its relevance and grounding verdicts when those ran."""
    section = report.section(NODE)
    if section is None:
        return None
    verdicts: dict[str, dict[str, Mapping[str, Any]]] = {}
    for node in CLAIM_CHECKS:
        checked = report.metrics_of(node)
        for m in checked.metrics if checked is not None else []:
            for r in m.result:
                if r.is_claim:
                    verdicts.setdefault(node, {})[str(r.written("claim"))] = r.model_dump()
    claims = [str(c) for c in section.get("claims") or []]
    rows = [{"claim": c, **{n: verdicts[n].get(c) for n in verdicts}} for c in claims[:MAX_CLAIMS]]
    return ClaimsView(status=str(section.get("status", "")), error=section.get("error"),
                      rows=rows, checks=list(verdicts), more=max(0, len(claims) - MAX_CLAIMS))


CASE_PANEL = CasePanel(view=claims_view, template="case.html.j2")
