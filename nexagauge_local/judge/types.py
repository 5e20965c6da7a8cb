"""The judge contract (docs/architecture.md, "The path of a record", step 3): what nodes send, what backends return.

Nodes build JudgeRequests; the JudgeClient deduplicates them, answers what the cache holds and
hands the rest to a Backend in one call. Keeping these types tiny and backend-free lets node
logic be tested with a scripted backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from pydantic import BaseModel

from nexagauge_local.judge.template_vars import template_reads_all

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class GuardAsk:
    """What a guard classifier's request (judge/formats) adds to `messages`: the family's
    documented prompt text, the extras its chat template reads, the answer as a regular
    expression, and the answer text before its decision word. Plain data, so the engines,
    the cache key and a worker process need nothing from judge/formats.

    Engines answer it with the matched text and, in `token_logprobs`, ONE entry: the top
    logprobs at the decision token (an empty list when the label is not in the answer)."""

    format: str  # the profile's judge_format
    regex: str
    text: str  # the documented layout, the family's special tokens included
    template_kwargs: tuple[tuple[str, Any], ...] = ()
    uses_chat_template: bool = True
    decision_label: str = ""
    top_logprobs: int = 20

    def uses_messages(self, chat_template: str | None) -> bool:
        """Messages (through the weights' chat template) only when that template reads every
        extra we pass: one that never names our policy's slot would drop it silently."""
        if not self.uses_chat_template:
            return False
        return template_reads_all(chat_template, (key for key, _ in self.template_kwargs))

    def key_material(self) -> dict[str, Any]:
        return {"format": self.format, "regex": self.regex, "text": self.text,
                "template_kwargs": [list(kv) for kv in self.template_kwargs],
                "uses_chat_template": self.uses_chat_template,
                "decision_label": self.decision_label, "top_logprobs": self.top_logprobs}


def decision_index(answer_tokens: Sequence[str], label: str) -> int | None:
    """The index of the generated token that carries the decision word: the first token with
    non-space text past the end of `label` ("" = the first token). None when the label is not
    in the answer."""
    text = "".join(answer_tokens)
    at = text.find(label) if label else 0
    if at < 0:
        return None
    end = at + len(label)
    offset = 0
    for i, tok in enumerate(answer_tokens):
        if offset + len(tok) > end and tok[max(0, end - offset):].strip():
            return i
        offset += len(tok)
    return None


def decision_step(
    pieces: Sequence[str], steps: Sequence[dict[str, float]], label: str, top_k: int
) -> list[dict[str, float]]:
    """A guard answer's logprobs as the engines hand them over: the `top_k` alternatives at
    its decision token alone (`pieces`: each generated token's text), or [] when the label is
    not in the answer or the engine returned no step there."""
    at = decision_index(pieces, label)
    if at is None or at >= len(steps):
        return []
    ranked = sorted(steps[at].items(), key=lambda kv: -kv[1])[:top_k]
    return [dict(ranked)]


@dataclass(frozen=True)
class JudgeRequest:
    messages: Messages
    schema: type[BaseModel]
    max_tokens: int
    want_logprobs: bool = False
    node: str = ""
    prompt_version: str = ""
    # A guard classifier's request (its own prompt and a regex answer) instead of our rubric
    # prompt under `schema` (then judge/schemas.GuardAnswer); None for every rubric judge.
    guard: GuardAsk | None = None
    # Where the request comes from, for error messages only (never part of the cache key):
    # a context-window error names the case and metric it cost.
    case_id: str = ""
    metric: str = ""

    def where(self) -> str:
        """`case 'x', node redteam, metric toxicity` (the parts that are known)."""
        parts = [f"case {self.case_id!r}"] if self.case_id else []
        parts += [f"node {self.node}"] if self.node else []
        parts += [f"metric {self.metric}"] if self.metric else []
        return ", ".join(parts) or "a judge request"


class JudgeStartError(RuntimeError):
    """The judge's engine could not start: weights that do not load, a GPU out of memory at
    load, settings the engine refuses. Not an answer to any request, so a node does not write
    it into every metric (which would read as a judge that failed, exit 3): the run stops as
    at set-up (exit 2), and resumes from the cache once the cause is mended."""

    def __init__(self, model: str | None, backend: str | None, cause: BaseException) -> None:
        # pydantic's and vLLM's errors span lines: one line, but whole, since the command
        # line keeps the engine's own log off by default and this is all the user reads
        said = " ".join(str(cause).split())
        judge = f"the judge {model}" if model else "the judge"
        on = f" on the {backend} backend" if backend else ""
        super().__init__(f"{judge} could not start{on}: {type(cause).__name__}: {said}")


class FailureKind(str, Enum):
    """Why a result has no answer. Caching and counting decide on this, never on the message
    beside it (`JudgeResult.error`), which is for people and free to change wording."""

    # Decoded by the judge, so the same key reproduces it: cached.
    TRUNCATED = "truncated"  # cut at max_tokens
    INVALID_OUTPUT = "invalid_output"  # complete, but not valid against the schema
    # Nothing decoded: not cached, a rerun asks again.
    CONTEXT_WINDOW = "context_window"  # prompt + max_tokens over the judge's window, not sent
    BACKEND = "backend"  # the engine or the cluster failed the request; may be transient
    # Never reached a backend (nodes/judging.py, estimate/recorder.py).
    NO_JUDGE = "no_judge"  # the run has no judge configured
    JUDGE_FAILED = "judge_failed"  # the judge call itself raised or answered the wrong count
    NOT_RUN = "not_run"  # `estimate` records requests and answers none


@dataclass
class JudgeResult:
    """One request's answer. `error` (what a report shows) and `failure` (what code decides
    on) are set together or not at all."""

    parsed: BaseModel | None
    raw_text: str
    prompt_tokens: int
    output_tokens: int
    # None: the backend cannot see the device time it cost (a judge server whose GPUs were not
    # stated); reports then say null rather than a guessed 0.
    gpu_seconds: float | None
    error: str | None = None
    failure: FailureKind | None = None
    cached: bool = False
    # Per generated token, the top alternatives {token_text: logprob}; None when not asked for
    # or the backend cannot give them.
    token_logprobs: list[dict[str, float]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.error is None) != (self.failure is None):
            raise ValueError(f"a JudgeResult's error and failure kind go together: "
                             f"error={self.error!r}, failure={self.failure!r}")

    @classmethod
    def failed(cls, failure: FailureKind, error: str, prompt_tokens: int = 0) -> JudgeResult:
        """A result with nothing decoded and no device time charged."""
        return cls(parsed=None, raw_text="", prompt_tokens=prompt_tokens, output_tokens=0,
                   gpu_seconds=0.0, error=error, failure=failure)


# `on_batch(positions, results)`: results for these positions of the request list are final.
OnBatch = Callable[[list[int], list[JudgeResult]], None]


class Backend(Protocol):
    """A judge engine: exactly what JudgeClient (and a cluster worker) use of one, so the
    client never probes a backend for optional attributes.

    `generate` calls `on_batch(positions, results)` as results are decoded (the client caches
    them at once, so a crash loses only the work in flight); whatever it returns without
    having handed over is committed when it returns."""

    name: str
    fingerprint: str  # model id + weights identity + dtype + backend version
    gpu_count: int  # devices held by a generate call (0 = CPU; GPU-seconds then count device-seconds)
    load_seconds: float  # building it (weights, engine start); the ledger's load time

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]: ...

    def close(self) -> None:
        """Release what the backend holds (engine processes, device memory) now."""
        ...
