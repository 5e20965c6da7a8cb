"""The answer side shared by the families that answer one word, Yes (unsafe) or No.

Why one place: Granite Guardian and ShieldGemma both decide on their first generated word, so
the grammar, the token budget and the decision point are the same; only their prompts and how
much text they allow after the word differ.
"""

from __future__ import annotations

from nexagauge_local.judge.formats.types import DecisionPoint, GuardRequest, GuardVerdict


class YesNoAnswer:
    """Mixed into a family whose answer starts with the word Yes (unsafe) or No (safe)."""

    def grammar(self, request: GuardRequest) -> str:
        return "(Yes|No)"

    def max_tokens(self, request: GuardRequest) -> int:
        return 4  # the word (one token in the real vocabulary) and EOS, with room

    def decision(self, request: GuardRequest) -> DecisionPoint:
        return DecisionPoint(label="", unsafe=("Yes",), safe=("No",))


def yes_no_verdict(answer: str, word: str, request: GuardRequest) -> GuardVerdict:
    """The verdict of a parsed Yes/No word: a Yes breaks the request's own metric."""
    unsafe = word == "Yes"
    return GuardVerdict(raw=answer, unsafe=unsafe, categories=(request.metric,) if unsafe else ())
