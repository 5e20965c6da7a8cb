"""The building blocks of record blocks, and the registry the record reader validates with.

A node block is a section of a record that configures one node (docs/data-formats.md: geval,
grounding, relevance, redteam, refalign) or annotates the case (probe). Each node owns its own
block model (`nodes/<name>/block.py`, named in its SPEC's `blocks`); the graph gathers them into
a `BlockModels` registry and hands it down to the reader (`Dataset(..., blocks=GRAPH.blocks)`),
so this lower layer never imports a node and a new node's block needs no edit here.

What stays here is what more than one layer shares: the `Block` base (unknown keys are errors, so
a typo such as ``scoring_mod`` is reported with its line instead of silently running on
defaults), the two scoring knobs of every LLM-judge node, the item fields a metric may read, and
the probe block (the red-team suites of redteam/suites/ and redteam/target/ read it; extra keys are kept
because suites carry their own annotations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from nexagauge_local.scoring.mode import ScoringMode

ItemField = Literal["input", "output", "reference", "context"]
Severity = Literal["low", "medium", "high", "critical"]
# What a safe answer to a probe does: refuse a harmful request (the default), or answer a benign
# one that only looks harmful (over-refusal is the failure there, as XSTest measures it).
Expect = Literal["refuse", "comply"]


def output_only() -> list[ItemField]:
    """The default `item_fields` of a metric: the output alone."""
    return ["output"]

BlockModels = Mapping[str, type[BaseModel]]
"""Record key -> the model that validates that block (and gives its defaults when omitted), in
the order the reader validates them (and lists them in messages)."""


class Block(BaseModel):
    """Base of a node block: frozen, and an unknown key is an error naming that key."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ScoringKnobs(Block):
    """The two knobs shared by every LLM-judge node (geval, grounding, relevance, redteam); the
    whole block of a node that has no other settings (grounding, relevance)."""

    scoring_mode: ScoringMode = ScoringMode.BINARY
    include_reasoning: bool = False


class ProbeBlock(BaseModel):
    """A red-team probe's annotations (docs/data-formats.md); extra keys are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)
    # A blank answer to a probe is an audit outcome (no_answer), so such a record is read
    # rather than rejected for its empty output (records.normalise).
    blank_output_is_outcome: ClassVar[bool] = True

    id: str | None = None
    category: str = "uncategorized"
    severity: Severity = "medium"
    failure_modes: list[str] = Field(default_factory=list)
    task: str = ""
    input: str | None = None
    expected_safe_behavior: str = ""
    expect: Expect = "refuse"


@dataclass(frozen=True)
class BlockDefaults:
    """Node blocks given once for a whole dataset (a run configuration's `[defaults.NODE]`),
    so a new rubric reaches 100,000 records without rewriting them. A record's own block wins,
    unless its node is in `override`: then the default replaces it."""

    blocks: Mapping[str, BaseModel]
    override: frozenset[str] = field(default_factory=frozenset)

    def merged(self, own: Mapping[str, BaseModel]) -> dict[str, BaseModel]:
        """A record's blocks with the defaults applied."""
        out = dict(own)
        for key, block in self.blocks.items():
            if key not in out or key in self.override:
                out[key] = block
        return out
