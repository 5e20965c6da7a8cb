"""claims: the checkable claims of every output, one judge request per sentence (one call per
shard).

Each sentence of the refined output chunks is its own request (sentence_claims_schema), with up
to two preceding sentences shown only to resolve references. "fact" makes the sentence itself
the claim, "facts" its split claims (the sentence if the judge gave none), "none" nothing.
Claims are deduplicated across the case by normalised text. `artifacts["claims"]` is the
case's Claims (a list of str that also carries its report section); `artifacts[META]` what
grounding and relevance need to explain an empty or partial list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from nexagauge_local.judge import JudgeRequest, JudgeResult, max_tokens_for
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.chunk import sentences as split_sentences
from nexagauge_local.nodes.claims import SPEC
from nexagauge_local.nodes.claims.prompt import (
    CONTEXT_SENTENCES,
    MAX_CLAIMS_PER_SENTENCE,
    PROMPT_VERSION,
    render_sentence,
)
from nexagauge_local.nodes.claims.schema import sentence_claims_schema
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from nexagauge_local.nodes.refiner import Refined
from nexagauge_local.results import NodeCost
from nexagauge_local.scoring.judge_scores import dedupe_claims

META = "claims_meta"
NO_VERIFIABLE = "no verifiable claims: every sentence of the output was judged to state no checkable fact"


@dataclass
class SentenceClaims:
    sentence: str
    kind: str | None  # fact | facts | none; None when the judge failed on it
    claims: list[str]
    error: str | None = None


@dataclass
class ClaimsMeta:
    """Side information of one case's extraction."""

    sentences: list[SentenceClaims] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # distinct sentence errors, first seen first
    cost: NodeCost = field(default_factory=NodeCost)

    @property
    def failed(self) -> int:
        return sum(s.kind is None for s in self.sentences)

    @property
    def no_verifiable_claims(self) -> bool:
        """Every sentence answered, and every answer "none": a finding, not a failure."""
        return bool(self.sentences) and all(s.kind == "none" for s in self.sentences)

    def error_summary(self) -> str | None:
        if not self.failed:
            return None
        return (f"claim extraction failed for {self.failed} of {len(self.sentences)} sentences: "
                + "; ".join(self.errors))  # fmt: skip

    def status(self, n_claims: int) -> str:
        """Why a case has the claims it has: claims | no verifiable claims | judge error |
        no output."""
        if n_claims:
            return "claims"
        if not self.sentences:
            return "no output"
        return "no verifiable claims" if self.no_verifiable_claims else "judge error"


class Claims(list[str]):
    """The case's claims (what grounding and relevance judge) plus its case-report section."""

    def __init__(self, claims: list[str], meta: ClaimsMeta) -> None:
        super().__init__(claims)
        self.meta = meta

    def report_dict(self) -> dict[str, Any]:
        meta = self.meta
        out: dict[str, Any] = {
            "status": meta.status(len(self)),
            "prompt_version": PROMPT_VERSION,
            "claims": list(self),
            "sentences": [_sentence_dict(s) for s in meta.sentences],
            "cost": meta.cost.model_dump(),
        }
        error = meta.error_summary()
        if error:
            out["error"] = error
        return out


def _sentence_dict(s: SentenceClaims) -> dict[str, Any]:
    out: dict[str, Any] = {"sentence": s.sentence, "kind": s.kind, "claims": s.claims}
    if s.error:
        out["error"] = s.error
    return out


def output_chunks(state: CaseState) -> list[str]:
    refined = state.artifacts.get("refiner", {}).get("output")
    if isinstance(refined, Refined):
        return list(refined.texts)
    return [state.case.output] if state.case.field("output") else []


def chunk_sentences(chunks: Sequence[str]) -> list[str]:
    """The sentences of the chunks, in order (a chunk pysbd cannot split is one)."""
    out: list[str] = []
    for chunk in chunks:
        out.extend(split_sentences(chunk) or [chunk.strip()])
    return [s for s in out if s]


def output_sentences(state: CaseState) -> list[str]:
    return chunk_sentences(output_chunks(state))


def sentence_requests(sents: Sequence[str], case_id: str = "") -> list[JudgeRequest]:
    """One request per sentence, with up to CONTEXT_SENTENCES preceding ones as context."""
    schema = sentence_claims_schema(MAX_CLAIMS_PER_SENTENCE)
    max_tokens = max_tokens_for(schema)
    return [
        JudgeRequest(messages=render_sentence(s, " ".join(sents[max(0, i - CONTEXT_SENTENCES) : i])
                                              or None),
                     schema=schema, max_tokens=max_tokens, node="claims",
                     prompt_version=PROMPT_VERSION, case_id=case_id, metric=f"sentence {i + 1}")
        for i, s in enumerate(sents)
    ]  # fmt: skip


def sentence_claims(sentence: str, result: JudgeResult) -> SentenceClaims:
    if result.error or result.parsed is None:
        return SentenceClaims(sentence, None, [], result.error or "no parse")
    kind: str = result.parsed.kind  # type: ignore[attr-defined]
    split: list[str] = list(result.parsed.claims)  # type: ignore[attr-defined]
    if kind == "none":
        return SentenceClaims(sentence, kind, [])
    if kind == "fact" or not split:
        return SentenceClaims(sentence, kind, [" ".join(sentence.split())])
    return SentenceClaims(sentence, kind, split)


class ClaimsNode(LLMNode[str, Claims]):
    name = SPEC.name

    def __init__(self) -> None:
        self._cases = 0
        self._claims: list[int] = []
        self._status: Counter[str] = Counter()
        self._kinds: Counter[str] = Counter()

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[str]]:
        """One request per sentence of the refined output, about that sentence."""
        sents = output_sentences(state)
        return [Ask(req, s) for req, s in
                zip(sentence_requests(sents, state.case.case_id), sents, strict=True)]

    def score_case(self, state: CaseState, answers: Answers[str]) -> Claims:
        """The case's deduplicated claims; its ClaimsMeta also goes to `artifacts[META]`."""
        meta = ClaimsMeta(cost=answers.cost)
        for sentence, res in answers.pairs:
            sc = sentence_claims(sentence, res)
            meta.sentences.append(sc)
            if sc.error and sc.error not in meta.errors:
                meta.errors.append(sc.error)
        claims = Claims(dedupe_claims(c for s in meta.sentences for c in s.claims), meta)
        state.artifacts[META] = meta
        self._tally(claims)
        return claims

    def _tally(self, claims: Claims) -> None:
        self._cases += 1
        self._claims.append(len(claims))
        self._status[claims.meta.status(len(claims))] += 1
        self._kinds.update(s.kind or "failed" for s in claims.meta.sentences)

    def finalize(self) -> dict[str, Any]:
        """metrics/claims.json: the yield of the extraction over the whole run."""
        if not self._cases:
            return {}
        with_claims = self._status["claims"]
        return {
            "prompt_version": PROMPT_VERSION,
            "cases": self._cases,
            "claims": sum(self._claims),
            "claims_per_case": fmean(self._claims),
            "cases_with_claims": with_claims,
            "share_with_claims": with_claims / self._cases,
            "cases_without_claims": {k: v for k, v in self._status.items() if k != "claims"},
            "sentences": dict(self._kinds),
        }
