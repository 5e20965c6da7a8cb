"""The `vllm` judge backend (GPU): one `LLM.chat` over all of a node's requests.

vLLM does continuous batching and prefix caching across the whole list, so we hand it
everything at once with one SamplingParams per request (each carrying its own JSON schema as
`structured_outputs`). Engine config pins xgrammar with `disable_any_whitespace` (xgrammar can
loop on whitespace otherwise), temperature 0, a fixed seed and an explicit max_tokens (vLLM's
default is 16).

Two or more GPUs: `parallelism = "tensor"` runs one engine with tensor_parallel_size = N;
`"data"` runs one engine per GPU, each in its own spawned process with CUDA_VISIBLE_DEVICES set
before vllm is imported (a single engine gets it from `pin_engine_devices`), requests sharded contiguously (same-rubric prompts stay on one engine,
which keeps prefix-cache hits) and results merged back in order.

vllm is imported lazily: this module imports fine without it, and the pure parts (sampling
params, sharding, output conversion) are unit-tested with a fake `vllm` module.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexagauge_local.judge.cost import split_device_seconds
from nexagauge_local.judge.profiles import JudgeProfile, fingerprint
from nexagauge_local.judge.schemas import parse_output
from nexagauge_local.judge.types import JudgeRequest, JudgeResult, Messages
from nexagauge_local.judge.weights import count_prompt_tokens, engine_model_path, load_tokenizer

TOP_LOGPROBS = 5
LOGPROB_SOURCE = "vllm_sampler_top5"
INSTALL_HINT = "pip install 'nexagauge-local[gpu]'"


class VLLMMissing(ImportError):
    def __init__(self, cause: BaseException | None = None) -> None:
        why = f" ({cause})" if cause else ""
        super().__init__(
            f"the vllm backend needs vLLM, which is not importable here{why}. Install it with "
            f"`{INSTALL_HINT}` on a CUDA host, or use `--backend hf`."
        )


def import_vllm() -> Any:
    try:
        import vllm
    except Exception as exc:  # ImportError, or a CUDA/ABI error raised while importing
        raise VLLMMissing(exc) from exc
    return vllm


# ------------------------------------------------------------------ pure parts


@dataclass(frozen=True)
class WireRequest:
    """A picklable request for a worker process (pydantic classes made by create_model are not
    picklable by reference, so the schema travels as its JSON schema dict)."""

    messages: Messages
    json_schema: dict[str, Any]
    max_tokens: int
    want_logprobs: bool


def to_wire(requests: Sequence[JudgeRequest]) -> list[WireRequest]:
    return [
        WireRequest(r.messages, r.schema.model_json_schema(), r.max_tokens, r.want_logprobs)
        for r in requests
    ]


def build_sampling_params(vllm: Any, requests: Sequence[WireRequest], seed: int) -> list[Any]:
    """One SamplingParams per request: greedy, seeded, explicit max_tokens, its own schema."""
    from_sp = importlib.import_module(f"{vllm.__name__}.sampling_params")
    params = []
    for r in requests:
        params.append(
            vllm.SamplingParams(
                temperature=0.0,
                seed=seed,
                max_tokens=r.max_tokens,
                structured_outputs=from_sp.StructuredOutputsParams(json=r.json_schema),
                logprobs=TOP_LOGPROBS if r.want_logprobs else None,
            )
        )
    return params


def engine_kwargs(
    model_path: str, profile: JudgeProfile, dtype: str, seed: int, tensor_parallel: int
) -> dict[str, Any]:
    return {
        "model": model_path,
        "dtype": dtype,
        "max_model_len": profile.max_model_len,
        "seed": seed,
        "tensor_parallel_size": tensor_parallel,
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "enable_prefix_caching": True,
    }


def shard_ranges(n_items: int, n_shards: int) -> list[range]:
    """Contiguous, near-equal shards (the first `n_items % n_shards` get one extra)."""
    n_shards = max(1, min(n_shards, n_items)) if n_items else 1
    base, extra = divmod(n_items, n_shards)
    out, start = [], 0
    for k in range(n_shards):
        size = base + (1 if k < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


def merge_shards(
    parts: Sequence[Sequence[Any]], ranges: Sequence[range], n_items: int
) -> list[Any]:
    """Put each shard's results back at its requests' positions."""
    merged: list[Any] = [None] * n_items
    for part, rng in zip(parts, ranges):
        if len(part) != len(rng):
            raise RuntimeError(f"worker returned {len(part)} results for {len(rng)} requests")
        for i, item in zip(rng, part):
            merged[i] = item
    return merged


def output_to_dict(output: Any) -> dict[str, Any]:
    """A vLLM RequestOutput as a plain dict (text, token counts, finish reason, top-5)."""
    comp = output.outputs[0]
    logprobs = None
    if comp.logprobs is not None:
        logprobs = []
        for step in comp.logprobs:
            alts: dict[str, float] = {}
            ranked = sorted(step.items(), key=lambda kv: -kv[1].logprob)[:TOP_LOGPROBS]
            for tid, lp in ranked:
                text = lp.decoded_token if lp.decoded_token is not None else str(tid)
                alts[text] = max(lp.logprob, alts.get(text, float("-inf")))
            logprobs.append(alts)
    return {
        "text": comp.text,
        "prompt_tokens": len(output.prompt_token_ids or []),
        "output_tokens": len(comp.token_ids),
        "finish_reason": comp.finish_reason,
        "cached_tokens": getattr(output, "num_cached_tokens", None) or 0,
        "logprobs": logprobs,
    }


def to_result(raw: dict[str, Any], request: JudgeRequest) -> JudgeResult:
    parsed, error = parse_output(
        request.schema, raw["text"], hit_max_tokens=raw["finish_reason"] == "length"
    )
    extra: dict[str, Any] = {"prefix_cached_tokens": raw["cached_tokens"]}
    if request.want_logprobs:
        extra["logprob_source"] = LOGPROB_SOURCE
    return JudgeResult(
        parsed=parsed,
        raw_text=raw["text"],
        prompt_tokens=raw["prompt_tokens"],
        output_tokens=raw["output_tokens"],
        gpu_seconds=0.0,
        error=error,
        token_logprobs=raw["logprobs"] if request.want_logprobs else None,
        extra=extra,
    )


def run_engine(
    llm: Any, vllm: Any, wire: Sequence[WireRequest], seed: int
) -> tuple[list[dict[str, Any]], float]:
    """One `LLM.chat` over all requests; returns plain dicts and the call's wall time."""
    params = build_sampling_params(vllm, wire, seed)
    started = time.perf_counter()
    outputs = llm.chat([r.messages for r in wire], sampling_params=params, use_tqdm=False)
    wall = time.perf_counter() - started
    return [output_to_dict(o) for o in outputs], wall


