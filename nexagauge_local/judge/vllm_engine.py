"""vLLM engine plumbing shared by the in-process backend and the data-parallel workers.

Why its own module: a data-parallel worker (vllm_pool.py) runs in a fresh spawned interpreter
and needs only this - building SamplingParams, stepping the engine, turning outputs into plain
picklable dicts - not the backend class. vllm itself is imported lazily (`import_vllm`), so this
module imports fine without it and the pure parts are unit-tested with a fake `vllm` package.
"""

from __future__ import annotations

import importlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, JudgeProfile
from nexagauge_local.judge.schemas import engine_schema, parse_output
from nexagauge_local.judge.types import JudgeRequest, JudgeResult, Messages

TOP_LOGPROBS = 5
LOGPROB_SOURCE = "vllm_sampler_top5"
INSTALL_HINT = "pip install 'nexagauge-local[gpu]'"
# (positions in the list handed to run_engine, their outputs as dicts, wall since last batch)
OnDone = Callable[[list[int], list[dict[str, Any]], float], None]
_REQUEST_IDS = itertools.count()


class VLLMMissing(ImportError):
    def __init__(self, cause: BaseException | None = None) -> None:
        why = f" ({cause})" if cause else ""
        super().__init__(
            f"the vllm backend needs vLLM, which is not importable here{why}. Install it with "
            f"`{INSTALL_HINT}` on a CUDA host, or use `--backend hf`."
        )


def spawn_engine_core() -> None:
    """Make vLLM spawn, not fork, its engine core: the GPU check before any work asks torch
    about CUDA in this process, and a forked child of such a process cannot use CUDA ("Cannot
    re-initialize CUDA in forked subprocess", seen on an H100 with vLLM 0.26). A value the user
    set is kept."""
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")


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
    picklable by reference, so the schema travels as its JSON schema dict), with its prompt
    already tokenised by the parent."""

    messages: Messages
    json_schema: dict[str, Any]
    max_tokens: int
    want_logprobs: bool
    prompt_ids: tuple[int, ...] = ()


def to_wire(
    requests: Sequence[JudgeRequest],
    ids: Sequence[Sequence[int]] | None = None,
    clip_strings: bool = False,
) -> list[WireRequest]:
    """`clip_strings`: the profile's string_bounds is "clip" (schemas.engine_schema_json)."""
    return [
        WireRequest(r.messages, engine_schema(r.schema, clip_strings), r.max_tokens,
                    r.want_logprobs, tuple(ids[i]) if ids is not None else ())
        for i, r in enumerate(requests)
    ]


def build_sampling_params(
    vllm: Any, requests: Sequence[WireRequest], seed: int, stop_ids: Sequence[int] = ()
) -> list[Any]:
    """One SamplingParams per request: greedy, seeded, explicit max_tokens, its own schema,
    every EOS id as a stop token, and only the final output reported (we step the engine)."""
    from_sp = importlib.import_module(f"{vllm.__name__}.sampling_params")
    final_only = getattr(getattr(from_sp, "RequestOutputKind", None), "FINAL_ONLY", None)
    params = []
    for r in requests:
        kw: dict[str, Any] = {
            "temperature": 0.0,
            "seed": seed,
            "max_tokens": r.max_tokens,
            "structured_outputs": from_sp.StructuredOutputsParams(json=r.json_schema),
            "logprobs": TOP_LOGPROBS if r.want_logprobs else None,
        }
        if stop_ids:
            kw["stop_token_ids"] = list(stop_ids)
        if final_only is not None:
            kw["output_kind"] = final_only
        params.append(vllm.SamplingParams(**kw))
    return params


def engine_kwargs(
    model_path: str,
    profile: JudgeProfile,
    dtype: str,
    seed: int,
    tensor_parallel: int,
    grammar: str = DEFAULT_GRAMMAR["vllm"],
) -> dict[str, Any]:
    structured: dict[str, Any] = {"backend": grammar}
    if grammar in ("xgrammar", "guidance"):  # outlines has no such flag
        structured["disable_any_whitespace"] = True
    return {
        "model": model_path,
        "dtype": dtype,
        "max_model_len": profile.max_model_len,
        "seed": seed,
        "tensor_parallel_size": tensor_parallel,
        "structured_outputs_config": structured,
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
        "stop_reason": getattr(comp, "stop_reason", None),
        "cached_tokens": getattr(output, "num_cached_tokens", None) or 0,
        "logprobs": logprobs,
    }


def to_result(raw: dict[str, Any], request: JudgeRequest) -> JudgeResult:
    if raw.get("error"):
        return JudgeResult(parsed=None, raw_text="", prompt_tokens=raw["prompt_tokens"],
                           output_tokens=0, gpu_seconds=0.0, error=raw["error"])
    parsed, error = parse_output(
        request.schema, raw["text"], hit_max_tokens=raw["finish_reason"] == "length"
    )
    if error and error.startswith("invalid"):  # why the engine stopped, for the error's reader
        why = f" [vllm finish_reason={raw['finish_reason']}, stop_reason={raw.get('stop_reason')}]"
        error = error[: 300 - len(why)] + why
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
    llm: Any,
    vllm: Any,
    wire: Sequence[WireRequest],
    seed: int,
    stop_ids: Sequence[int],
    on_done: OnDone,
) -> float:
    """Add every request to the engine, step it, report finished requests as they complete.

    A request the engine refuses on `add_request` (a malformed prompt, a limit we did not
    foresee) fails alone with a `backend:` error instead of failing the list. Engines without
    a step API fall back to one `LLM.generate` call. Returns the total wall time."""
    params = build_sampling_params(vllm, wire, seed, stop_ids)
    prompts = [{"prompt_token_ids": list(r.prompt_ids)} for r in wire]
    engine = getattr(llm, "llm_engine", None)
    started = last = time.perf_counter()
    if engine is None or not hasattr(engine, "step"):
        outputs = llm.generate(prompts, sampling_params=params, use_tqdm=False)
        on_done(list(range(len(wire))), [output_to_dict(o) for o in outputs],
                time.perf_counter() - started)
        return time.perf_counter() - started
    ids: dict[str, int] = {}
    refused: list[int] = []
    refusals: list[dict[str, Any]] = []
    for i, (prompt, sp) in enumerate(zip(prompts, params)):
        rid = f"ng-{next(_REQUEST_IDS)}"
        try:
            engine.add_request(rid, prompt, sp)
        except ValueError as exc:
            refused.append(i)
            refusals.append(refusal_dict(len(prompt["prompt_token_ids"]), exc))
            continue
        ids[rid] = i
    if refused:
        on_done(refused, refusals, 0.0)
    while engine.has_unfinished_requests():
        finished = [o for o in engine.step() if o.finished]
        if finished:
            now = time.perf_counter()
            on_done([ids[o.request_id] for o in finished],
                    [output_to_dict(o) for o in finished], now - last)
            last = now
    return time.perf_counter() - started


def refusal_dict(prompt_tokens: int, exc: BaseException) -> dict[str, Any]:
    return {"text": "", "prompt_tokens": prompt_tokens, "output_tokens": 0,
            "finish_reason": None, "cached_tokens": 0, "logprobs": None,
            "error": f"backend: vllm refused the request: {exc}"[:300]}
