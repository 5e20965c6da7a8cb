"""Which devices a model may use, and in which dtype. GPU ids are data passed to engines: an hf
engine gets a `cuda:N` device string (torch_device); a vLLM engine takes no device argument, so
its ids become CUDA_VISIBLE_DEVICES in the process that creates it, written only by
judge/vllm/host.py (EngineHost.apply). Nothing here imports torch at module level (a fully
cached run never needs it).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


# Device nodes and driver files that exist on a host where torch could see a GPU: NVIDIA's
# kernel driver (its /proc entry, its device files) or ROCm's (/dev/kfd; ROCm torch answers
# through torch.cuda too).
GPU_DRIVER_MARKS = (
    "/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0",  # NVIDIA, containers too
    "/dev/kfd",  # ROCm
    "/dev/dxg",  # WSL2 (CUDA through the Windows driver)
    "/dev/nvmap",  # Jetson
)


def cuda_ruled_out(environ: Mapping[str, str] | None = None,
                   marks: Sequence[str] = GPU_DRIVER_MARKS) -> bool:
    """True when torch certainly sees no GPU, known without importing torch (1.6 s of a fully
    cached re-score on 2 cores): CUDA_VISIBLE_DEVICES hides every device ("" or "-1"), or no
    GPU driver is on this host. False means "maybe": only torch can say (a CPU build of torch
    beside a GPU, a driver too old for its CUDA)."""
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return True
    return not any(os.path.exists(m) for m in marks)


@dataclass(frozen=True)
class HostGPUs:
    """What torch sees of this host's GPUs, read once per process (host_gpus)."""

    count: int = 0  # torch.cuda.device_count() where CUDA is available, else 0

    @property
    def visible(self) -> bool:
        return self.count > 0


@functools.cache
def host_gpus() -> HostGPUs:
    """The one place that asks torch about the host's GPUs, once per process: whether one is
    visible is read from it by judge/decision.py's host_cuda alone, and every other part of a
    run (`--gpu` checks, CPU-auto, the responders) reads the decision made from it, so they
    cannot disagree. torch is asked only where a GPU may
    exist: on a host with no GPU driver the answer is known from the file system, and torch
    stays unimported until a model really loads. Neither call initialises CUDA (vLLM needs
    CUDA_VISIBLE_DEVICES written before that happens)."""
    if cuda_ruled_out():
        return HostGPUs()
    try:
        import torch
    except ImportError:
        return HostGPUs()
    if not torch.cuda.is_available():
        return HostGPUs()
    return HostGPUs(count=int(torch.cuda.device_count()))


def visible_device_ids(count: int) -> tuple[str, ...]:
    """The first `count` (at least one) GPU ids this process may use, for engines that were
    given no explicit ids: CUDA_VISIBLE_DEVICES as set for us (by Ray on a cluster worker, or
    by the user), else every GPU torch sees (host_gpus)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v for v in visible.split(",") if v.strip()]
    if not ids:
        ids = [str(i) for i in range(host_gpus().count)]
    return tuple(ids[: max(count, 1)])


def gpu_names(indices: Sequence[int]) -> tuple[str, ...]:
    """The product names of the GPUs at these torch indices of this process, for
    calibration's device key. Asked only after an engine loaded: naming initialises CUDA."""
    import torch

    return tuple(torch.cuda.get_device_name(i) for i in indices)


def resolve_dtype(dtype: str, device: str, native_bf16: bool | None = None) -> str:
    """`auto` is bfloat16 on CUDA and on a CPU with native bf16 (AVX512-BF16 or AMX), float32
    on other CPUs, where bf16 matmuls are emulated and slow. The demo judge on such a CPU: peer
    sample redteam in 27.8 device-s instead of 59.3, peak RSS 1.25 GB instead of 1.56 GB.
    `native_bf16` None: read this host's /proc/cpuinfo."""
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        return "bfloat16"
    if native_bf16 is None:
        from nexagauge_local.embed import cpu_has_native_bf16

        native_bf16 = cpu_has_native_bf16()
    return "bfloat16" if native_bf16 else "float32"
