"""The claims output schema (v2): one sentence's kind and, for "facts", its split claims."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, create_model

from nexagauge_local.judge import StrictSchema, bounded_list, bounded_str, cached_builder

DEFAULT_CLAIM_CHARS = 200
SentenceKind = Literal["fact", "facts", "none"]


@cached_builder
def sentence_claims_schema(
    max_claims: int = 3, *, claim_chars: int = DEFAULT_CLAIM_CHARS
) -> type[BaseModel]:
    """kind + 0..max_claims claims. One schema for every sentence, so the grammar engine
    compiles it once (a schema per sentence count would compile one index per count)."""
    return create_model(
        f"SentenceClaims{max_claims}_{claim_chars}",
        __base__=StrictSchema,
        kind=(SentenceKind, ...),
        claims=(bounded_list(bounded_str(claim_chars), max_claims), ...),
    )
