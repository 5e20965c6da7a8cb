"""Run the real nodes without a judge, recording the exact requests they would send.

Why run the nodes at all: the requests (and so the exact prompt tokens) are whatever the nodes'
own prompt builders make from the chunked, refined cases; rebuilding them here would drift.
The nodes that depend on judge answers (grounding and relevance need claims, geval needs
steps) get their inputs from stand-ins: a node whose answers later nodes read names, in its
SPEC, the node estimate runs in its place (`estimate_stand_in`: it records the real requests
and leaves stand-in answers). Every node below such a node has its figures marked as estimated;
which nodes those are follows from the graph, so no node is named here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexagauge_local.graph import GRAPH, Graph
from nexagauge_local.judge import (
    CostLedger,
    FailureKind,
    JudgeDecision,
    JudgeProfile,
    JudgeRequest,
    JudgeResult,
)
from nexagauge_local.nodes.base import Node
from nexagauge_local.nodes.judging import failed

NOT_RUN = "estimate: not run"


@dataclass
class RecordingJudge:
    """A Judge that records the requests and answers nothing (every result fails NOT_RUN)."""

    requests: dict[str, list[JudgeRequest]] = field(default_factory=dict)
    ledger: CostLedger = field(default_factory=CostLedger)  # stays empty: nothing is judged
    judge_format: str = "rubric_json"  # the profile's: requests are recorded as they'd be asked
    thresholds: dict[str, float] = field(default_factory=dict)
    decision: JudgeDecision | None = None  # no engine runs

    @classmethod
    def asking_as(cls, profile: JudgeProfile) -> RecordingJudge:
        """A recorder that the nodes ask as they would ask `profile`'s judge: a guard profile's
        requests are then recorded (and counted) in its family's format, not the rubric one."""
        return cls(judge_format=profile.judge_format, thresholds=dict(profile.thresholds))

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]:
        self.requests.setdefault(node, []).extend(requests)
        if progress:
            progress(len(requests))
        return [failed(NOT_RUN, FailureKind.NOT_RUN) for _ in requests]

    def describe(self) -> dict[str, Any]:
        return {"model": None, "recording": True}

    def close(self) -> None:
        pass


def stand_in_sources(graph: Graph) -> dict[str, str]:
    """LLM node -> the stand-in nodes its requests are built from (its ancestors that have an
    estimate stand-in, comma-separated), for every LLM node that has any."""
    out: dict[str, str] = {}
    for spec in graph.nodes:
        if spec.kind != "llm":
            continue
        sources = [s.name for s in graph.plan(spec.name)
                   if s.name != spec.name and s.estimate_stand_in is not None]
        if sources:
            out[spec.name] = ", ".join(sources)
    return out


# Nodes whose requests are built from stand-ins for judge answers, not from real ones.
PROXIED: dict[str, str] = stand_in_sources(GRAPH)


def estimate_registry(graph: Graph) -> dict[str, Callable[[], Node]]:
    """The graph's node builders with each node's estimate stand-in swapped in, keeping only the
    nodes that make or feed judge requests (utility and LLM nodes): deterministic metric nodes
    and the aggregate cost no GPU time and would only slow the estimate."""
    keep = {s.name for s in graph.nodes if s.kind in ("utility", "llm")}
    reg = {k: v for k, v in graph.factories().items() if k in keep}
    for spec in graph.nodes:
        if spec.name in keep and spec.estimate_stand_in is not None:
            reg[spec.name] = spec.load_stand_in()
    return reg
