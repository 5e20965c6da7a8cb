"""Run the real nodes without a judge, recording the exact requests they would send.

Why run the nodes at all: the requests (and so the exact prompt tokens) are whatever the nodes'
own prompt builders make from the chunked, refined cases; rebuilding them here would drift.
The nodes that depend on judge answers (grounding and relevance need claims, geval needs
steps) get stand-ins so their requests can be built and counted too: a chunk's sentences for
its claims (the claims prompt asks about each sentence, and most sentences become one claim) and
mid-range steps for a generated rubric. Those nodes' figures are marked as estimated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexagauge_local.graph import Graph
from nexagauge_local.judge import CostLedger, JudgeRequest, JudgeResult
from nexagauge_local.nodes.base import CaseState, Node, NodeBase, RunContext
from nexagauge_local.nodes.claims.node import META, Claims, ClaimsNode, output_sentences
from nexagauge_local.nodes.geval_steps import MAX_STEPS, MIN_STEPS
from nexagauge_local.nodes.geval_steps.node import GevalStepsNode, ResolvedSteps
from nexagauge_local.nodes.judging import failed

NOT_RUN = "estimate: not run"
# Nodes whose requests are built from stand-ins for judge answers, not from real ones.
PROXIED = {"grounding": "claims", "relevance": "claims", "geval": "geval_steps"}
_PROXY_STEP = "Check the judged text against this part of the criteria and note the evidence."


@dataclass
class RecordingJudge:
    """A Judge that records the requests and answers nothing (every result fails NOT_RUN)."""

    requests: dict[str, list[JudgeRequest]] = field(default_factory=dict)
    ledger: CostLedger = field(default_factory=CostLedger)  # stays empty: nothing is judged

    def run(
        self,
        node: str,
        requests: Sequence[JudgeRequest],
        progress: Callable[[int], None] | None = None,
    ) -> list[JudgeResult]:
        self.requests.setdefault(node, []).extend(requests)
        if progress:
            progress(len(requests))
        return [failed(NOT_RUN) for _ in requests]

    def describe(self) -> dict[str, Any]:
        return {"model": None, "recording": True}

    def close(self) -> None:
        pass


def proxy_claims(state: CaseState) -> list[str]:
    """Stand-ins for the claims the judge would extract: the output's sentences."""
    return list(dict.fromkeys(output_sentences(state)))


class ProxyClaimsNode(NodeBase):
    """Records the real claims requests, then leaves stand-in claims for grounding/relevance."""

    name = "claims"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        ClaimsNode().run(states, ctx)
        for state in states:
            state.artifacts[self.name] = Claims(proxy_claims(state), state.artifacts[META])


class ProxyStepsNode(NodeBase):
    """Records the real steps requests, then resolves generated rubrics to mid-range steps."""

    name = "geval_steps"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        GevalStepsNode().run(states, ctx)
        n_steps = (MIN_STEPS + MAX_STEPS + 1) // 2
        for state in states:
            resolved: list[ResolvedSteps] = state.artifacts.get(self.name) or []
            state.artifacts[self.name] = [
                r
                if r.steps is not None
                else ResolvedSteps(r.name, (_PROXY_STEP,) * n_steps, "generated")
                for r in resolved
            ]


def estimate_registry(graph: Graph) -> dict[str, Callable[[], Node]]:
    """The graph's node builders with the proxy nodes swapped in, keeping only the nodes that
    make or feed judge requests (utility and LLM nodes): deterministic metric nodes and the
    aggregate cost no GPU time and would only slow the estimate."""
    keep = {s.name for s in graph.nodes if s.kind in ("utility", "llm")}
    reg = {k: v for k, v in graph.factories().items() if k in keep}
    reg["claims"] = ProxyClaimsNode
    reg["geval_steps"] = ProxyStepsNode
    return reg
