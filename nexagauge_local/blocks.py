"""Node blocks a record may carry, validated at the boundary.

The shapes and defaults follow shared/spec/data-schema.md exactly. Blocks forbid unknown keys so a
typo such as ``scoring_mod`` is reported with its line instead of silently running on defaults;
the probe block is the exception because red-team suites carry their own annotations.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nexagauge_local.scoring.mode import ScoringMode

ItemField = Literal["input", "output", "reference", "context"]
Severity = Literal["low", "medium", "high", "critical"]


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScoringKnobs(_Block):
    """The two knobs shared by every LLM-judge node (geval, grounding, relevance, redteam)."""

    scoring_mode: ScoringMode = ScoringMode.BINARY
    include_reasoning: bool = False


class GroundingBlock(ScoringKnobs):
    pass


class RelevanceBlock(ScoringKnobs):
    pass


class GevalMetric(_Block):
    name: str = Field(min_length=1, max_length=200)
    item_fields: list[ItemField] = Field(default_factory=lambda: ["output"], min_length=1)
    criteria: str | None = Field(default=None, min_length=1)
    evaluation_steps: list[str] | None = Field(default=None, min_length=1, max_length=20)

    @model_validator(mode="after")
    def _needs_criteria_or_steps(self) -> GevalMetric:
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("needs 'criteria' or 'evaluation_steps'")
        return self


class GevalBlock(ScoringKnobs):
    metrics: list[GevalMetric] = Field(min_length=1)


class Rubric(_Block):
    goal: str = Field(min_length=1)
    violations: list[str] = Field(default_factory=list)
    non_violations: list[str] = Field(default_factory=list)


class RedteamMetric(_Block):
    name: str = Field(min_length=1, max_length=200)
    item_fields: list[ItemField] = Field(default_factory=lambda: ["output"], min_length=1)
    rubric: Rubric


class RedteamBlock(ScoringKnobs):
    metrics: list[RedteamMetric] = Field(default_factory=list)


class RefalignBlock(_Block):
    """Embedding alignment of output units to reference units: nexa-gauge's refalign block.

    The keys and defaults are nexa-gauge's (ng_core.types.Refalign), so its records run
    unchanged: `atomic_chunks` (false) has the judge split both sides into atomic factual units
    first (precision/recall/F1 then measure one-to-one claim coverage), `similarity_threshold`
    (0.6) is the cosine a matched pair must reach, and `refine_top_k` (none) keeps at most k
    REFERENCE units by MMR; nexa-gauge's reference refiner is the only place it applies. `top_k`,
    this project's earlier name, is accepted for it; giving both is an error rather than a
    silent choice of one.
    """

    atomic_chunks: bool = False
    similarity_threshold: float = Field(default=0.6, ge=0.0, le=1.0)
    refine_top_k: int | None = Field(
        default=None, ge=1, description="keep at most k reference units (MMR)"
    )
    # Declared (not renamed before validation) so an error names the key the record used.
    top_k: int | None = Field(default=None, ge=1, exclude=True, repr=False,
                              description="alias of refine_top_k")

    @model_validator(mode="after")
    def _top_k_alias(self) -> RefalignBlock:
        if "top_k" in self.model_fields_set:
            if "refine_top_k" in self.model_fields_set:
                raise ValueError("give refine_top_k or its alias top_k, not both")
            # one canonical block whichever name was used (case digests, equality)
            object.__setattr__(self, "refine_top_k", self.top_k)
            object.__setattr__(self, "top_k", None)
            self.__pydantic_fields_set__ = (self.model_fields_set - {"top_k"}) | {"refine_top_k"}
        return self


class ProbeBlock(BaseModel):
    """A red-team probe's annotations (DESIGN.md section 5); extra keys are kept."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str | None = None
    category: str = "uncategorized"
    severity: Severity = "medium"
    failure_modes: list[str] = Field(default_factory=list)
    task: str = ""
    input: str | None = None
    expected_safe_behavior: str = ""


BLOCK_MODELS: dict[str, type[BaseModel]] = {
    "geval": GevalBlock,
    "grounding": GroundingBlock,
    "relevance": RelevanceBlock,
    "redteam": RedteamBlock,
    "refalign": RefalignBlock,
    "probe": ProbeBlock,
}
