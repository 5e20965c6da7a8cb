"""Run the real nodes without a judge, recording the exact requests they would send.

Why run the nodes at all: the requests (and so the exact prompt tokens) are whatever the nodes'
own prompt builders make from the chunked, refined cases; rebuilding them here would drift.
The nodes that depend on judge answers (grounding and relevance need claims, geval needs
steps) get stand-ins so their requests can be built and counted too: a chunk's sentences for
its claims (the claims prompt asks for up to 5 atomic, sentence-sized claims per chunk) and
mid-range steps for a generated rubric. Those nodes' figures are marked as estimated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nexagauge_local.judge.prompts import MAX_CLAIMS_PER_CHUNK, MAX_STEPS, MIN_STEPS
from nexagauge_local.judge.types import JudgeRequest, JudgeResult
from nexagauge_local.nodes.base import CaseState, Node, RunContext
from nexagauge_local.nodes.chunk import sentences
from nexagauge_local.nodes.claims import ClaimsNode, output_chunks
from nexagauge_local.nodes.geval_steps import GevalStepsNode, ResolvedSteps
from nexagauge_local.nodes.judging import failed

NOT_RUN = "estimate: not run"
# Nodes whose requests are built from stand-ins for judge answers, not from real ones.
PROXIED = {"grounding": "claims", "relevance": "claims", "geval": "geval_steps"}
_PROXY_STEP = "Check the judged text against this part of the criteria and note the evidence."


@dataclass
class RecordingJudge:
    """Quacks like JudgeClient.run for nodes: records the requests, answers nothing."""

    requests: dict[str, list[JudgeRequest]] = field(default_factory=dict)

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


def proxy_claims(state: CaseState) -> list[str]:
    """Sentence-sized stand-ins for the claims the judge would extract, per refined chunk."""
    found: list[str] = []
    for chunk in output_chunks(state):
        found.extend(sentences(chunk)[:MAX_CLAIMS_PER_CHUNK])
    return list(dict.fromkeys(found))


class ProxyClaimsNode:
    """Records the real claims requests, then leaves stand-in claims for grounding/relevance."""

    name = "claims"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        ClaimsNode().run(states, ctx)
        for state in states:
            state.artifacts[self.name] = proxy_claims(state)


class ProxyStepsNode:
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


def estimate_registry(base: dict[str, Callable[[], Node]]) -> dict[str, Callable[[], Node]]:
    """The run registry with the proxy nodes swapped in and the judge-free metric nodes
    (refmatch, refalign) left out: they cost no GPU time and would only slow the estimate."""
    reg = {k: v for k, v in base.items() if k not in {"refmatch", "refalign", "eval"}}
    reg["claims"] = ProxyClaimsNode
    reg["geval_steps"] = ProxyStepsNode
    return reg
