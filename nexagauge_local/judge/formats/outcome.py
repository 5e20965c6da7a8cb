"""From an engine's answer to a verdict and a score: the one call the engines make per answer.

Why here and not in each engine: hf and vLLM both hand back the generated tokens' decoded
text and, per position, the top logprobs as token text -> logprob. Finding the decision
position, parsing and scoring are the same for both, and pure, so they live once beside the
formats and are tested without a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nexagauge_local.judge.formats.scores import GuardScore, score_verdict
from nexagauge_local.judge.formats.types import GuardFormat, GuardRequest, GuardVerdict


@dataclass(frozen=True)
class GuardOutcome:
    verdict: GuardVerdict
    score: GuardScore | None  # None when the answer is malformed (verdict.error says why)
    decision_index: int | None  # the generated token read for the probability


def read_answer(
    fmt: GuardFormat,
    request: GuardRequest,
    answer_tokens: Sequence[str],
    top_logprobs: Sequence[Mapping[str, float]] | None = None,
) -> GuardOutcome:
    """Parse the answer (the decoded generated tokens, in order) and score it from the top
    logprobs at its decision token; without logprobs (or the decision token out of their
    range) the score comes from the parsed decision and says so."""
    verdict = fmt.parse("".join(answer_tokens), request)
    if not verdict.ok:
        return GuardOutcome(verdict, None, None)
    point = fmt.decision(request)
    index = point.token_index(answer_tokens)
    logprobs = (top_logprobs[index]
                if top_logprobs is not None and index is not None and index < len(top_logprobs)
                else None)
    return GuardOutcome(verdict, score_verdict(verdict, logprobs, point), index)
