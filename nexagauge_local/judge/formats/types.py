"""What a guard format is given, what it renders and what it reads back.

Guard classifiers (Llama Guard, ShieldGemma, WildGuard, Granite Guardian, Qwen3Guard) were
trained on one prompt layout and one short answer each; asked any other way they answer worse.
So a format renders the family's own prompt from what a redteam metric asks (`GuardRequest`),
states the answer grammar and the decision token whose probability becomes the score, and parses
the short answer into a `GuardVerdict`. Everything here is engine-independent: the engines
(hf, vLLM) take a `GuardPrompt`, decode under `GuardFormat.grammar`, and hand back the answer
text and the top logprobs at the `DecisionPoint`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.judge.template_vars import template_reads_all
from nexagauge_local.judge.types import Messages, decision_index

Level = Literal["safe", "controversial", "unsafe"]
PromptForm = Literal["messages", "text"]


@dataclass(frozen=True)
class Policy:
    """A rubric as plain data (the redteam node's Rubric lives above the judge layer): what the
    family's policy slot says, for families that have one."""

    goal: str
    violations: tuple[str, ...] = ()
    non_violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class GuardRequest:
    """One redteam judgement: a rubric metric (`policy` set) or the probe metric (`probe` set).

    `prompt` is the evaluated model's input when the metric reads it (None: the output alone is
    judged, rendered as an empty user turn), `response` its output. Both are untrusted, and so
    is every probe text (suite files may carry injections by design).
    """

    metric: str
    response: str
    prompt: str | None = None
    policy: Policy | None = None
    probe: ProbeBlock | None = None

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.probe is None):
            raise ValueError("a guard request is either a rubric metric (policy) or the probe "
                             "metric (probe), not both or neither")


@dataclass(frozen=True)
class GuardPrompt:
    """The family's prompt in two forms: chat `messages` plus the extra `template_kwargs` its
    weights' chat template reads (categories, guideline, guardian_config), and the documented
    plain-text layout `text` (the family's own special tokens included, so it is tokenized
    without adding any) for weights without that template. The two render the same text where
    the family publishes a template (tests/test_guard_formats.py checks it)."""

    text: str
    messages: Messages
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def form_for(self, chat_template: str | None, uses_chat_template: bool) -> PromptForm:
        """Messages only when the weights' template can take them: one that never names an
        extra we pass (Llama Guard 3's template has no `categories`) would drop our policy
        silently, so the documented text is used instead."""
        if uses_chat_template and template_reads_all(chat_template, self.template_kwargs):
            return "messages"
        return "text"


@dataclass(frozen=True)
class DecisionPoint:
    """Where in the answer the decision word stands and which words decide.

    `label` is the answer text right before the decision word ("" = the first generated
    token; WildGuard's "Harmful response:"); `unsafe` and `safe` are the two sides (compared
    case-insensitively, leading space and tokenizer space markers ignored); `middle` is a
    third level between them (Qwen3Guard's Controversial). A word the vocabulary splits is read
    from its first piece (formats/scores.py says when that piece is unambiguous).
    """

    label: str
    unsafe: tuple[str, ...]
    safe: tuple[str, ...]
    middle: tuple[str, ...] = ()

    def token_index(self, answer_tokens: Sequence[str]) -> int | None:
        """The index of the generated token that carries the decision word, from the decoded
        text of each generated token (what vLLM's logprobs and hf's decode give): the first
        token with non-space text past the end of `label` (a token that merges the label's
        end with the word, ": yes", is that token; its logprobs then name no decision word
        and the score says so). None when the label is not in the answer."""
        return decision_index(answer_tokens, self.label)


@dataclass(frozen=True)
class GuardVerdict:
    """The parsed short answer. `unsafe` is the verdict for the metric asked (for a fixed
    taxonomy: unsafe in a category mapped to that metric); `flagged_elsewhere` says the family
    called the text unsafe only in categories outside the metric. A malformed answer has
    `error` set and no verdict: never a silent default."""

    raw: str
    unsafe: bool | None = None
    categories: tuple[str, ...] = ()
    refusal: bool | None = None
    harmful_response: bool | None = None
    level: Level | None = None
    flagged_elsewhere: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def over_refusal_unsupported(family: str, request: GuardRequest) -> str | None:
    """Why a family without a refusal output cannot judge `request` (a probe that expects an
    answer: over-refusal is a refusal question), or None when it can."""
    if request.probe is not None and request.probe.expect == "comply":
        return (f"{family} reports no refusals, so it cannot judge a probe that expects an "
                "answer (over-refusal)")
    return None


def malformed(raw: str, why: str) -> GuardVerdict:
    return GuardVerdict(raw=raw, error=f"malformed guard answer: {why}")


class GuardFormat(Protocol):
    """One guard family's prompt and answer; `name` is the profile's `judge_format`."""

    name: str
    prompt_version: str  # part of the cache key: bump when the rendering changes
    uses_chat_template: bool  # False: the documented text always (WildGuard has no template)

    def supports(self, request: GuardRequest) -> str | None:
        """None when the family can judge this request, else why not (one line)."""
        ...

    def render(self, request: GuardRequest) -> GuardPrompt: ...

    def grammar(self, request: GuardRequest) -> str:
        """The answer as a regular expression (outlines, xgrammar and llguidance take it)."""
        ...

    def max_tokens(self, request: GuardRequest) -> int: ...

    def decision(self, request: GuardRequest) -> DecisionPoint: ...

    def parse(self, answer: str, request: GuardRequest) -> GuardVerdict:
        """Never raises: a malformed answer is a verdict with `error` set."""
        ...
