"""JudgeClient: the one door nodes use to reach the judge.

Per node it: computes cache keys, collapses identical requests, answers what the cache holds,
and sends every remaining unique request to the backend in ONE `generate` call (node-major
batching: the backend sees the whole node, which is what makes vLLM/outlines batching pay).
The backend is built lazily on the first cache miss, so a fully cached rerun loads no weights.

What is cached: every answer the backend decoded - parsed, "truncated" or "invalid: ..." (the
judge's history, which `estimate` predicts from, needs every length). What is served: only a
cached answer that parses against the current schema (judge/cached_answers.py); one that failed
is asked again and counted (`cache_retried`), since its cause (a server ignoring the schema, a
parser bug, a max_tokens too small) may be mended, and a failure served from the cache would
stay one until --no-cache threw every good answer away. Not cached at all: what was never
decoded - backend failures (FailureKind.BACKEND), which may be transient, and requests refused
for their length. The decision reads `JudgeResult.failure`, never the error's wording.

Crash safety: a backend hands results over as they are decoded (`on_batch`: hf each answer the
step its row ends, vLLM each group of finished requests) and each handover is written to the
cache as one transaction, while the backend still sees the whole node in one call; what it
returns without having handed over is committed when `generate` returns. A run killed mid-node
resumes from what was committed.

Long inputs: a request whose prompt + max_tokens exceeds the judge's window fails alone in the
backend (judge/long_inputs.py); with `long_inputs` set to `truncate-middle` the client cuts the
middle of the longest evaluated text first (before keys are computed, so the cut prompt is what
is cached) and marks the result with `extra["input_truncated"]`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol, Self

from nexagauge_local.judge.cache import CacheEntry, JudgeCache, judge_request_key
from nexagauge_local.judge.cached_answers import answers_in_cache
from nexagauge_local.judge.decision import JudgeDecision
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.long_inputs import LongInputs
from nexagauge_local.judge.profiles import DEMO_NOTICE
from nexagauge_local.judge.schemas import schema_id
from nexagauge_local.judge.types import (
    Backend,
    FailureKind,
    JudgeRequest,
    JudgeResult,
    JudgeStartError,
)

# Nothing was decoded: a backend failure may be transient, and a request refused for its
# length gets another answer once it is cut or the window is larger.
_NOT_CACHED = frozenset({FailureKind.BACKEND, FailureKind.CONTEXT_WINDOW})


class Executor(Protocol):
    """Answers a node's cache misses somewhere else (cluster/executor.py: a Ray actor pool;
    app/judge.py picks it),
    calling `on_batch(positions, results)` as each batch lands so results are cached at once."""

    def run(
        self,
        node: str,
        requests: Sequence[JudgeRequest],
        on_batch: Callable[[list[int], list[JudgeResult]], None],
    ) -> None: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def _cacheable(result: JudgeResult) -> bool:
    """What the judge decoded, answer or not (see _NOT_CACHED)."""
    return result.failure not in _NOT_CACHED


class JudgeClient:
    def __init__(
        self,
        backend_factory: Callable[[], Backend],
        cache: JudgeCache | None,
        ledger: CostLedger,
        gpu_hour_price: float | None = None,
        *,
        decision: JudgeDecision,
        seed: int = 0,
        executor: Executor | None = None,
        long_inputs: LongInputs | None = None,
    ) -> None:
        """`decision`: what the run resolved for this judge (factory.BackendFactory carries
        it), the client's one source of the judge's identity: cache keys are computed from its
        fingerprint without building the backend, and describe() names the backend, grammar
        engine and devices it decided."""
        self._factory = backend_factory
        self._backend: Backend | None = None
        self._backend_name: str | None = None  # kept past close(), for describe()
        self.cache = cache
        self.ledger = ledger
        self.ledger.gpu_hour_price = gpu_hour_price
        self.gpu_hour_price = gpu_hour_price
        self.seed = seed
        self.executor = executor
        self.long_inputs = long_inputs
        self.decision = decision

    # -------------------------------------------------------------- identity

    @property
    def fingerprint(self) -> str:
        return self.decision.fingerprint

    @property
    def model_name(self) -> str:
        return self.decision.profile

    @property
    def is_demo(self) -> bool:
        return self.decision.demo

    @property
    def judge_format(self) -> str:
        return self.decision.judge_format

    @property
    def thresholds(self) -> dict[str, float]:
        return dict(self.decision.thresholds)

    @property
    def backend_loaded(self) -> bool:
        """Whether the backend was loaded in this client's life (closed since or not)."""
        return self._backend_name is not None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            try:
                self._backend = self._factory()
            except Exception as exc:  # whatever the engine raised, said once
                raise JudgeStartError(self.model_name, self.decision.backend, exc) from exc
            self._backend_name = self._backend.name
            self.ledger.record_load(float(self._backend.load_seconds), self._backend.gpu_count)
        return self._backend

    def describe(self) -> dict[str, Any]:
        """The `judge` block of summary.json: which model, how identified, on what device."""
        decision = self.decision
        info: dict[str, Any] = {
            "model": self.model_name,
            "fingerprint": self.fingerprint,
            "demo": self.is_demo,
            "backend": self._backend_name or decision.backend,
            "backend_reason": decision.reason,
            # each answer independent of what shared the engine (the profile's setting)
            "batch_invariant": decision.batch_invariant,
            "loaded": self.backend_loaded,
            "gpus": self.ledger.gpu_count,
            "device": self.ledger.device_label,
            "load_seconds": round(self.ledger.load_seconds, 3),
        }
        if decision.server is not None:  # a judge server
            info["endpoint"] = decision.server
        if self.is_demo:
            info["notice"] = DEMO_NOTICE
        if self.executor is not None:
            info["cluster"] = self.executor.describe()
        return info

    def close(self) -> None:
        """Stop the engine and let its weights go (a run closes a judge as soon as no later
        node needs it, before the next judge loads); a request after this loads it again."""
        if self.executor is not None:
            self.executor.close()
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- work

    def key(self, request: JudgeRequest) -> str:
        return judge_request_key(self.fingerprint, request, seed=self.seed)

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]:
        """Results aligned with `requests`. `progress(n)` is called with the number of requests
        just completed (cache hits at once, then per backend handover)."""
        started = time.perf_counter()
        usage = self.ledger.node(node)
        notes: list[Any] = [None] * len(requests)
        if self.long_inputs is not None:
            requests, notes = self.long_inputs.fit(list(requests))
        keys = [self.key(r) for r in requests]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        found = answers_in_cache(self.cache, {k: requests[i] for k, i in first.items()})
        hits = found.served
        done: dict[str, JudgeResult] = dict(hits)
        n_hit_positions = sum(1 for k in keys if k in hits)
        if progress and n_hit_positions:
            progress(n_hit_positions)
        if self.cache is not None:
            self.cache.record_hits(node, n_hit_positions)

        misses = [k for k in first if k not in hits]
        copies = Counter(keys)  # positions per key: a chunk's progress without rescanning keys

        def settle(part: list[str], results: list[JudgeResult], calls: int = 1) -> None:
            """Book, cache and report one answered chunk of misses."""
            if len(results) != len(part):
                raise RuntimeError(f"backend returned {len(results)} results for {len(part)}")
            usage.add(
                backend_calls=calls,
                backend_requests=len(part),
                input_tokens=sum(r.prompt_tokens for r in results),
                output_tokens=sum(r.output_tokens for r in results),
                gpu_seconds=sum(r.gpu_seconds or 0.0 for r in results),
            )
            if self.cache is not None:
                fresh = [(k, r) for k, r in zip(part, results) if _cacheable(r)]
                self.cache.put_many(  # with the judge's history, which `estimate` predicts from
                    [_to_entry(k, node, r) for k, r in fresh], judge=self.fingerprint,
                    schemas=[schema_id(requests[first[k]].schema) for k, _ in fresh],
                )
            done.update(zip(part, results))
            if progress:
                progress(sum(copies[k] for k in part))

        if self.executor is not None:
            if misses:
                self.executor.run(
                    node,
                    [requests[first[k]] for k in misses],
                    lambda pos, results: settle([misses[i] for i in pos], results),
                )
        elif misses:
            self._stream(misses, [requests[first[k]] for k in misses], settle, done)

        out: list[JudgeResult] = []
        for i, k in enumerate(keys):
            res = done[k]
            out.append(res if first[k] == i else _duplicate(res))
            if notes[i] is not None:
                out[-1].extra = {**out[-1].extra, "input_truncated": notes[i].as_dict()}
        usage.add(
            requests=len(requests),
            cache_hits=n_hit_positions,
            cache_retried=len(found.failed),
            deduplicated=len(requests) - n_hit_positions - len(misses),
            errors=sum(1 for r in out if r.error),
            wall_seconds=time.perf_counter() - started,
        )
        return out


    def _stream(
        self,
        misses: list[str],
        requests: list[JudgeRequest],
        settle: Callable[..., None],
        done: dict[str, JudgeResult],
    ) -> None:
        """One `generate` over every miss; each batch is settled (cached) as it is handed over.

        The backend call is booked once (`calls` 1 on the first handover): the node is still
        one engine call, only its results arrive in pieces."""
        calls = [1]

        def on_batch(positions: list[int], results: list[JudgeResult]) -> None:
            settle([misses[i] for i in positions], results, calls[0])
            calls[0] = 0

        returned = self.backend.generate(requests, on_batch=on_batch)
        lost = [i for i, k in enumerate(misses) if k not in done]
        if lost:  # what the backend returned without handing it over: commit it now
            if len(returned) != len(misses):
                raise RuntimeError(f"backend returned {len(returned)} results for "
                                   f"{len(misses)} requests")
            on_batch(lost, [returned[i] for i in lost])


def _to_entry(key: str, node: str, result: JudgeResult) -> CacheEntry:
    return CacheEntry(
        key=key,
        node=node,
        raw_text=result.raw_text,
        prompt_tokens=result.prompt_tokens,
        output_tokens=result.output_tokens,
        gpu_seconds=result.gpu_seconds or 0.0,
        logprobs=result.token_logprobs,
    )


def _duplicate(result: JudgeResult) -> JudgeResult:
    """A later copy of an identical request: same answer, no extra device time charged."""
    return replace(result, gpu_seconds=None if result.gpu_seconds is None else 0.0,
                   extra={**result.extra, "duplicate": True})
