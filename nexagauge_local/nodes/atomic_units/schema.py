"""The atomic-units output schema: 1..max_units bounded unit strings per chunk.

At least one unit: a chunk always says something, and an empty list would leave that part of
the text out of precision or recall without any error to show for it.
"""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge import StrictSchema, bounded_list, bounded_str, cached_builder

DEFAULT_UNIT_CHARS = 200


@cached_builder
def units_schema(max_units: int = 8, *, unit_chars: int = DEFAULT_UNIT_CHARS) -> type[BaseModel]:
    """Atomic units of one chunk (1..max_units)."""
    return create_model(
        f"AtomicUnits{max_units}_{unit_chars}",
        __base__=StrictSchema,
        units=(bounded_list(bounded_str(unit_chars), max_units, min_items=1), ...),
    )
