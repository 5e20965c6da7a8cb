"""The G-Eval prompt: score a case against a metric's criterion and evaluation steps.

Bump PROMPT_VERSION whenever the text changes: it is part of the judge cache key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nexagauge_local.judge import Messages
from nexagauge_local.judge.prompts import REASONING_LINE, data_sections, escape, messages
from nexagauge_local.scoring.mode import ScoringMode

PROMPT_VERSION = "geval/v1"

_YES_NO = '"yes" when the material meets the criterion, otherwise "no".'
_SCALE = ("1 = does not meet the criterion at all, 2 = mostly fails, 3 = partly meets, "
          "4 = mostly meets, 5 = fully meets.")


def render_geval(
    name: str,
    criteria: str | None,
    steps: Sequence[str],
    fields: Mapping[str, str | None],
    scoring_mode: ScoringMode,
    include_reasoning: bool,
) -> Messages:
    """Metric, criterion and steps first (shared across cases), the fenced fields last."""
    lines = [f"Task: evaluate the material for the metric '{escape(name)}'."]
    if criteria:
        lines.append(f"Criterion: {escape(' '.join(criteria.split()))}")
    lines.append("Follow these evaluation steps:")
    lines += [f"{i}. {escape(' '.join(s.split()))}" for i, s in enumerate(steps, 1)]
    lines.append("Answer with:")
    if include_reasoning:
        lines.append(REASONING_LINE)
    lines += [
        ScoringMode.parse(scoring_mode).rating_line(_YES_NO, _SCALE),
        "",
        "Material (fields: " + ", ".join(fields) + "):",
        data_sections(fields),
    ]
    return messages("\n".join(lines))
