"""The GPU benchmark's phases and the workload/model helpers they share with its dry run.

Each phase runs in its own process (scripts/bench_gpu.py starts them), reads the run's
settings from WORKDIR/bench_args.json and returns its measurements as a JSON-able dict;
benchreport.py turns those into figures. Nothing here imports vLLM or touches CUDA until a
phase function is called, so the module imports on a machine without a GPU.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchlib import baseline as B
from benchlib import floor, workload
from benchlib.openai_server import stop_server
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.schemas import parse_output
from nexagauge_local.judge.types import JudgeRequest

PHASES = ("probe", "ours_caps", "ours", "ours_clip", "ours_outlines", "baseline", "hf")
WARM_CASES, WARM_SEED = 16, 1  # warm-up cases differ from the timed ones (no free cache hits)
BASELINE_MARGIN_S = 90.0  # in-flight answers + server shutdown after the last request starts
SERVER_PID = "server.pid"
SEED = 0


# ------------------------------------------------------------------ workload and model


def load_tokenizer(tokenizer_dir: Path | None, cache_dir: Path) -> Any:
    if tokenizer_dir is None:
        return workload.demo_tokenizer(cache_dir)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir)


def requests_for(cases: int, seed: int, cache_dir: Path) -> list[JudgeRequest]:
    return workload.redteam_requests(workload.synthetic_cases(cases, seed), cache_dir)


def write_model_dir(target: Path, tokenizer: Any, shape: floor.LlamaShape) -> Path:
    """config.json (vLLM builds random weights from it) + the tokenizer files."""
    target.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(target)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else 0
    cfg = floor.hf_config(shape, bos, tokenizer.eos_token_id)
    (target / "config.json").write_text(json.dumps(cfg, indent=1))
    return target


def shape_of(model_dir: Path) -> floor.LlamaShape:
    """A real model folder's shape, for the floor (Llama-family configs)."""
    c = json.loads((model_dir / "config.json").read_text())
    return floor.LlamaShape(
        hidden=c["hidden_size"], intermediate=c["intermediate_size"],
        layers=c["num_hidden_layers"], heads=c["num_attention_heads"],
        kv_heads=c.get("num_key_value_heads", c["num_attention_heads"]), vocab=c["vocab_size"],
        tied_embeddings=bool(c.get("tie_word_embeddings", False)),
    )  # fmt: skip


def engine_settings(
    model_dir: str, dummy: bool, gpu_mem: float, device: str = "cuda"
) -> dict[str, Any]:
    """vllm_backend's own engine kwargs (same for ours and the server) + the bench's two.

    On `cpu` (vLLM's CPU build) the dtype is the host's (float32 where bf16 is emulated) and
    the KV cache is sized by vLLM's CPU settings, not by a GPU memory fraction."""
    from nexagauge_local.judge.runtime.devices import resolve_dtype
    from nexagauge_local.judge.vllm.backend import engine_kwargs

    profile = JudgeProfile(name="bench", weights=model_dir, max_model_len=8192)
    kwargs = engine_kwargs(model_dir, profile, resolve_dtype("auto", device), SEED, 1,
                           device="cuda" if device == "cuda" else "cpu")  # fmt: skip
    if device == "cuda":
        kwargs["gpu_memory_utilization"] = gpu_mem
    if dummy:
        kwargs["load_format"] = "dummy"
    return kwargs


def tally(results: list[tuple[str, str | None, int, int]]) -> dict[str, Any]:
    """(text, error, prompt_tokens, output_tokens) per answer -> the phase's counts."""
    errors = [e for _, e, _, _ in results if e]
    return {
        "prompt_tokens": sum(p for _, _, p, _ in results),
        "output_tokens": sum(o for _, _, _, o in results),
        "longest_output": max((o for _, _, _, o in results), default=0),
        "valid": len(results) - len(errors),
        "errors": sorted(set(errors))[:5],
    }


# ------------------------------------------------------------------ phases (on the GPU)


def phase_probe(cfg: dict[str, Any]) -> dict[str, Any]:
    from benchlib.gpuprobe import measure_rates

    if cfg.get("device", "cuda") == "cpu":  # the same arithmetic, sized for a CPU
        return measure_rates("cpu", n=1024, copy_mib=256, iters=3, warmup=1).model_dump()
    rates = measure_rates("cuda")
    smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return rates.model_dump() | {"nvidia_smi": smi.stdout.strip()}


def phase_ours(cfg: dict[str, Any]) -> dict[str, Any]:
    """The backend's own engine path (token-id prompts, add_request + step loop, stop ids)
    with the profile's default grammar engine (xgrammar)."""
    return _run_ours(cfg, cfg["engine"])


