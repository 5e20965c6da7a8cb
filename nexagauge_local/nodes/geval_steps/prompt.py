"""The G-Eval steps prompt: evaluation steps from a metric's criteria (case-independent).

Bump PROMPT_VERSION whenever the text changes: it is part of the judge cache key.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.judge import Messages
from nexagauge_local.judge.prompts import escape, messages

PROMPT_VERSION = "geval_steps/v1"

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
