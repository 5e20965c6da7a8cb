"""Claim extraction and per-claim verdict prompts (claims, grounding, relevance)."""

from __future__ import annotations

from typing import Literal

from nexagauge_local.blocks import ScoringMode
from nexagauge_local.judge.prompts.base import data_sections, messages, numbered
from nexagauge_local.judge.prompts.fence import fence
from nexagauge_local.judge.types import Messages

CLAIMS_VERSION = "claims/v1"
GROUNDING_VERSION = "grounding/v1"
RELEVANCE_VERSION = "relevance/v1"

MAX_CLAIMS_PER_CHUNK = 5

_CLAIMS_TASK = f"""\
Task: extract the checkable factual claims made in the passage (data section output_chunk).
- Each claim is atomic: exactly one fact.
- Each claim is self-contained: replace pronouns and references ("it", "they", "this tower") \
with what they refer to, using the preceding text (data section output_before) when needed.
- Each claim is checkable against evidence. Skip opinions, questions, greetings, instructions, \
advice and text with no factual content.
- At most {MAX_CLAIMS_PER_CHUNK} claims, the most important first; an empty list when the \
passage states no fact.
- Extract claims only from the passage, never from the preceding text, and write each as one \
short plain sentence in the passage's language.
Answer with:
- claims: the list of claims."""


def render_claims(chunk: str, preceding: str | None) -> Messages:
    """One refined output chunk; the previous chunk travels along only to resolve references."""
    return messages(
        _CLAIMS_TASK + "\n\n" + data_sections({"output_before": preceding, "output_chunk": chunk})
    )


CheckKind = Literal["grounding", "relevance"]

_CHECK = {
    "grounding": {
        "task": "Task: decide, for each numbered claim, whether the context supports it.",
        "evidence": "context",
        "binary": (
            '"yes" when the context states the claim or clearly implies it; "no" when the '
            "context contradicts it or does not contain it. Use only the context, not your own "
            "knowledge."
        ),
        "scale": (
            "5 = fully supported by the context, 4 = mostly supported, 3 = partly supported, "
            "2 = barely supported, 1 = not supported or contradicted. Use only the context, not "
            "your own knowledge."
        ),
    },
    "relevance": {
        "task": "Task: decide, for each numbered claim, whether it addresses the input.",
        "evidence": "input",
        "binary": (
            '"yes" when the claim helps answer or carry out the input; "no" when it is off '
            "topic or does not contribute. Judge relevance only, not truth."
        ),
        "scale": (
            "5 = directly answers the input, 4 = clearly relevant, 3 = partly relevant, "
            "2 = barely relevant, 1 = irrelevant. Judge relevance only, not truth."
        ),
    },
}


def render_claim_check(
    kind: CheckKind,
    claims: list[str],
    evidence: str,
    scoring_mode: ScoringMode,
    include_reasoning: bool,
) -> Messages:
    """Instructions first; the claim count, the evidence and the numbered claims last."""
    spec = _CHECK[kind]
    if scoring_mode == "scale_1_5":
        item = f"score from 1 to 5: {spec['scale']}"
    else:
        item = f"verdict: {spec['binary']}"
    lines = [
        spec["task"],
        "Answer with verdicts: one entry per claim, in the order of the claims, each with:",
    ]
    if include_reasoning:
        lines.append("- reasoning: one short sentence, written before the judgement.")
    lines += [
        f"- {item}",
        "",
        (f"The claims section holds {len(claims)} numbered claims; give exactly {len(claims)} "
        "entries."),
        data_sections({spec["evidence"]: evidence}),
        fence("claims", numbered(claims)),
    ]
    return messages("\n".join(lines))
