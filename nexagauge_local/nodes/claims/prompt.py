"""The claims prompt: atomic, checkable claims from one refined output chunk.

Bump PROMPT_VERSION whenever the text changes: it is part of the judge cache key, so answers to
the old wording are not reused for the new one.
"""

from __future__ import annotations

from nexagauge_local.judge.prompts.base import data_sections, messages
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
    """One refined output chunk; the previous chunk travels along only to resolve references."""
    return messages(
        _CLAIMS_TASK + "\n\n" + data_sections({"output_before": preceding, "output_chunk": chunk})
    )
