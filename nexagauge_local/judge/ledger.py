"""Cost ledger: what the judge did per node, in tokens and device-seconds.

GPU-seconds are the wall time of each backend call times the GPUs it held, split over its
requests by tokens (the backends do the split). Model load and warm-up are not judgement
work, so they are kept apart (`load_seconds`) instead of being smeared over the first node.
On a CPU backend the same numbers are CPU device-seconds and `device_label` says so. An
endpoint judge whose server's GPUs are not stated has no device time at all: its ledger says
so (`device_seconds_known` False) and reports gpu_seconds as null, never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from nexagauge_local.judge.types import JudgeResult


def usd(gpu_seconds: float, gpu_hour_price: float | None) -> float:
    """USD for GPU-seconds at a per-GPU-hour price; 0.0 when no price is set."""
    if not gpu_hour_price:
        return 0.0
    return gpu_seconds / 3600.0 * gpu_hour_price


def split_device_seconds(results: Sequence[JudgeResult], wall: float, gpu_count: int) -> None:
    """Charge a call's wall time x devices held to its requests in proportion to their tokens.

    On CPU (gpu_count=0) one device is counted, so the figure is device-seconds of the CPU backend.
    """
    total = wall * max(gpu_count, 1)
    tokens = [r.prompt_tokens + r.output_tokens for r in results]
    denom = sum(tokens) or len(results) or 1
    for r, t in zip(results, tokens):
        r.gpu_seconds = total * ((t or (0 if sum(tokens) else 1)) / denom)


def device_label(gpu_count: int) -> str:
    return "GPU" if gpu_count > 0 else "CPU device-seconds"


class NodeUsage(BaseModel):
    """Judge usage of one node. Tokens and gpu_seconds count backend work only: cache hits
    and duplicates cost nothing, which is what the user pays for."""

    requests: int = 0
    cache_hits: int = 0
    # cached answers that had failed (unparsed, truncated), asked again: not among cache_hits
    cache_retried: int = 0
    deduplicated: int = 0
    backend_calls: int = 0
    backend_requests: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    gpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    def add(
        self,
        *,
        requests: int = 0,
        cache_hits: int = 0,
        cache_retried: int = 0,
        deduplicated: int = 0,
        backend_calls: int = 0,
        backend_requests: int = 0,
        errors: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        gpu_seconds: float = 0.0,
        wall_seconds: float = 0.0,
    ) -> None:
        self.requests += requests
        self.cache_hits += cache_hits
        self.cache_retried += cache_retried
        self.deduplicated += deduplicated
        self.backend_calls += backend_calls
        self.backend_requests += backend_requests
        self.errors += errors
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.gpu_seconds += gpu_seconds
        self.wall_seconds += wall_seconds

    def merge(self, other: NodeUsage) -> NodeUsage:
        """A new NodeUsage with both summed (used for run totals and shard merges)."""
        merged = self.model_copy()
        merged.add(**other.model_dump())
        return merged


class CostLedger(BaseModel):
    """Per-node usage for a run, plus model load time and the device it ran on."""

    nodes: dict[str, NodeUsage] = Field(default_factory=dict)
    load_seconds: float = 0.0
    gpu_count: int = 0
    gpu_hour_price: float | None = None
    device_seconds_known: bool = True

    def node(self, name: str) -> NodeUsage:
        return self.nodes.setdefault(name, NodeUsage())

    def record_load(self, seconds: float, gpu_count: int) -> None:
        self.load_seconds += seconds
        self.gpu_count = gpu_count

    @property
    def device_label(self) -> str:
        if not self.device_seconds_known:
            return "judge server (device-seconds unknown: its GPUs not stated)"
        return device_label(self.gpu_count)

    def _usage_dict(self, usage: NodeUsage) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {**usage.model_dump()}
        if not self.device_seconds_known:
            out["gpu_seconds"] = None
        return out

    def total(self) -> NodeUsage:
        out = NodeUsage()
        for usage in self.nodes.values():
            out = out.merge(usage)
        return out

    def as_dict(self) -> dict[str, dict[str, float | int | None]]:
        """Per-node usage as plain dicts (what the runner merges into summary.json)."""
        return {name: self._usage_dict(usage) for name, usage in self.nodes.items()}

    def summary(self) -> dict[str, object]:
        """The `judge` block of summary.json."""
        total = self.total()
        return {
            "device": self.device_label,
            "gpus": self.gpu_count,
            "load_seconds": round(self.load_seconds, 3),
            "gpu_hour_price": self.gpu_hour_price,
            "cost": usd(total.gpu_seconds, self.gpu_hour_price)
            if self.device_seconds_known else None,
            "total": self._usage_dict(total),
            "nodes": self.as_dict(),
        }