def pin_engine_devices(device_ids: Sequence[str]) -> None:
    """Point an in-process vLLM engine at its GPUs, right before it is created.

    This is the one place the package writes CUDA_VISIBLE_DEVICES into its own process: vLLM
    takes no device argument and its engine core (a child process) inherits the variable. Every
    other engine gets its GPU ids as a parameter (hf: a `cuda:N` device; data-parallel vLLM:
    the variable is set inside each spawned worker, see `_worker_main`)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(device_ids)


# ------------------------------------------------------------------ data-parallel worker


def _worker_main(
    device_id: str, kwargs: dict[str, Any], seed: int, inbox: Any, outbox: Any
) -> None:
    """Child process: pin the GPU *before* importing vllm, build the engine, serve shards."""
    os.environ["CUDA_VISIBLE_DEVICES"] = device_id
    try:
        vllm = import_vllm()
        llm = vllm.LLM(**kwargs)
        outbox.put(("ready", None))
    except Exception as exc:  # noqa: BLE001 - report to the parent instead of dying silently
        outbox.put(("error", repr(exc)))
        return
    while True:
        job = inbox.get()
        if job is None:
            return
        try:
            outbox.put(("ok", run_engine(llm, vllm, job, seed)))
        except Exception as exc:  # noqa: BLE001 - the parent re-raises it
            outbox.put(("error", repr(exc)))


class _DataParallelPool:
    def __init__(self, device_ids: Sequence[str], kwargs: dict[str, Any], seed: int) -> None:
        ctx = mp.get_context("spawn")
        self.workers = []
        for dev in device_ids:
            inbox, outbox = ctx.Queue(), ctx.Queue()
            proc = ctx.Process(
                target=_worker_main, args=(dev, kwargs, seed, inbox, outbox), daemon=True
            )
            proc.start()
            self.workers.append((proc, inbox, outbox))
        for _, _, outbox in self.workers:
            status, info = outbox.get()
            if status != "ready":
                self.close()
                raise RuntimeError(f"vllm data-parallel worker failed to start: {info}")

    def run(
        self, wire: Sequence[WireRequest]
    ) -> tuple[list[dict[str, Any]], list[float], list[range]]:
        ranges = shard_ranges(len(wire), len(self.workers))
        for (_, inbox, _), rng in zip(self.workers, ranges):
            inbox.put([wire[i] for i in rng])
        parts, walls = [], []
        for _, _, outbox in self.workers[: len(ranges)]:
            status, payload = outbox.get()
            if status != "ok":
                raise RuntimeError(f"vllm worker failed: {payload}")
            parts.append(payload[0])
            walls.append(payload[1])
        return merge_shards(parts, ranges, len(wire)), walls, ranges

    def close(self) -> None:
        for proc, inbox, _ in self.workers:
            if proc.is_alive():
                inbox.put(None)
                proc.join(timeout=30)


# ------------------------------------------------------------------ backend


class VLLMBackend:
    """vLLM judge backend: tensor-parallel in-process, or data-parallel over spawned engines."""

    name = "vllm"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        dtype: str,
        device_ids: Sequence[str] = ("0",),
        seed: int = 0,
        cache_dir: Path,
        model_path: str | None = None,
    ) -> None:
        self.profile = profile
        self.cache_dir = Path(cache_dir)
        self.dtype = dtype
        self.seed = seed
        self.device_ids = tuple(device_ids)
        self.gpus = len(self.device_ids)
        self.fingerprint = fingerprint(profile, self.name, dtype)
        self.data_parallel = profile.parallelism == "data" and self.gpus > 1
        path = model_path or engine_model_path(profile, self.cache_dir)
        tp = 1 if self.data_parallel else self.gpus
        kwargs = engine_kwargs(path, profile, dtype, seed, tp)
        started = time.perf_counter()
        self._pool: _DataParallelPool | None = None
        if self.data_parallel:
            self._pool = _DataParallelPool(self.device_ids, kwargs, seed)
        else:
            pin_engine_devices(self.device_ids)
            self._vllm = import_vllm()
            self._llm = self._vllm.LLM(**kwargs)
            self.tokenizer = self._llm.get_tokenizer()
        self.load_seconds = time.perf_counter() - started

    def count_tokens(self, messages: Messages) -> int:
        tok = getattr(self, "tokenizer", None) or load_tokenizer(self.profile, self.cache_dir)
        return count_prompt_tokens(tok, messages)

    def generate(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        if not requests:
            return []
        wire = to_wire(requests)
        if self._pool is not None:
            raws, walls, ranges = self._pool.run(wire)
            results = [to_result(raw, req) for raw, req in zip(raws, requests)]
            for rng, wall in zip(ranges, walls):  # each engine held one GPU for its wall time
                split_device_seconds([results[i] for i in rng], wall, 1)
            return results
        raws, wall = run_engine(self._llm, self._vllm, wire, self.seed)
        results = [to_result(raw, req) for raw, req in zip(raws, requests)]
        split_device_seconds(results, wall, self.gpus)
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
