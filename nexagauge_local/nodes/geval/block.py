"""The geval record block (docs/data-formats.md): metrics plus the two scoring knobs.

It lives with the node that owns it; the geval SPEC names it, and the graph hands it to the
record reader. geval_steps reads the same block.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from nexagauge_local.blocks import Block, ItemField, ScoringKnobs, output_only


class GevalMetric(Block):
    name: str = Field(min_length=1, max_length=200)
    item_fields: list[ItemField] = Field(default_factory=output_only, min_length=1)
    criteria: str | None = Field(default=None, min_length=1)
    evaluation_steps: list[str] | None = Field(default=None, min_length=1, max_length=20)

    @model_validator(mode="after")
    def _needs_criteria_or_steps(self) -> GevalMetric:
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("needs 'criteria' or 'evaluation_steps'")
        return self


class GevalBlock(ScoringKnobs):
    metrics: list[GevalMetric] = Field(min_length=1)
