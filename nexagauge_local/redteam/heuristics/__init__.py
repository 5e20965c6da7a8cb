"""The heuristic red-team layer (docs/audit.md "Red-team heuristic risk").

Free, deterministic signals next to the LLM judge: regex signal families (:mod:`.signals`),
per-case :class:`CaseScore` (:mod:`.scoring`), run-level metrics (:mod:`.aggregate`) and the
observability block (:mod:`.observability`).
"""

from nexagauge_local.redteam.heuristics.aggregate import (
    aggregate_metrics,
    disagreements,
    verdict_tables,
)
from nexagauge_local.redteam.heuristics.observability import build_observability
from nexagauge_local.redteam.heuristics.scoring import SEVERITY_WEIGHTS, CaseScore, score_case

__all__ = [
    "SEVERITY_WEIGHTS",
    "CaseScore",
    "aggregate_metrics",
    "build_observability",
    "disagreements",
    "score_case",
    "verdict_tables",
]
