"""Judge requests that do not fit the judge's context window.

Why here and not in each backend: both backends (and `estimate`) must agree on what "does not
fit" means - prompt tokens + max_tokens > the profile's max_model_len - and on the message that
names the case, node and metric it cost. A request that does not fit fails *alone*: on vLLM one
over-long prompt would otherwise make the whole `LLM.chat` list raise (vLLM issue 16732), and on
the hf path it would run past the model's positions and return junk.

Cutting a long text is never silent: it happens only with `--long-inputs truncate-middle`, the
cut is a visible marker inside the judged text, and the result says what was cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult, Messages
from nexagauge_local.settings import LongInputsPolicy

CONTEXT_ERROR_PREFIX = "context:"
MARKER = "[... {n} characters cut here by --long-inputs truncate-middle ...]"
# A fenced data section (judge/prompts/fencing.py): escaped text cannot contain "<<<", so the
# lazy match stops at its own close marker.
_SECTION_RE = re.compile(r"<<<DATA field=([a-z_0-9]+)>>>\n(.*?)\n<<<END DATA>>>", re.DOTALL)
_MAX_ROUNDS = 8


def context_error(request: JudgeRequest, prompt_tokens: int, max_model_len: int) -> str | None:
    """The error of a request that does not fit, or None when it does."""
    need = prompt_tokens + request.max_tokens
    if need <= max_model_len:
        return None
    return (
        f"{CONTEXT_ERROR_PREFIX} {request.where()}: prompt {prompt_tokens} tokens + max_tokens "
        f"{request.max_tokens} = {need} > the judge's max_model_len {max_model_len}; not sent "
        "to the judge (--long-inputs truncate-middle judges the text with its middle cut)"
    )


def refusal(request: JudgeRequest, prompt_tokens: int, max_model_len: int) -> JudgeResult | None:
    """A backend's answer to a request that does not fit (nothing decoded), or None."""
    error = context_error(request, prompt_tokens, max_model_len)
    if error is None:
        return None
    return JudgeResult.failed(FailureKind.CONTEXT_WINDOW, error, prompt_tokens)


@dataclass(frozen=True)
class Truncation:
    """What `truncate-middle` cut from one request (recorded with its result)."""

    field: str
    chars_removed: int
    chars_kept: int
    prompt_tokens_before: int
    prompt_tokens_after: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cut(text: str, removed: int) -> str:
    """`text` with `removed` characters taken out of its middle and the marker in their place."""
    keep = max(len(text) - removed, 0)
    head = keep - keep // 2
    tail = keep // 2
    return text[:head] + MARKER.format(n=len(text) - keep) + text[len(text) - tail:]


def _longest_section(messages: Messages) -> tuple[int, re.Match[str]] | None:
    best: tuple[int, re.Match[str]] | None = None
    for i, msg in enumerate(messages):
        for m in _SECTION_RE.finditer(msg["content"]):
            if best is None or len(m.group(2)) > len(best[1].group(2)):
                best = (i, m)
    return best


def truncate_middle(
    messages: Messages, budget: int, count: Callable[[Messages], int]
) -> tuple[Messages, Truncation | None]:
    """Cut the middle of the longest fenced data section until the prompt fits `budget` tokens.

    Written by hand: the cut must stay inside one data section (the rubric and the fences are
    never cut) and be sized in the judge's own tokens, which no text-splitting library knows.
    Returns the messages unchanged (and None) when they already fit, or when there is no data
    section to cut; the caller's context guard then fails the request as usual.
    """
    before = count(messages)
    if before <= budget:
        return messages, None
    found = _longest_section(messages)
    if found is None:
        return messages, None
    idx, match = found
    original = match.group(2)
    content = messages[idx]["content"]
    chars_per_token = max(sum(len(m["content"]) for m in messages) / max(before, 1), 1.0)
    removed, tokens = 0, before
    out = messages
    for _ in range(_MAX_ROUNDS):
        excess = tokens - budget
        if excess <= 0:
            break
        removed = min(len(original), removed + int((excess + 8) * chars_per_token * 1.1) + 1)
        cut = _cut(original, removed)
        new_content = content[: match.start(2)] + cut + content[match.end(2):]
        out = [dict(m) for m in messages]
        out[idx]["content"] = new_content
        tokens = count(out)
        if removed >= len(original):
            break
    note = Truncation(match.group(1), len(original) - max(len(original) - removed, 0),
                      max(len(original) - removed, 0), before, tokens)
    return out, note


class LongInputs:
    """A run's policy for requests that do not fit, with the judge's window and a prompt
    token counter (a tokenizer only; built on first use, so a run whose prompts all fit and
    whose policy is `fail` never loads it)."""

    def __init__(
        self,
        policy: LongInputsPolicy,
        max_model_len: int,
        counter_factory: Callable[[], Callable[[Messages], int]],
    ) -> None:
        self.policy = policy
        self.max_model_len = max_model_len
        self._factory = counter_factory
        self._count: Callable[[Messages], int] | None = None

    def count(self, messages: Messages) -> int:
        if self._count is None:
            self._count = self._factory()
        return self._count(messages)

    def fit(self, requests: list[JudgeRequest]) -> tuple[list[JudgeRequest], list[Truncation | None]]:
        """With `truncate-middle`, each request that does not fit cut to fit (others as is)."""
        if self.policy != "truncate-middle":
            return requests, [None] * len(requests)
        out: list[JudgeRequest] = []
        notes: list[Truncation | None] = []
        for req in requests:
            budget = self.max_model_len - req.max_tokens
            messages, note = truncate_middle(req.messages, budget, self.count)
            out.append(req if note is None else replace(req, messages=messages))
            notes.append(note)
        return out, notes

