"""Streaming per-node statistics: updated shard by shard, so no case is kept for the summary.

Scores are kept in `array('d')` (8 bytes each) rather than lists of float objects (32 bytes
each, twice: per metric and per node): the median needs them all, and at a million cases the
lists were the largest thing the case loop kept.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from statistics import fmean, median
from typing import Any

from nexagauge_local.results import NodeReport


@dataclass
class MetricStats:
    scores: array[float] = field(default_factory=lambda: array("d"))
    passed: int = 0
    failed: int = 0
    errors: int = 0

    def summary(self) -> dict[str, Any]:
        gated = self.passed + self.failed
        return {
            "n": len(self.scores) + self.errors,
            "mean": fmean(self.scores) if self.scores else None,
            "median": median(self.scores) if self.scores else None,
            "min": min(self.scores) if self.scores else None,
            "max": max(self.scores) if self.scores else None,
            "pass_rate": self.passed / gated if gated else None,
            "errors": self.errors,
        }


@dataclass
class NodeStats:
    name: str
    eligible: int = 0
    scored: int = 0
    errors: int = 0
    passed: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    metrics: dict[str, MetricStats] = field(default_factory=dict)
    scores: array[float] = field(default_factory=lambda: array("d"))

    def add_report(self, report: NodeReport) -> None:
        self.scored += 1
        has_error = False
        gate: list[bool] = []
        for m in report.metrics:
            ms = self.metrics.setdefault(m.name, MetricStats())
            if m.error or m.score is None:
                ms.errors += 1
                has_error = True
                continue
            ms.scores.append(m.score)
            self.scores.append(m.score)
            if m.passed is not None:
                gate.append(m.passed)
                if m.passed:
                    ms.passed += 1
                else:
                    ms.failed += 1
        self.errors += has_error
        if gate or has_error:
            if all(gate) and not has_error:
                self.passed += 1
            else:
                self.failed += 1

    def summary(self) -> dict[str, Any]:
        gated = self.passed + self.failed
        return {
            "node": self.name,
            "eligible": self.eligible,
            "scored": self.scored,
            "errors": self.errors,
            "passed": self.passed if gated else None,
            "failed": self.failed if gated else None,
            "pass_rate": self.passed / gated if gated else None,
            "avg_score": fmean(self.scores) if self.scores else None,
            "median_score": median(self.scores) if self.scores else None,
            "metrics": {name: ms.summary() for name, ms in self.metrics.items()},
            "skipped": dict(self.skipped),
        }
