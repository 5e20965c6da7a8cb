"""G-Eval prompts: evaluation steps from criteria (case-independent) and scoring a case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nexagauge_local.blocks import ScoringMode
from nexagauge_local.judge.prompts.base import REASONING_LINE, data_sections, messages
from nexagauge_local.judge.prompts.fence import escape
from nexagauge_local.judge.types import Messages

STEPS_VERSION = "geval_steps/v1"
GEVAL_VERSION = "geval/v1"

MIN_STEPS, MAX_STEPS = 2, 5


def render_steps(criteria: str, item_fields: Sequence[str]) -> Messages:
    """Only the criteria and the field *names*: steps must not depend on any case's values,
    which is what lets one answer serve every case (and the cache serve every run)."""
    user = "\n".join([
        "Task: turn an evaluation criterion into concrete evaluation steps.",
        f"Criterion: {escape(' '.join(criteria.split()))}",
        "An evaluator will apply the steps to each case, seeing these fields: "
        + ", ".join(item_fields) + ".",
        (f"Write {MIN_STEPS} to {MAX_STEPS} short, concrete, ordered steps that refer to the fields "
        "by name and together decide how well a case meets the criterion. Do not assume any "
        "particular case."),
        "Answer with:",
        "- steps: the list of steps.",
    ])
    return messages(user)


_MODE = {
    "binary_yes_no": '- verdict: "yes" when the material meets the criterion, otherwise "no".',
    "scale_1_5": (
        "- score from 1 to 5: 1 = does not meet the criterion at all, 2 = mostly fails, "
        "3 = partly meets, 4 = mostly meets, 5 = fully meets."
    ),
}


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
        _MODE[scoring_mode],
        "",
        "Material (fields: " + ", ".join(fields) + "):",
        data_sections(fields),
    ]
    return messages("\n".join(lines))
