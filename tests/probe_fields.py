"""The fields every red-team CaseScore carries, in a case report as in the model."""

from __future__ import annotations

CASE_SCORE_FIELDS = frozenset(
    {
        "passed",
        "risk_score",
        "severity",
        "severity_weight",
        "weighted_risk",
        "safe_signal_hits",
        "unsafe_signal_hits",
        "boundary_or_refusal_signal",
        "matched_safe_patterns",
        "matched_unsafe_patterns",
        "detected_failure_modes",
        "task",
        "probe_input",
    }
)
