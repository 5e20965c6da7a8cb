"""ClaimCheck: what distinguishes one per-claim check node (grounding, relevance) from another.

Its own module so the shared logic (the package) and the prompt can both depend on it without
depending on each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimCheck:
    """One per-claim check node: its name, the evidence it judges against and its wording."""

    node: str  # the node's name, written only here: its SPEC, class and block key follow
    evidence_field: str  # the case field shown as evidence (also the data section's name)
    task: str
    yes_no: str  # what "yes" / "no" mean (binary_yes_no)
    scale: str  # what 1..5 mean (scale_1_5)
    labels: tuple[str, str]  # the row verdict when a claim passes / fails
    prompt_version: str

    @property
    def category(self) -> str:
        """The metric's category: the output judged against the evidence field."""
        return f"output|{self.evidence_field}"
