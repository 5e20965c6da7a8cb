"""Pick and build the judge backend for a run.

`make_backend_factory` resolves the profile and backend *without* loading weights or touching
CUDA beyond `torch.cuda.is_available()`, and returns a callable that builds the backend later.
The JudgeClient calls it only on the first uncached request, so a fully cached rerun never loads
a model; the factory already knows the fingerprint, which the cache keys need.

GPU ids are data here, never process state: they reach the backend as parameters (see
weights.torch_device and vllm_backend.pin_engine_devices).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.judge.profiles import (
    BACKEND_GRAMMARS,
    DEFAULT_GRAMMAR,
    JudgeProfile,
    fingerprint,
    resolve_profile,
)
from nexagauge_local.judge.types import Backend
from nexagauge_local.judge.weights import (
    gpu_visible,
    resolve_dtype,
    torch_device,
    visible_device_ids,
    vllm_importable,
)


def choose_backend(requested: str, profile: JudgeProfile) -> str:
    """`auto` (from the flag, else the profile) -> vllm when importable and a GPU is visible."""
    choice = requested if requested != "auto" else profile.backend
    if choice != "auto":
        return choice
    return "vllm" if vllm_importable() and gpu_visible() else "hf"


class GrammarUnsupported(ValueError):
    """A grammar engine the chosen backend cannot use (a set-up error, exit 2)."""


def choose_grammar(requested: str, profile: JudgeProfile, backend: str) -> str:
    """`auto` (from the flag, else the profile) -> the backend's DEFAULT_GRAMMAR."""
    choice = requested if requested != "auto" else profile.grammar_backend
    if choice == "auto":
        return DEFAULT_GRAMMAR[backend]
    supported = BACKEND_GRAMMARS[backend]
    if choice not in supported:
        raise GrammarUnsupported(
            f"--grammar-backend {choice}: the {backend} backend decodes with "
            f"{' or '.join(supported)}; use --backend vllm for xgrammar"
        )
    return choice


@dataclass(frozen=True)
class BackendFactory:
    """Everything needed to build the backend, known before any weights are loaded.

    `gpus` are the requested GPU ids (`--gpu`); empty means "whatever this process sees",
    which is what a cluster worker wants (Ray pins its GPUs)."""

    profile: JudgeProfile
    backend: str
    dtype: str
    gpus: tuple[int, ...]
    cache_dir: Path
    seed: int = 0
    grammar: str = ""  # "" = the backend's default engine

    @property
    def grammar_backend(self) -> str:
        return self.grammar or DEFAULT_GRAMMAR[self.backend]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.profile, self.backend, self.dtype, self.grammar_backend)

    @property
    def model_name(self) -> str:
        return self.profile.name

    @property
    def is_demo(self) -> bool:
        return self.profile.demo

    def device_ids(self) -> tuple[str, ...]:
        """GPU ids for the vLLM engine(s): --gpu, else the profile's count of visible GPUs."""
        if self.gpus:
            return tuple(str(g) for g in self.gpus)
        return visible_device_ids(self.profile.gpus)

    def __call__(self) -> Backend:
        if self.backend == "vllm":
            from nexagauge_local.judge.vllm_backend import VLLMBackend

            return VLLMBackend(
                self.profile,
                dtype=self.dtype,
                device_ids=self.device_ids(),
                seed=self.seed,
                cache_dir=self.cache_dir,
                grammar=self.grammar_backend,
            )
        from nexagauge_local.judge.hf_backend import HFBackend

        return HFBackend(
            self.profile,
            cache_dir=self.cache_dir,
            device=torch_device(self.gpus),
            dtype=self.dtype,
            token_budget=self.profile.hf_token_budget,
            max_batch=self.profile.hf_max_batch,
            grammar=self.grammar_backend,
        )


def make_backend_factory(
    model: str,
    *,
    backend: str = "auto",
    gpus: Sequence[int] = (),
    cache_dir: Path,
    seed: int = 0,
    grammar_backend: str = "auto",
) -> BackendFactory:
    """Resolve profile, backend, dtype and grammar engine for a judge (raises WeightsMissing
    and GrammarUnsupported early)."""
    profile = resolve_profile(model)
    chosen = choose_backend(backend, profile)
    grammar = choose_grammar(grammar_backend, profile, chosen)
    if chosen == "vllm" and not vllm_importable():
        from nexagauge_local.judge.vllm_backend import VLLMMissing

        raise VLLMMissing()
    device = "cuda" if chosen == "vllm" or gpu_visible() else "cpu"
    return BackendFactory(
        profile=profile,
        backend=chosen,
        dtype=resolve_dtype(profile.dtype, device),
        gpus=tuple(gpus),
        cache_dir=Path(cache_dir),
        seed=seed,
        grammar=grammar,
    )
