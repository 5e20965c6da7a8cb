"""The claims prompt and schema claims/v2 replaced (claims/v1), kept for scripts/bench_claims.py
only: the benchmark measures the demo judge's claims yield with both, side by side. Verbatim
from nexagauge_local/nodes/claims/ at commit 9e0095e; not used by the product."""

from __future__ import annotations

from pydantic import BaseModel, create_model

from nexagauge_local.judge.prompts.base import data_sections, messages
from nexagauge_local.judge.schemas import StrictSchema, bounded_list, bounded_str
from nexagauge_local.judge.types import Messages

PROMPT_VERSION = "claims/v1"
MAX_CLAIMS_PER_CHUNK = 5

_CLAIMS_TASK = f"""\
Task: extract the checkable factual claims made in the passage (data section output_chunk).
- Each claim is atomic: exactly one fact.
- Each claim is self-contained: replace pronouns and references ("it", "they", "this tower") \
with what they refer to, using the preceding text (data section output_before) when needed.
- Each claim is checkable against evidence. Skip opinions, questions, greetings, instructions, \
advice and text with no factual content.
- At most {MAX_CLAIMS_PER_CHUNK} claims, the most important first; an empty list when the \
passage states no fact.
- Extract claims only from the passage, never from the preceding text, and write each as one \
short plain sentence in the passage's language.
Answer with:
- claims: the list of claims."""


def render_claims(chunk: str, preceding: str | None) -> Messages:
    return messages(
        _CLAIMS_TASK + "\n\n" + data_sections({"output_before": preceding, "output_chunk": chunk})
    )


def claims_schema(max_claims: int = MAX_CLAIMS_PER_CHUNK, claim_chars: int = 200) -> type[BaseModel]:
    return create_model(
        f"Claims{max_claims}_{claim_chars}",
        __base__=StrictSchema,
        claims=(bounded_list(bounded_str(claim_chars), max_claims), ...),
    )
