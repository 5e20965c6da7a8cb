"""`TappedJudge`: a Judge that shows each node's requests to an observer, then hands them on.

Why: the audit manifest lists every output schema a run asked for, and the node benchmark
keeps every request a node sent; both need the requests exactly as the nodes made them,
without changing what the judge does or answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.protocol import Judge
from nexagauge_local.judge.types import JudgeRequest, JudgeResult

Observer = Callable[[str, Sequence[JudgeRequest]], None]


class TappedJudge:
    """`inner`, with `observe(node, requests)` called before each node's requests go to it."""

    def __init__(self, inner: Judge, observe: Observer) -> None:
        self.inner, self.observe = inner, observe
        self.ledger: CostLedger = inner.ledger

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]:
        self.observe(node, requests)
        return self.inner.run(node, requests, progress)

    @property
    def judge_format(self) -> str:
        return self.inner.judge_format

    @property
    def thresholds(self) -> Mapping[str, float]:
        return self.inner.thresholds

    @property
    def decision(self) -> JudgeDecision | None:
        return self.inner.decision

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()
