"""Heuristic red-team probe layer (README.md "Red-team heuristic risk").

Free, deterministic signals next to the LLM judge: regex signal families (:mod:`.signals`),
per-case :class:`CaseScore` (:mod:`.scoring`), run-level metrics (:mod:`.aggregate`), the
observability block (:mod:`.observability`) and the default probe suite (:mod:`.suite`).
"""

from nexagauge_local.probes.aggregate import aggregate_metrics, disagreements, verdict_tables
from nexagauge_local.probes.observability import build_observability
from nexagauge_local.probes.scoring import SEVERITY_WEIGHTS, CaseScore, score_case
from nexagauge_local.probes.suite import load_suite

__all__ = [
    "SEVERITY_WEIGHTS",
    "CaseScore",
    "aggregate_metrics",
    "build_observability",
    "disagreements",
    "load_suite",
    "score_case",
    "verdict_tables",
]
