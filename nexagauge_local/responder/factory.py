"""Build the responder for the model under test with the judge's own resolution rules, so
`--model`, `--backend` and `--gpu` mean the same thing in `generate` as in `run`. GPU ids are
passed to the responder: the hf responder uses them as a `cuda:N` device; the vLLM responder
writes them into CUDA_VISIBLE_DEVICES before it creates its engine, as the judge's vLLM backend
does (judge/vllm/host.py: EngineHost.apply, the one writer of that variable)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nexagauge_local.judge import choose_backend, resolve_profile
from nexagauge_local.judge.runtime import (
    gpu_visible,
    resolve_dtype,
    torch_device,
    visible_device_ids,
)
from nexagauge_local.responder.types import Responder

if TYPE_CHECKING:  # judge.vllm is imported only when the vllm engine is chosen
    from nexagauge_local.judge.vllm import Device


def make_responder(
    model: str,
    *,
    backend: str = "auto",
    gpu_ids: list[int] | None = None,
    cache_dir: Path,
    seed: int = 0,
    batch_size: int | None = None,
) -> Responder:
    profile = resolve_profile(model)
    engine = choose_backend(backend, profile)
    if engine == "vllm":
        from nexagauge_local.judge.vllm import engine_hosts
        from nexagauge_local.responder.vllm import VLLMResponder

        # where the judge's engine would run: GPU ids on a CUDA host (no --gpu: the first GPU
        # this process sees, as CUDA_VISIBLE_DEVICES was set for it), else a CPU slice
        device: Device = "cuda" if gpu_visible() else "cpu"
        ids = tuple(str(g) for g in gpu_ids) if gpu_ids else ()
        if device == "cuda" and not ids:
            ids = tuple(visible_device_ids(1)) or ("0",)
        host = engine_hosts(device, ids, profile, data_parallel=False)[0]
        return VLLMResponder(
            profile,
            cache_dir=cache_dir,
            dtype=resolve_dtype(profile.dtype, device),
            host=host,
            seed=seed,
        )
    from nexagauge_local.responder.hf import HFResponder

    return HFResponder(
        profile, cache_dir=cache_dir, device=torch_device(gpu_ids or []), batch_size=batch_size
    )
