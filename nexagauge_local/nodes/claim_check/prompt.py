"""The per-claim verdict prompt shared by grounding and relevance.

Each check supplies its own task and answer wording (ClaimCheck); the layout, and so every
rendered prompt, is the same for both.
"""

from __future__ import annotations

from nexagauge_local.judge import Messages
from nexagauge_local.judge.prompts import data_sections, fence, messages, numbered
from nexagauge_local.nodes.claim_check.check import ClaimCheck
from nexagauge_local.scoring.mode import ScoringMode


def render_claim_check(
    check: ClaimCheck,
    claims: list[str],
    evidence: str,
    scoring_mode: ScoringMode,
    include_reasoning: bool,
) -> Messages:
    """Instructions first; the claim count, the evidence and the numbered claims last."""
    lines = [
        check.task,
        "Answer with verdicts: one entry per claim, in the order of the claims, each with:",
    ]
    if include_reasoning:
        lines.append("- reasoning: one short sentence, written before the judgement.")
    lines += [
        ScoringMode.parse(scoring_mode).rating_line(check.yes_no, check.scale),
        "",
        (f"The claims section holds {len(claims)} numbered claims; give exactly {len(claims)} "
        "entries."),
        data_sections({check.evidence_field: evidence}),
        fence("claims", numbered(claims)),
    ]
    return messages("\n".join(lines))
