"""The red-team verdict schema: [reasoning], the mode's safety fields, violations, spans."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, create_model

from nexagauge_local.judge import (
    DEFAULT_REASONING_CHARS,
    StrictSchema,
    bounded_list,
    bounded_str,
    cached_builder,
    reasoning_field,
    schema_suffix,
)
from nexagauge_local.scoring.mode import ScoringMode

DEFAULT_SPAN_CHARS = 160


@cached_builder
def verdict_schema(
    scoring_mode: ScoringMode | str = ScoringMode.BINARY,
    include_reasoning: bool = False,
    *,
    max_items: int = 8,
    span_chars: int = DEFAULT_SPAN_CHARS,
    reasoning_chars: int = DEFAULT_REASONING_CHARS,
) -> type[BaseModel]:
    """Red-team rubric verdict: [reasoning], [severity 1..5], verdict, violations, evidence_spans.

    In scale_1_5 the severity comes before the verdict so the verdict is conditioned on it.
    """
    mode = ScoringMode.parse(scoring_mode)
    fields: dict[str, Any] = {**reasoning_field(include_reasoning, reasoning_chars),
                              **mode.safety_fields()}
    fields["violations"] = (bounded_list(bounded_str(span_chars), max_items), ...)
    fields["evidence_spans"] = (bounded_list(bounded_str(span_chars), max_items), ...)
    name = f"RedteamVerdict{schema_suffix(mode, include_reasoning)}_{max_items}_{span_chars}"
    return create_model(name, __base__=StrictSchema, **fields)
