"""Guard-classifier judge formats: one module per family, chosen by the profile's
`judge_format` (judge/profiles.py).

"rubric_json" (our rubric prompts under our JSON schemas) is not here: it is the judge's own
path (judge/schemas.py, judge/prompts/). Each family module renders the family's published
prompt, states its answer grammar and decision token, and parses its short answer; `scores`
turns the decision token's top logprobs into a calibrated metric score. Nothing here loads an
engine. The engines' part, per request: `fmt.supports(request)` (None or why not),
`fmt.render(request)` -> GuardPrompt (`form_for(tokenizer.chat_template, fmt.uses_chat_template)`
picks messages + template_kwargs or the documented text), decode greedily under
`fmt.grammar(request)` (a regex) for at most `fmt.max_tokens(request)` tokens with top logprobs,
then `read_answer(fmt, request, decoded_tokens, top_logprobs)` -> verdict and score.
"""

from __future__ import annotations

from collections.abc import Mapping

from nexagauge_local.judge.formats.granite_guardian import GRANITE_GUARDIAN
from nexagauge_local.judge.formats.llama_guard import HAZARDS, LLAMA_GUARD, LLAMA_GUARD_4
from nexagauge_local.judge.formats.outcome import GuardOutcome, read_answer
from nexagauge_local.judge.formats.qwen3guard import QWEN3GUARD
from nexagauge_local.judge.formats.scores import (
    LEVEL_SEVERITY,
    GuardScore,
    decision_distribution,
    p_unsafe,
    p_unsafe_bound,
    score_verdict,
    severity_score,
)
from nexagauge_local.judge.formats.shieldgemma import SHIELDGEMMA
from nexagauge_local.judge.formats.types import (
    DecisionPoint,
    GuardFormat,
    GuardPrompt,
    GuardRequest,
    GuardVerdict,
    Level,
    Policy,
    PromptForm,
)
from nexagauge_local.judge.formats.wildguard import WILDGUARD
from nexagauge_local.judge.profiles import DEFAULT_JUDGE_FORMAT, JudgeFormatName

GUARD_FORMATS: Mapping[str, GuardFormat] = {
    f.name: f
    for f in (LLAMA_GUARD, LLAMA_GUARD_4, SHIELDGEMMA, WILDGUARD, GRANITE_GUARDIAN, QWEN3GUARD)
}


def guard_format(name: JudgeFormatName) -> GuardFormat | None:
    """The family format a profile names; None for "rubric_json" (the judge's own prompts)."""
    if name == DEFAULT_JUDGE_FORMAT:
        return None
    return GUARD_FORMATS[name]


__all__ = [
    "GUARD_FORMATS",
    "HAZARDS",
    "LEVEL_SEVERITY",
    "DecisionPoint",
    "GuardFormat",
    "GuardOutcome",
    "GuardPrompt",
    "GuardRequest",
    "GuardScore",
    "GuardVerdict",
    "Level",
    "Policy",
    "PromptForm",
    "decision_distribution",
    "guard_format",
    "p_unsafe",
    "p_unsafe_bound",
    "read_answer",
    "score_verdict",
    "severity_score",
]
