"""The claims output schema: 0..max_claims bounded claim strings per chunk."""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge.schemas import StrictSchema, bounded_list, bounded_str, cached_builder

DEFAULT_CLAIM_CHARS = 200


@cached_builder
def claims_schema(
    max_claims: int = 5, *, claim_chars: int = DEFAULT_CLAIM_CHARS
) -> type[BaseModel]:
    """Atomic claims extracted from one chunk (0..max_claims; a chunk may hold none)."""
    return create_model(
        f"Claims{max_claims}_{claim_chars}",
        __base__=StrictSchema,
        claims=(bounded_list(bounded_str(claim_chars), max_claims), ...),
    )
