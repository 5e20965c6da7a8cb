"""`Judge`: everything a pipeline node and the runner may ask of the judge subsystem.

Nodes depend on this protocol, never on JudgeClient, so a scripted judge in tests and the real
client (cache, deduplication, backend or cluster executor behind it) are interchangeable, and the
runner reads usage and identity without probing for attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.types import JudgeRequest, JudgeResult


class Judge(Protocol):
    ledger: CostLedger  # per-node usage: requests, cache hits, tokens, device-seconds

    @property
    def judge_format(self) -> str:
        """How requests are asked: "rubric_json", or a guard family's format (judge/formats);
        a node that can ask in that format (redteam) reads it before planning."""
        ...

    @property
    def thresholds(self) -> Mapping[str, float]:
        """Pass thresholds fitted for this judge, per metric (its profile's `thresholds`)."""
        ...

    @property
    def decision(self) -> JudgeDecision | None:
        """What the run decided for this judge (judge/decision.py: engine, devices, identity),
        which the summary reads; None for a judge that runs no engine (a recorder, a fake)."""
        ...

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]:
        """Results aligned with `requests`; `progress(n)` as n more requests complete."""
        ...

    def describe(self) -> dict[str, Any]:
        """The `judge` block of summary.json (model, fingerprint, backend, device)."""
        ...

    def close(self) -> None: ...
