"""The atomic-units prompt: the atomic factual units of one refined chunk of either side.

The same wording serves the output and the reference (nexa-gauge names the side; here it is
left out) so a sentence both texts share is split the same way on both sides, which is what
one-to-one matching needs, and so both sides' prompts share their leading tokens.

Bump PROMPT_VERSION whenever the text changes: it is part of the judge cache key, so answers to
the old wording are not reused for the new one.
"""

from __future__ import annotations

from nexagauge_local.judge import Messages
from nexagauge_local.judge.prompts import data_sections, messages

PROMPT_VERSION = "atomic_units/v1"

MAX_UNITS_PER_CHUNK = 8

_UNITS_TASK = f"""\
Task: decompose the passage (data section text_chunk) into atomic factual or requirement units.
- Each unit is the smallest independent statement that keeps its meaning: split a sentence \
that states several facts, but do not split on every word or phrase.
- Each unit is self-contained: replace pronouns and references ("it", "they", "this tower") \
with what they refer to, using the preceding text (data section text_before) when needed.
- Do not invent facts, and take units only from the passage, never from the preceding text.
- Write each unit as one short plain statement in the passage's language, in the passage's \
order; at most {MAX_UNITS_PER_CHUNK} units. A passage with no factual statement is one unit: \
its main point.
Answer with:
- units: the list of units."""


def render_units(chunk: str, preceding: str | None) -> Messages:
    """One refined chunk; the previous chunk of the same text travels along only to resolve
    references."""
    return messages(
        _UNITS_TASK + "\n\n" + data_sections({"text_before": preceding, "text_chunk": chunk})
    )