def phase_ours_caps(cfg: dict[str, Any]) -> dict[str, Any]:
    """The product's default on vLLM: the grammar without string maxLength and each string
    closed at its bound by the string-caps logits processor (judge/vllm/caps.py), on the V1
    model runner that such processors need (vllm/host.py)."""
    from nexagauge_local.judge.vllm.cap_rows import PROCESSOR_FQCN

    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
    engine = dict(cfg["engine"], logits_processors=[PROCESSOR_FQCN])
    return _run_ours(cfg, engine, clip_strings=True, string_caps=True) | {
        "string_bounds": "clip+caps"}


def phase_ours_clip(cfg: dict[str, Any]) -> dict[str, Any]:
    """The same requests and engine with the grammar without string maxLength
    (schemas.grammar_json) and nothing ending the strings: what the caps are measured against
    (the first H100 run found the bounded grammar at 0.36 s a step)."""
    return _run_ours(cfg, cfg["engine"], clip_strings=True) | {"string_bounds": "clip"}


def phase_ours_outlines(cfg: dict[str, Any]) -> dict[str, Any]:
    """The same requests and engine with `--grammar-backend outlines`, to compare the engines."""
    from nexagauge_local.judge.vllm.backend import engine_kwargs

    kwargs = dict(cfg["engine"])
    kwargs["structured_outputs_config"] = engine_kwargs(
        kwargs["model"], JudgeProfile(name="bench", weights=kwargs["model"]), "bfloat16", SEED, 1,
        "outlines")["structured_outputs_config"]  # fmt: skip
    return _run_ours(cfg, kwargs) | {"grammar": "outlines"}


def _run_ours(
    cfg: dict[str, Any], engine: dict[str, Any], clip_strings: bool = False,
    string_caps: bool = False,
) -> dict[str, Any]:
    from nexagauge_local.judge.ledger import split_device_seconds
    from nexagauge_local.judge.runtime import generation_eos_ids, prompt_ids
    from nexagauge_local.judge.vllm.backend import (
        eos_order,
        import_vllm,
        load_tokenizer_at,
        run_engine,
        to_result,
        to_wire,
    )

    vllm = import_vllm()
    reqs = requests_for(cfg["cases"], SEED, Path(cfg["cache_dir"]))
    warm = requests_for(WARM_CASES, WARM_SEED, Path(cfg["cache_dir"]))
    started = time.perf_counter()
    llm = vllm.LLM(**engine)
    load_s = time.perf_counter() - started
    tok = load_tokenizer_at(engine["model"])  # the backend's tokenizer and chat policy
    stop_ids = eos_order(generation_eos_ids(engine["model"], tok), tok.eos_token_id)

    def run(batch: list[JudgeRequest]) -> tuple[list[dict[str, Any]], float, int]:
        raws: list[dict[str, Any] | None] = [None] * len(batch)
        handovers = 0

        def on_done(pos: list[int], got: list[dict[str, Any]], _wall: float) -> None:
            nonlocal handovers
            handovers += 1
            for i, raw in zip(pos, got, strict=True):
                raws[i] = raw

        wire = to_wire(batch, [prompt_ids(tok, r.messages) for r in batch], clip_strings,
                       string_caps)
        wall = run_engine(llm, vllm, wire, SEED, stop_ids, on_done)
        return [r for r in raws if r is not None], wall, handovers

    run(warm)
    raws, wall, handovers = run(reqs)
    results = [to_result(raw, req) for raw, req in zip(raws, reqs, strict=True)]
    split_device_seconds(results, wall, 1)
    sched = getattr(getattr(llm.llm_engine, "vllm_config", None), "scheduler_config", None)
    return {
        "requests": len(reqs), "wall_s": wall, "load_s": load_s, "vllm": vllm.__version__,
        "grammar": engine["structured_outputs_config"]["backend"], "handovers": handovers,
        "cached_tokens": sum(r["cached_tokens"] for r in raws),
        "max_num_seqs": getattr(sched, "max_num_seqs", None),
        **tally([(r.raw_text, r.error, r.prompt_tokens, r.output_tokens) for r in results]),
    }  # fmt: skip


