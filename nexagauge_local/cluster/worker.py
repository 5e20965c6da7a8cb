"""The body of one Ray actor: one judge backend, loaded once, answering batches.

Plain Python on purpose (the executor wraps it with `ray.remote` at run time), so this module
imports without Ray and its logic is unit-testable with any backend.

What crosses the wire back to the driver is raw text, token counts and errors, not the parsed
pydantic object: judge schemas are classes built at run time (pydantic.create_model), which
cloudpickle ships by value; the driver re-validates the text against its *own* schema class, so
nothing downstream ever holds a worker-side class. Requests do ship their schema class (by value,
a few KB): the backend needs it to compile the grammar, and schema_id is stable across processes.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from nexagauge_local.judge import Backend, JudgeRequest, JudgeResult


def split_batch_seconds(results: Sequence[JudgeResult], wall: float, devices: int) -> None:
    """Charge the batch's wall time x devices held to its requests in proportion to tokens.

    Same rule as the backends use per micro-batch, applied to the whole shipped batch, so the
    ledger's GPU-seconds equal the sum over workers of (batch wall x GPUs held) exactly.
    """
    total = wall * max(devices, 1)
    tokens = [r.prompt_tokens + r.output_tokens for r in results]
    denom = sum(tokens)
    for r, t in zip(results, tokens):
        r.gpu_seconds = total * (t / denom if denom else 1 / len(results))


def wire_result(result: JudgeResult) -> JudgeResult:
    """The result as shipped to the driver: no worker-side pydantic instance."""
    return replace(result, parsed=None)


class JudgeWorker:
    """One backend per actor. `factory` is the driver's BackendFactory with its `--gpu` pinning
    dropped: Ray assigns this actor its GPUs through CUDA_VISIBLE_DEVICES."""

    def __init__(self, factory: Callable[[], Backend], threads: int | None = None) -> None:
        started = time.perf_counter()
        self.backend = factory()
        if threads and self.backend.gpu_count == 0 and hasattr(self.backend, "threads"):
            # a CPU actor owns exactly the CPUs Ray reserved for it; more threads would fight
            # the neighbouring actor for the same cores
            self.backend.threads = threads
        self.load_seconds = time.perf_counter() - started

    def info(self) -> dict[str, Any]:
        node_id = None
        with suppress(Exception):  # informational only; the class also runs outside Ray
            import ray

            node_id = ray.get_runtime_context().get_node_id()
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "node_id": node_id,
            "backend": self.backend.name,
            "fingerprint": self.backend.fingerprint,
            "gpus": int(self.backend.gpu_count),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "load_seconds": round(self.load_seconds, 3),
        }

    def generate(self, requests: Sequence[JudgeRequest]) -> tuple[list[JudgeResult], float]:
        """(results without parsed objects, batch wall seconds). Device-seconds on each result
        are the batch wall x devices, split by tokens."""
        started = time.perf_counter()
        results = self.backend.generate(list(requests))
        wall = time.perf_counter() - started
        if len(results) != len(requests):
            raise RuntimeError(f"backend returned {len(results)} results for {len(requests)}")
        split_batch_seconds(results, wall, int(self.backend.gpu_count))
        return [wire_result(r) for r in results], wall
