"""claims: atomic, checkable claims from every refined output chunk (one judge call per shard).

Each chunk is its own request (up to 5 claims, claims_schema), with the previous chunk shown
only to resolve references. Claims are deduplicated across the case's chunks by normalised
text. `artifacts["claims"]` is the case's list[str]; `artifacts[META]` carries what grounding
and relevance need to explain an empty or partial list (chunk errors) and the node's cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nexagauge_local.judge.schemas import max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.claims.prompt import MAX_CLAIMS_PER_CHUNK, PROMPT_VERSION, render_claims
from nexagauge_local.nodes.claims.schema import claims_schema
from nexagauge_local.nodes.judging import CaseProgress, case_cost, run_judge
from nexagauge_local.nodes.refiner import Refined
from nexagauge_local.results import NodeCost
from nexagauge_local.scoring.judge_scores import dedupe_claims

META = "claims_meta"


@dataclass
class ClaimsMeta:
    """Side information of one case's extraction."""

    chunks: int = 0
    failed_chunks: int = 0
    errors: list[str] = field(default_factory=list)  # distinct chunk errors, first seen first
    cost: NodeCost = field(default_factory=NodeCost)

    def error_summary(self) -> str | None:
        if not self.failed_chunks:
            return None
        return (f"claim extraction failed for {self.failed_chunks} of {self.chunks} chunks: "
                + "; ".join(self.errors))


def output_chunks(state: CaseState) -> list[str]:
    refined = state.artifacts.get("refiner", {}).get("output")
    if isinstance(refined, Refined):
        return list(refined.texts)
    return [state.case.output] if state.case.field("output") else []


class ClaimsNode(NodeBase):
    name = "claims"

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        schema = claims_schema(MAX_CLAIMS_PER_CHUNK)
        max_tokens = max_tokens_for(schema)
        requests: list[JudgeRequest] = []
        spans: list[tuple[int, int]] = []  # per case: [start, end) into requests
        for state in states:
            chunks = output_chunks(state)
            start = len(requests)
            for i, chunk in enumerate(chunks):
                requests.append(JudgeRequest(
                    messages=render_claims(chunk, chunks[i - 1] if i else None),
                    schema=schema, max_tokens=max_tokens, node=self.name,
                    prompt_version=PROMPT_VERSION, case_id=state.case.case_id,
                    metric=f"chunk {i + 1}",
                ))
            spans.append((start, len(requests)))

        progress = CaseProgress(ctx, self.name, len(requests), len(states))
        results = run_judge(ctx, self.name, requests, progress)
        for state, (start, end) in zip(states, spans, strict=True):
            mine = results[start:end]
            meta = ClaimsMeta(chunks=len(mine), cost=case_cost(mine, ctx.settings.gpu_hour_price))
            found: list[str] = []
            for res in mine:
                if res.error or res.parsed is None:
                    meta.failed_chunks += 1
                    err = res.error or "no parse"
                    if err not in meta.errors:
                        meta.errors.append(err)
                    continue
                found.extend(res.parsed.claims)  # type: ignore[attr-defined]
            state.artifacts[self.name] = dedupe_claims(found)
            state.artifacts[META] = meta
        progress.finish()
