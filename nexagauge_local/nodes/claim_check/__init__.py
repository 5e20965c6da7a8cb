"""Shared logic of grounding and relevance: one request per case, one verdict per claim.

Not a node itself (no SPEC): grounding.py and relevance.py each describe their check as a
ClaimCheck (task and answer wording, evidence field, labels, prompt version); everything else a
node needs is made here from it, once for both (`claim_check_node`): its SPEC (parents,
required fields, record block) and its class (a `ClaimCheckNode` subclass naming the check).

The schema asks for exactly N verdicts (claim_verdicts_schema: minItems = maxItems = N), so the
count always matches the claims. Per-claim score: binary yes -> 1.0 / no -> 0.0; scale_1_5
rating s -> (s - 1) / 4. Node score = mean over claims; passed = score >= 0.6. A case without
claims is not a perfect case: score null and an error saying why, unless the claims node found
that no sentence of the output states a checkable fact (a refusal, a greeting): that case is
skipped with NO_VERIFIABLE, a finding about the output rather than a judge error.
"""

from __future__ import annotations

from typing import Any, ClassVar

from nexagauge_local.blocks import ScoringKnobs
from nexagauge_local.judge import JudgeRequest, JudgeResult, max_tokens_for
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.claim_check.check import ClaimCheck
from nexagauge_local.nodes.claim_check.prompt import render_claim_check
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.claims.node import META, NO_VERIFIABLE, ClaimsMeta
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import ClaimEntry, MetricResult, NodeReport, passed_for
from nexagauge_local.scoring.judge_scores import mean_or_none
from nexagauge_local.scoring.mode import ScoringMode

NO_CLAIMS = "no claims extracted from the output, nothing to judge"
CLAIMS = "claims"  # the parent node whose claims every check judges


class ClaimCheckNode(LLMNode[None, NodeReport]):
    """A per-claim check node: `claim_check_node` makes one subclass per check.

    One request per case judges all its claims at once; a case without claims (or evidence)
    asks nothing and gets a section saying why, and one whose output states no checkable fact
    gets none (skipped with NO_VERIFIABLE).
    """

    check: ClassVar[ClaimCheck]

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[None]] | None:
        meta: ClaimsMeta | None = state.artifacts.get(META)
        if not state.artifacts.get(CLAIMS) and meta is not None and meta.no_verifiable_claims:
            state.skipped[self.check.node] = NO_VERIFIABLE  # a finding about the output, not an error
            return None
        request = claims_request(self.check, state)
        return [] if request is None else [Ask(request, None)]

    def score_case(self, state: CaseState, answers: Answers[None]) -> NodeReport:
        knobs = state.case.settings(self.check.node, ScoringKnobs)
        result = answers.results[0] if answers.results else None
        return NodeReport(metrics=[_metric(self.check, state, knobs, result)], cost=answers.cost)


def claim_check_node(
    check: ClaimCheck, summary: str, order: int, module: str
) -> tuple[NodeSpec, type[ClaimCheckNode]]:
    """The SPEC and the class of a per-claim check node, both from `check`.

    The SPEC: a metric node under claims that needs the output and its evidence field, and
    owns a record block of the two scoring knobs. The class is named after the node
    (grounding -> GroundingNode); the caller's `module` must export it under that name, which
    is what the SPEC's `impl` points at (a mismatch fails when the node is loaded).
    """
    cls_name = "".join(part.title() for part in check.node.split("_")) + "Node"
    spec = NodeSpec(check.node, (CLAIMS,), ("output", check.evidence_field), "llm", summary,
                    order=order, impl=f"{module}:{cls_name}", metric=True, reported=True,
                    block_model=ScoringKnobs)
    node_cls = type(cls_name, (ClaimCheckNode,),
                    {"name": check.node, "check": check, "__module__": module,
                     "__doc__": f"{check.node}: {summary} (see claim_check)."})
    return spec, node_cls


def claim_entry(
    check: ClaimCheck, claim: str, item: Any, mode: ScoringMode, include_reasoning: bool
) -> ClaimEntry:
    """One claim's row in the metric result; the label derives from the claim's passed."""
    rating = mode.rating(item)
    score = mode.rating_score(item)
    ok = bool(passed_for(score))
    optional: dict[str, Any] = {}
    if rating is not None:
        optional["rating"] = rating
    if include_reasoning:
        optional["reasoning"] = item.reasoning
    return ClaimEntry(claim=claim, verdict=check.labels[0 if ok else 1], passed=ok, score=score,
                      **optional)


def claims_request(check: ClaimCheck, state: CaseState) -> JudgeRequest | None:
    """The case's one request (all its claims against the evidence), or None when there are
    no claims or no evidence (the metric then says which)."""
    k = state.case.settings(check.node, ScoringKnobs)
    claims: list[str] = state.artifacts.get(CLAIMS) or []
    evidence = state.case.field(check.evidence_field)
    if not claims or evidence is None:
        return None
    schema = claim_verdicts_schema(len(claims), k.scoring_mode, k.include_reasoning)
    return JudgeRequest(
        messages=render_claim_check(check, claims, evidence, k.scoring_mode, k.include_reasoning),
        schema=schema, max_tokens=max_tokens_for(schema), node=check.node,
        prompt_version=check.prompt_version, case_id=state.case.case_id, metric=check.node,
    )


def _metric(
    check: ClaimCheck, state: CaseState, knobs: ScoringKnobs, result: JudgeResult | None
) -> MetricResult:
    kind, category = check.node, check.category
    claims: list[str] = state.artifacts.get(CLAIMS) or []
    meta: ClaimsMeta | None = state.artifacts.get(META)
    extraction_error = meta.error_summary() if meta else None
    if result is None:  # nothing was asked: no claims (or, defensively, no evidence)
        reason = NO_CLAIMS if not claims else "no evidence text to judge against"
        if extraction_error:
            reason = f"{reason} ({extraction_error})"
        return MetricResult(name=kind, category=category, score=None, error=reason)
    if result.error or result.parsed is None:
        error = result.error or "no parse"
        return MetricResult(name=kind, category=category, score=None, error=error)
    rows = [claim_entry(check, c, item, knobs.scoring_mode, knobs.include_reasoning)
            for c, item in zip(claims, result.parsed.verdicts, strict=True)]  # type: ignore[attr-defined]
    score = mean_or_none([r.score for r in rows])
    # Claims lost in extraction leave the score partial: keep it, but say so as an error,
    # because an unexamined part of the output is not a pass.
    return MetricResult(name=kind, category=category, score=score, result=rows,
                        error=extraction_error, passed=passed_for(score))
