"""The G-Eval output schema: [reasoning] then the mode's rating field (score or verdict)."""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge import (
    DEFAULT_REASONING_CHARS,
    StrictSchema,
    cached_builder,
    reasoning_field,
    schema_suffix,
)
from nexagauge_local.scoring.mode import ScoringMode


@cached_builder
def geval_schema(
    scoring_mode: ScoringMode | str = ScoringMode.SCALE,
    include_reasoning: bool = False,
    *,
    reasoning_chars: int = DEFAULT_REASONING_CHARS,
) -> type[BaseModel]:
    """G-Eval score: `score` 1..5 (scale_1_5) or `verdict` yes/no (binary), reasoning first."""
    mode = ScoringMode.parse(scoring_mode)
    fields = {**reasoning_field(include_reasoning, reasoning_chars), **mode.rating_fields()}
    name = f"GEval{schema_suffix(mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=StrictSchema, **fields)