def phase_baseline(cfg: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    reqs = requests_for(cfg["cases"], SEED, Path(cfg["cache_dir"]))
    warm = requests_for(WARM_CASES, WARM_SEED, Path(cfg["cache_dir"]))
    workdir = Path(cfg["workdir"])
    port = free_port()
    log = open(workdir / "server.log", "w")  # noqa: SIM115 - closed below
    argv = B.server_argv(sys.executable, cfg["engine"], port)
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (workdir / SERVER_PID).write_text(str(server.pid))
    try:
        _wait_healthy(port, server, timeout_s=min(420.0, cfg["phase_timeout_s"] / 2))
        load_s = time.perf_counter() - t0
        # Stop sending early enough that in-flight answers and shutdown fit in the phase.
        left = cfg["phase_timeout_s"] - (time.perf_counter() - t0) - BASELINE_MARGIN_S
        cfg = cfg | {"baseline_deadline_s": max(10.0, min(cfg["baseline_deadline_s"], left))}
        answers, wall = asyncio.run(_drive(port, reqs, warm, cfg))
    finally:
        stop_server(server, term_s=30.0, kill_s=10.0)
        log.close()
        (workdir / SERVER_PID).unlink(missing_ok=True)
    done = [(a, r) for a, r in zip(answers, reqs, strict=True) if a is not None]
    rows = []
    for a, r in done:
        _, error = parse_output(r.schema, a["text"], hit_max_tokens=a["finish_reason"] == "length")
        rows.append((a["text"], error, a["prompt_tokens"], a["output_tokens"]))
    return {
        "requests": len(reqs), "completed": len(done), "wall_s": wall, "load_s": load_s,
        "concurrency": cfg["concurrency"], "deadline_s": cfg["baseline_deadline_s"],
        "server_argv": argv, **tally(rows),
    }  # fmt: skip


async def _drive(
    port: int, reqs: list[JudgeRequest], warm: list[JudgeRequest], cfg: dict[str, Any]
) -> tuple[list[dict[str, Any] | None], float]:
    send, close = B.openai_sender(f"http://127.0.0.1:{port}/v1")
    try:
        await B.run_concurrent(send, [B.chat_payload(r, SEED) for r in warm], cfg["concurrency"])
        return await B.run_concurrent(
            send, [B.chat_payload(r, SEED) for r in reqs], cfg["concurrency"],
            deadline_s=cfg["baseline_deadline_s"],
        )  # fmt: skip
    finally:
        await close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(port: int, server: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"vLLM server exited with {server.returncode} (see server.log)")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"vLLM server not healthy after {timeout_s:.0f} s (see server.log)")


def reap_server(workdir: Path) -> None:
    """If a baseline child was killed at its timeout, its server (own session) would keep the
    GPU: kill that process group, which this script started and recorded."""
    pid_file = workdir / SERVER_PID
    if not pid_file.is_file():
        return
    try:
        os.killpg(int(pid_file.read_text()), signal.SIGKILL)
    except (ProcessLookupError, ValueError):
        pass
    pid_file.unlink(missing_ok=True)


def phase_hf(cfg: dict[str, Any]) -> dict[str, Any]:
    from nexagauge_local.judge.hf.backend import HFBackend

    weights = Path(cfg["model_dir"]) if not cfg["dummy"] else _random_hf_weights(cfg)
    reqs = requests_for(cfg["hf_cases"], SEED, Path(cfg["cache_dir"]))
    warm = requests_for(2, WARM_SEED, Path(cfg["cache_dir"]))
    profile = JudgeProfile(name="bench-hf", weights=str(weights), dtype="bfloat16")
    backend = HFBackend(profile, cache_dir=Path(cfg["cache_dir"]),
                        device=cfg.get("device", "cuda"), dtype="bfloat16")  # fmt: skip
    backend.generate(warm)
    started = time.perf_counter()
    results = backend.generate(reqs)
    wall = time.perf_counter() - started
    return {
        "requests": len(reqs), "wall_s": wall, "load_s": backend.load_seconds,
        "weights": "random (transformers init), Llama-3-8B shape" if cfg["dummy"] else str(weights),
        **tally([(r.raw_text, r.error, r.prompt_tokens, r.output_tokens) for r in results]),
    }  # fmt: skip


def _random_hf_weights(cfg: dict[str, Any]) -> Path:
    """transformers cannot run without weight files: save a random-init model of the same
    shape once (bf16 safetensors, ~16 GB for 8B) next to the dummy config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    src, dst = Path(cfg["model_dir"]), Path(cfg["workdir"]) / "hf-weights"
    if any(dst.glob("*.safetensors")):
        return dst
    with torch.device(cfg.get("device", "cuda")):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src),
                                                 dtype=torch.bfloat16)  # fmt: skip
    model.save_pretrained(dst)
    for f in src.iterdir():
        if f.name != "config.json" and f.is_file():
            shutil.copy2(f, dst / f.name)
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return dst


PHASE_FUNCS = {"probe": phase_probe, "ours_caps": phase_ours_caps, "ours": phase_ours,
               "ours_clip": phase_ours_clip,
               "ours_outlines": phase_ours_outlines, "baseline": phase_baseline,
               "hf": phase_hf}  # fmt: skip
