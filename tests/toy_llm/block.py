"""The toy node's record block: the two scoring knobs plus a focus the judge checks."""

from __future__ import annotations

from pydantic import Field

from nexagauge_local.blocks import ScoringKnobs


class ToyBlock(ScoringKnobs):
    focus: str = Field(default="the question asked", min_length=1, max_length=80)
