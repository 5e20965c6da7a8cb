"""Pick and build the judge backend for a run.

`make_backend_factory` resolves the profile and backend *without* loading weights or touching
CUDA beyond `torch.cuda.is_available()`, and returns a callable that builds the backend later.
The JudgeClient calls it only on the first uncached request, so a fully cached rerun never loads
a model; the factory already knows the fingerprint, which the cache keys need.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.judge.client import DEMO_NOTICE  # noqa: F401  (re-exported)
from nexagauge_local.judge.profiles import JudgeProfile, fingerprint, resolve_profile
from nexagauge_local.judge.types import Backend
from nexagauge_local.settings import RunSettings


def apply_gpu_env(gpus: Sequence[int]) -> None:
    """Pin CUDA_VISIBLE_DEVICES to the requested GPUs. Must run before anything initialises
    CUDA (torch caches the device list at first use), so the factory calls it first thing."""
    if gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus)


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def choose_backend(requested: str, profile: JudgeProfile) -> str:
    """`auto` (from the flag, else the profile) -> vllm when importable and a GPU is visible."""
    choice = requested if requested != "auto" else profile.backend
    if choice != "auto":
        return choice
    return "vllm" if vllm_importable() and gpu_visible() else "hf"


@dataclass(frozen=True)
class BackendFactory:
    """Everything needed to build the backend, known before any weights are loaded."""

    profile: JudgeProfile
    backend: str
    dtype: str
    gpus: tuple[int, ...]
    cache_dir: Path
    seed: int = 0

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.profile, self.backend, self.dtype)

    @property
    def model_name(self) -> str:
        return self.profile.name

    @property
    def is_demo(self) -> bool:
        return self.profile.demo

    def _device_ids(self) -> tuple[str, ...]:
        """Physical GPU ids for the engine(s): --gpu, else the profile's count of visible GPUs."""
        if self.gpus:
            return tuple(str(g) for g in self.gpus)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        ids = [v for v in visible.split(",") if v.strip()]
        if not ids:
            import torch

            ids = [str(i) for i in range(torch.cuda.device_count())]
        return tuple(ids[: max(self.profile.gpus, 1)])

    def __call__(self) -> Backend:
        if self.backend == "vllm":
            from nexagauge_local.judge.vllm_backend import VLLMBackend

            return VLLMBackend(
                self.profile,
                dtype=self.dtype,
                device_ids=self._device_ids(),
                seed=self.seed,
                cache_dir=self.cache_dir,
            )
        from nexagauge_local.judge.hf_backend import HFBackend

        device = "cuda" if gpu_visible() else "cpu"
        return HFBackend(self.profile, cache_dir=self.cache_dir, device=device, dtype=self.dtype)


def make_backend_factory(settings: RunSettings) -> BackendFactory:
    """Resolve profile, backend and dtype for a run (raises WeightsMissing early)."""
    apply_gpu_env(settings.gpus)
    profile = resolve_profile(settings.model)
    backend = choose_backend(settings.backend, profile)
    if backend == "vllm" and not vllm_importable():
        from nexagauge_local.judge.vllm_backend import VLLMMissing

        raise VLLMMissing()
    from nexagauge_local.judge.hf_backend import resolve_dtype

    device = "cuda" if backend == "vllm" or gpu_visible() else "cpu"
    dtype = resolve_dtype(profile.dtype, device)
    return BackendFactory(
        profile=profile,
        backend=backend,
        dtype=dtype,
        gpus=tuple(settings.gpus),
        cache_dir=Path(settings.cache_dir),
        seed=settings.seed,
    )


def make_backend(settings: RunSettings) -> Backend:
    """Build the judge backend for a run now (loads weights)."""
    return make_backend_factory(settings)()
