"""Build the responder for the model under test from a decision made with the judge's own rules
(judge/decision.py), so `--model`, `--backend` and `--gpu` mean the same thing in `generate` as
in `run`, and the engine, dtype and devices are decided once, by the caller, not again here.
GPU ids are passed to the responder: the hf responder uses them as a `cuda:N` device; the vLLM
responder writes them into CUDA_VISIBLE_DEVICES before it creates its engine, as the judge's
vLLM backend does (judge/vllm/host.py: EngineHost.apply, the one writer of that variable)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nexagauge_local.judge import JudgeDecision, JudgeProfile, decide
from nexagauge_local.redteam.target.types import Responder


def responder_decision(profile: JudgeProfile, *, backend: str = "auto",
                       gpu_ids: Sequence[int] = ()) -> JudgeDecision:
    """The model under test's engine, dtype and devices (it decodes free text: no grammar
    engine). vLLM on a GPU host without --gpu takes the profile's count of visible GPUs."""
    return decide(profile, backend=backend, grammar_backend=None, gpu_ids=gpu_ids)


def make_responder(
    profile: JudgeProfile,
    decision: JudgeDecision,
    *,
    cache_dir: Path,
    seed: int = 0,
    batch_size: int | None = None,
) -> Responder:
    """The responder `decision` names, for `profile` (loads the weights)."""
    if decision.backend == "vllm":
        from nexagauge_local.judge.vllm import engine_hosts
        from nexagauge_local.redteam.target.vllm import VLLMResponder

        host = engine_hosts(decision.device if decision.device == "cuda" else "cpu",
                            decision.gpu_ids, profile, data_parallel=False,
                            gpu_share=decision.gpu_share)[0]  # fmt: skip
        return VLLMResponder(profile, cache_dir=cache_dir, dtype=decision.dtype, host=host,
                             seed=seed)
    from nexagauge_local.redteam.target.hf import HFResponder

    return HFResponder(profile, cache_dir=cache_dir, device=decision.torch_device,
                       dtype=decision.dtype, batch_size=batch_size)
