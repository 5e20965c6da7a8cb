"""Pure arithmetic of the cluster executor: how many actors, and how requests are cut into
batches. No Ray here, so all of it is tested without a cluster."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nexagauge_local.cluster.spec import ClusterSpec, ClusterUnavailable


@dataclass(frozen=True)
class PoolPlan:
    """`workers` actors, each reserving `num_cpus` CPUs and `num_gpus` GPUs from Ray."""

    workers: int
    num_cpus: int
    num_gpus: int

    @property
    def device_count(self) -> int:
        """Devices one actor's batch is charged for: its GPUs, or 1 for a CPU actor (the
        same convention as the ledger's CPU device-seconds)."""
        return max(self.num_gpus, 1)

    def describe(self) -> dict[str, int]:
        """The `plan` of summary.json's `judge.cluster` block."""
        return {"workers": self.workers, "cpus": self.num_cpus, "gpus": self.num_gpus}


def plan_pool(
    resources: Mapping[str, float], backend: str, spec: ClusterSpec, profile_gpus: int
) -> PoolPlan:
    """Size the actor pool from `ray.cluster_resources()`.

    vllm: one actor per `gpus_per_worker` GPUs (the profile's tensor-parallel size). hf: one
    actor per GPU when the cluster has GPUs, else one per `cpus_per_worker` CPUs (at least one:
    a small box still gets a worker, using every CPU it has). `workers` caps the count.
    """
    gpu_count = int(resources.get("GPU", 0))
    cpus = int(resources.get("CPU", 0))
    per_gpu = spec.gpus_per_worker or max(profile_gpus, 1)
    if backend == "vllm":
        if gpu_count < per_gpu:
            raise ClusterUnavailable(
                f"the cluster has {gpu_count} GPU(s); the vllm judge needs {per_gpu} per worker. "
                "Start the workers with `ray start --address ... --num-gpus N`, or use "
                "--backend hf for CPU workers."
            )
        plan = PoolPlan(gpu_count // per_gpu, 1, per_gpu)
    elif gpu_count >= per_gpu:
        plan = PoolPlan(gpu_count // per_gpu, 1, per_gpu)
    else:
        if cpus < 1:
            raise ClusterUnavailable("the cluster reports no CPUs and no GPUs to run a judge on")
        per_cpu = min(spec.cpus_per_worker, cpus)
        plan = PoolPlan(max(cpus // per_cpu, 1), per_cpu, 0)
    if spec.workers is not None:
        plan = PoolPlan(min(plan.workers, spec.workers), plan.num_cpus, plan.num_gpus)
    return plan


def affordable(available: Mapping[str, float], plan: PoolPlan) -> int:
    """How many more actors of this shape fit in `ray.available_resources()` right now (asking
    for more would leave them pending forever on a cluster that lost a node)."""
    fits = [int(available.get("CPU", 0)) // plan.num_cpus] if plan.num_cpus else []
    if plan.num_gpus:
        fits.append(int(available.get("GPU", 0)) // plan.num_gpus)
    return max(min(fits), 0) if fits else 0


def batch_count(n_requests: int, workers: int, spec: ClusterSpec) -> int:
    """Enough batches that every worker gets several (balance, and a lost worker loses only a
    small slice) and none exceeds `spec.batch` requests; never more batches than requests."""
    if n_requests == 0:
        return 0
    wanted = max(workers * spec.batches_per_worker, math.ceil(n_requests / spec.batch))
    return min(wanted, n_requests)


def token_balanced_batches(
    costs: Sequence[int], n_batches: int, max_requests: int | None = None
) -> list[list[int]]:
    """Cut positions 0..len-1 (already in the order they should be shipped) into contiguous
    batches of about equal total cost.

    Position i goes to batch floor(midpoint_i / total * n), where midpoint_i is the cost before
    it plus half its own: batches stay contiguous (similar prompts stay together, which is what
    the backends' prefix caching and length-sorted micro-batches want) and each batch's cost is
    within one request of total/n. A batch over `max_requests` is split evenly.
    """
    n = len(costs)
    if n == 0 or n_batches <= 0:
        return []
    n_batches = min(n_batches, n)
    weights = [max(int(c), 1) for c in costs]
    total = sum(weights)
    out: list[list[int]] = [[] for _ in range(n_batches)]
    before = 0
    for i, w in enumerate(weights):
        slot = min(int((before + w / 2) / total * n_batches), n_batches - 1)
        out[slot].append(i)
        before += w
    batches = [b for b in out if b]
    if max_requests is None:
        return batches
    split: list[list[int]] = []
    for b in batches:
        parts = math.ceil(len(b) / max_requests)
        size = math.ceil(len(b) / parts)
        split.extend(b[j : j + size] for j in range(0, len(b), size))
    return split
