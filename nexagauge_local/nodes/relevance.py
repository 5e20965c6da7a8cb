"""relevance: does each extracted claim address the case's input (see claim_check)."""

from __future__ import annotations

from nexagauge_local.nodes.claim_check import claim_check_node
from nexagauge_local.nodes.claim_check.check import ClaimCheck

CHECK = ClaimCheck(
    node="relevance",
    evidence_field="input",
    task="Task: decide, for each numbered claim, whether it addresses the input.",
    yes_no=(
        '"yes" when the claim helps answer or carry out the input; "no" when it is off '
        "topic or does not contribute. Judge relevance only, not truth."
    ),
    scale=(
        "5 = directly answers the input, 4 = clearly relevant, 3 = partly relevant, "
        "2 = barely relevant, 1 = irrelevant. Judge relevance only, not truth."
    ),
    labels=("relevant", "not_relevant"),
    prompt_version="relevance/v1",
)
PROMPT_VERSION = CHECK.prompt_version
SPEC, RelevanceNode = claim_check_node(CHECK, "per claim: does it address the input", order=4,
                                      module=__name__)
