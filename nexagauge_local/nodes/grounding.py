"""grounding: is each extracted claim supported by the case's context (see claim_check)."""

from __future__ import annotations

from nexagauge_local.nodes.claim_check import claim_check_node
from nexagauge_local.nodes.claim_check.check import ClaimCheck

CHECK = ClaimCheck(
    node="grounding",
    evidence_field="context",
    task="Task: decide, for each numbered claim, whether the context supports it.",
    yes_no=(
        '"yes" when the context states the claim or clearly implies it; "no" when the '
        "context contradicts it or does not contain it. Use only the context, not your own "
        "knowledge."
    ),
    scale=(
        "5 = fully supported by the context, 4 = mostly supported, 3 = partly supported, "
        "2 = barely supported, 1 = not supported or contradicted. Use only the context, not "
        "your own knowledge."
    ),
    labels=("supported", "not_supported"),
    prompt_version="grounding/v1",
)
PROMPT_VERSION = CHECK.prompt_version
SPEC, GroundingNode = claim_check_node(CHECK, "per claim: is it supported by the context", order=5,
                                      module=__name__)
