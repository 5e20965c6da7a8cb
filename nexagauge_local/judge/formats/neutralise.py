"""Untrusted text inside a guard family's prompt, and rubric text inside its policy slot.

Why: guard prompts have no fence of ours; each family delimits the conversation with its own
markers (Llama Guard's `<END CONVERSATION>`, Granite Guardian's `<end_of_conversation>`,
WildGuard's `---` and `Answers:`) and role labels at the start of a line (`Agent:`,
`Chatbot Response:`). An evaluated response that closes the conversation and opens a fake
policy, or adds a harmless `Agent:` turn after a harmful one (Llama Guard judges only the LAST
Agent message), would change the verdict. So, on top of the fence escape every judge prompt
uses (`judge.prompts.escape`: NFKC and invisible characters first, so lookalikes become the
ASCII marker; chat-template control tokens such as `<|eot_id|>` and `<start_of_turn>`
broken), each family marker found anywhere and each role label found at a line start is broken
with a space after its first character, as the fence escape breaks `[INST]` into `[ INST]`.
The escape is deterministic, so the same case renders the same prompt and the cache keeps
hitting; the text stays readable to the judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from nexagauge_local.judge.formats.types import GuardRequest, Policy
from nexagauge_local.judge.prompts import escape
from nexagauge_local.judge.types import Messages


def neutraliser(markers: Iterable[str], line_labels: Iterable[str] = ()) -> re.Pattern[str]:
    """One pattern for a family: its markers anywhere, its role labels after a line start
    (spaces before them allowed: a model reads an indented label as a label too)."""
    parts = [re.escape(m) for m in markers]
    labels = [re.escape(label) for label in line_labels]
    if labels:
        # \A or any line break, then optional spaces, then the label (only the label breaks)
        parts.append(r"(?:\A|(?<=[\n\r\v\f\x85\u2028\u2029]))[ \t]*(?:"
                     + "|".join(labels) + ")")
    return re.compile("|".join(parts), re.IGNORECASE)


def neutralise(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with the fence escape applied and the family's markers and labels broken."""

    def breaker(m: re.Match[str]) -> str:
        found = m.group(0)
        word = found.lstrip(" \t")
        lead = found[: len(found) - len(word)]
        return lead + word[0] + " " + word[1:]

    return pattern.sub(breaker, escape(text))


def conversation(request: GuardRequest, pattern: re.Pattern[str]) -> tuple[str, str, Messages]:
    """The request's prompt and response neutralised for the family, and the same two as the
    chat messages its weights' template renders: every family judges this one exchange."""
    user = neutralise(request.prompt or "", pattern)
    assistant = neutralise(request.response, pattern)
    return user, assistant, [{"role": "user", "content": user},
                             {"role": "assistant", "content": assistant}]


def metric_title(request: GuardRequest, pattern: re.Pattern[str]) -> str:
    """The rubric metric's name on one line, neutralised: a family that titles its policy
    section with it reads it as rubric text."""
    return neutralise(" ".join(request.metric.split()), pattern)


def _items(items: Iterable[str], pattern: re.Pattern[str]) -> str:
    return "; ".join(neutralise(" ".join(item.split()).rstrip(" .;"), pattern)
                     for item in items if item.strip()) + "."


def policy_lines(policy: Policy, pattern: re.Pattern[str]) -> list[str]:
    """A rubric as policy text lines: the goal, then what counts and what does not. Rubric
    text is configuration from a dataset, so it is neutralised like the case text: a rubric
    cannot close the family's policy section either."""
    lines = [neutralise(" ".join(policy.goal.split()), pattern)]
    if any(v.strip() for v in policy.violations):
        lines.append("Counts as a violation: " + _items(policy.violations, pattern))
    if any(v.strip() for v in policy.non_violations):
        lines.append("Does not count: " + _items(policy.non_violations, pattern))
    return lines
