"""Build the responder for the model under test with the judge's own resolution rules, so
`--model`, `--backend` and `--gpu` mean the same thing in `generate` as in `run`."""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.judge.factory import apply_gpu_env, choose_backend, gpu_visible
from nexagauge_local.judge.hf_backend import resolve_dtype
from nexagauge_local.judge.profiles import resolve_profile
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
    apply_gpu_env(gpus or [])
    profile = resolve_profile(model)
    engine = choose_backend(backend, profile)
    if engine == "vllm":
        from nexagauge_local.target.vllm_responder import VLLMResponder

        ids = [str(g) for g in gpus] if gpus else ["0"]
        return VLLMResponder(
            profile,
            cache_dir=cache_dir,
            dtype=resolve_dtype(profile.dtype, "cuda"),
            device_ids=ids,
            seed=seed,
        )
    from nexagauge_local.target.hf_responder import HFResponder

    device = "cuda" if gpu_visible() else "cpu"
    return HFResponder(profile, cache_dir=cache_dir, device=device, batch_size=batch_size)
