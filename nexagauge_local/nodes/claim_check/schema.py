"""The per-claim verdicts schema: exactly N rating answers, one per claim."""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge import (
    StrictSchema,
    bounded_list,
    cached_builder,
    reasoning_field,
    schema_suffix,
)
from nexagauge_local.scoring.mode import ScoringMode


@cached_builder
def _claim_item_schema(
    scoring_mode: ScoringMode, include_reasoning: bool, reasoning_chars: int
) -> type[BaseModel]:
    fields = {**reasoning_field(include_reasoning, reasoning_chars), **scoring_mode.rating_fields()}
    name = f"ClaimVerdict{schema_suffix(scoring_mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=StrictSchema, **fields)


@cached_builder
def claim_verdicts_schema(
    n: int,
    scoring_mode: ScoringMode | str = ScoringMode.BINARY,
    include_reasoning: bool = False,
    *,
    reasoning_chars: int = 200,
) -> type[BaseModel]:
    """One verdict per claim, exactly `n` of them (grounding, relevance)."""
    mode = ScoringMode.parse(scoring_mode)
    if n < 1:
        raise ValueError("claim_verdicts_schema needs n >= 1 (do not ask the judge about 0 claims)")
    item = _claim_item_schema(mode, include_reasoning, reasoning_chars)
    name = f"ClaimVerdicts{n}{schema_suffix(mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=StrictSchema, verdicts=(bounded_list(item, n, n), ...))
