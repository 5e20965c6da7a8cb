"""Result shapes written to case reports (docs/outputs.md "The output directory":
`metrics: [{name, category, score, result, error}]` and `cost`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, SerializeAsAny, ValidationError, field_validator

from nexagauge_local.results.entries import (
    ClaimEntry,
    GevalEntry,
    GuardEntry,
    GuardProbeAnswer,
    GuardScoreReading,
    ProbeEntry,
    ResultEntry,
    RubricEntry,
    SafetyEntry,
    entry_from_json,
)

__all__ = [
    "PASS_THRESHOLD",
    "ClaimEntry",
    "GevalEntry",
    "GuardEntry",
    "GuardProbeAnswer",
    "GuardScoreReading",
    "MetricResult",
    "NodeCost",
    "NodeReport",
    "ProbeEntry",
    "ResultEntry",
    "RubricEntry",
    "SafetyEntry",
    "passed_for",
    "threshold_field",
]

PASS_THRESHOLD = 0.6
"""Global pass threshold: a metric passes when score >= 0.6; the verdict derives from passed."""


def passed_for(score: float | None, threshold: float = PASS_THRESHOLD) -> bool | None:
    """`threshold`: a metric's own, where the run was given one (RunSettings.thresholds)."""
    return None if score is None else score >= threshold


def threshold_field(threshold: float) -> dict[str, float]:
    """The `threshold` keyword of a result entry: given only for a threshold other than the
    global one, so a reader sees what `passed` was measured against, and at 0.6 the
    specification's keys stay exactly as they are."""
    return {} if threshold == PASS_THRESHOLD else {"threshold": threshold}


class MetricResult(BaseModel):
    """One metric of one case.

    `result` items are entries (results/entries.py) of the metric's kind; each writes only the
    keys its producer set, since severity and reasoning must be absent (not null) in the modes
    that do not produce them. A result read back from a file becomes the kind its keys name.
    `passed` is None for informational metrics (lexical overlap) that have no pass/fail meaning.
    """

    name: str
    # Every node sets both; the defaults let a case report of an older or hand-made run that
    # lacks them still load (compare and report read such folders).
    category: str | None = None
    score: float | None = None
    result: list[SerializeAsAny[ResultEntry]] = Field(default_factory=list)
    error: str | None = None
    passed: bool | None = None

    @field_validator("result", mode="before")
    @classmethod
    def _entries(cls, value: Any) -> Any:
        return [entry_from_json(i) for i in value] if isinstance(value, list) else value

    def report_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude={"passed"})


class NodeCost(BaseModel):
    """Cost of one node for one case. `cost` is USD, 0.0 unless a GPU-hour price was set;
    `gpu_seconds` (and a priced `cost`) null when the judge could not see its device time."""

    cost: float | None = 0.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    gpu_seconds: float | None = 0.0

    def __add__(self, other: NodeCost) -> NodeCost:
        return NodeCost(
            cost=_plus(self.cost, other.cost),
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            gpu_seconds=_plus(self.gpu_seconds, other.gpu_seconds),
        )


def _plus(a: float | None, b: float | None) -> float | None:
    """Unknown stays unknown: a sum with a null part is null."""
    return None if a is None or b is None else a + b


class NodeReport(BaseModel):
    """A metric node's section in a case report: `{metrics: [...], cost: {...}}` plus extras
    (e.g. the redteam node's heuristic `case_score`)."""

    metrics: list[MetricResult] = Field(default_factory=list)
    cost: NodeCost = Field(default_factory=NodeCost)
    extras: dict[str, Any] = Field(default_factory=dict)

    def report_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metrics": [m.report_dict() for m in self.metrics],
            "cost": self.cost.model_dump(),
        }
        out.update(self.extras)
        return out

    @classmethod
    def from_section(cls, section: Mapping[str, Any]) -> NodeReport:
        """A case report's section read back (report_dict's inverse). A metric entry that does
        not parse is left out, so a damaged entry costs its own rows and no more; `passed` is
        not in the file and stays None (report/rows.py re-derives the gate from `result`).
        Strict: a score written as text or a boolean is a damaged entry, not a number."""
        metrics: list[MetricResult] = []
        for item in section.get("metrics") or []:
            try:
                metrics.append(MetricResult.model_validate(item, strict=True))
            except ValidationError:
                continue
        try:
            cost = NodeCost.model_validate(section.get("cost") or {})
        except ValidationError:
            cost = NodeCost()
        extras = {k: v for k, v in section.items() if k not in ("metrics", "cost")}
        return cls(metrics=metrics, cost=cost, extras=extras)
