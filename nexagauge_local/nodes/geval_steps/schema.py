"""The G-Eval steps output schema: min..max bounded step strings."""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge import StrictSchema, bounded_list, bounded_str, cached_builder

DEFAULT_STEP_CHARS = 200


@cached_builder
def steps_schema(
    min_steps: int = 2, max_steps: int = 5, *, step_chars: int = DEFAULT_STEP_CHARS
) -> type[BaseModel]:
    """Evaluation steps generated from a G-Eval metric's criteria."""
    return create_model(
        f"GEvalSteps{min_steps}_{max_steps}_{step_chars}",
        __base__=StrictSchema,
        steps=(bounded_list(bounded_str(step_chars), max_steps, min_steps), ...),
    )
