"""The judge contract (docs/architecture.md, "The path of a record", step 3): what nodes send, what backends return.

Nodes build JudgeRequests; the JudgeClient deduplicates them, answers what the cache holds and
hands the rest to a Backend in one call. Keeping these types tiny and backend-free lets node
logic be tested with a scripted backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class JudgeRequest:
    messages: Messages
    schema: type[BaseModel]
    max_tokens: int
    want_logprobs: bool = False
    node: str = ""
    prompt_version: str = ""
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


@dataclass
class JudgeResult:
    parsed: BaseModel | None
    raw_text: str
    prompt_tokens: int
    output_tokens: int
    gpu_seconds: float
    error: str | None = None
    cached: bool = False
    # Per generated token, the top alternatives {token_text: logprob}; None when not asked for
    # or the backend cannot give them.
    token_logprobs: list[dict[str, float]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# `on_batch(positions, results)`: results for these positions of the request list are final.
OnBatch = Callable[[list[int], list[JudgeResult]], None]


@runtime_checkable
class Backend(Protocol):
    """A judge engine. One that sets `streams = True` also accepts `on_batch=` in `generate`
    and calls it as results are decoded (the client caches them at once, so a crash loses
    only the work in flight); one that does not is committed when `generate` returns."""

    name: str
    fingerprint: str  # model id + weights identity + dtype + backend version
    gpu_count: int  # devices held by a generate call (0 = CPU; GPU-seconds then count device-seconds)

    def generate(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]: ...

    def count_tokens(self, messages: Messages) -> int: ...
