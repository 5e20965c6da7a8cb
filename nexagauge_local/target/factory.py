"""Build the responder for the model under test with the judge's own resolution rules, so
`--model`, `--backend` and `--gpu` mean the same thing in `generate` as in `run`. GPU ids are
passed to the responder, never written into this process's environment."""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.judge.factory import choose_backend
from nexagauge_local.judge.profiles import resolve_profile
from nexagauge_local.judge.weights import resolve_dtype, torch_device, visible_device_ids
from nexagauge_local.target.types import Responder


def make_responder(
    model: str,
    *,
    backend: str = "auto",
    gpus: list[int] | None = None,
    cache_dir: Path,
    seed: int = 0,
    batch_size: int | None = None,
) -> Responder:
    profile = resolve_profile(model)
    engine = choose_backend(backend, profile)
    if engine == "vllm":
        from nexagauge_local.target.vllm_responder import VLLMResponder

        # no --gpu: the first GPU this process sees (CUDA_VISIBLE_DEVICES as the user set it)
        ids = [str(g) for g in gpus] if gpus else list(visible_device_ids(1)) or ["0"]
        return VLLMResponder(
            profile,
            cache_dir=cache_dir,
            dtype=resolve_dtype(profile.dtype, "cuda"),
            device_ids=ids,
            seed=seed,
        )
    from nexagauge_local.target.hf_responder import HFResponder

    return HFResponder(
        profile, cache_dir=cache_dir, device=torch_device(gpus or []), batch_size=batch_size
    )
