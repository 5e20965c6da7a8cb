"""The redteam record block (docs/data-formats.md): custom rubric metrics merged with
the defaults by name, plus the two scoring knobs.

It lives with the node that owns it; the redteam SPEC names it (and the probe block, which the
heuristic layer reads), and the graph hands both to the record reader.
"""

from __future__ import annotations

from pydantic import Field

from nexagauge_local.blocks import Block, ItemField, ScoringKnobs, output_only


class Rubric(Block):
    goal: str = Field(min_length=1)
    violations: list[str] = Field(default_factory=list)
    non_violations: list[str] = Field(default_factory=list)


class RedteamMetric(Block):
    name: str = Field(min_length=1, max_length=200)
    item_fields: list[ItemField] = Field(default_factory=output_only, min_length=1)
    rubric: Rubric


class RedteamBlock(ScoringKnobs):
    metrics: list[RedteamMetric] = Field(default_factory=list)
