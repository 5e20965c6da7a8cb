"""GPU benchmark of the vLLM judge: GPU-seconds per 1,000 judgements against the compute floor
and against the per-request way other tools drive the same engine.

Workload: the redteam node's real requests (its prompts, schema and max_tokens, captured from
`RedteamNode.run`) for N synthetic cases x the 2 default metrics (bias, toxicity).
Model: a Llama-3-8B-shaped config.json + the demo judge's tokenizer, run by vLLM with
`load_format="dummy"` (random weights, no weight file), or a real HF folder with --model-dir.

Phases, each in its own process so each starts with a free GPU:
  probe     bf16 matmul FLOP/s and memory bandwidth, measured (the floor's rates)
  ours_caps every request fed to one engine through vllm_backend's settings and code (step loop),
            as shipped: the grammar without string maxLength, strings closed by the caps processor
  ours      the same with each string's maxLength in the grammar (vllm_string_bounds = grammar)
  ours_clip the grammar without string maxLength and nothing closing the strings
  ours_outlines  the same with the outlines grammar engine instead of xgrammar
  baseline  vLLM's OpenAI-compatible server on 127.0.0.1 with the same engine settings, one
            request per case x metric, 16 concurrent (what per-request tools do)
  hf        the hf backend (transformers + outlines) on CUDA, same prompts, fewer cases
Each phase writes WORKDIR/<phase>.json; every run merges what is there into --out and prints
the figures, `ratio X` (baseline seconds / ours) and the three targets.

--dry-run needs no GPU and no vLLM: it builds the workload, counts its tokens with the demo
tokenizer, and prints the plan and the floor arithmetic with ASSUMED H100 rates.
--device cpu runs the chosen phases for real on vLLM's CPU build with a tiny Llama: the same
code paths, so a GPU host never meets a phase that fails on a typo; its figures mean nothing.
Exit code 1 when a phase failed or ran out of time (the others' figures are still written).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's code, not an older installed copy

import click
from benchlib import baseline as B
from benchlib import benchreport, floor, workload
from benchlib.phases import (
    PHASE_FUNCS,
    PHASES,
    SEED,
    engine_settings,
    load_tokenizer,
    reap_server,
    requests_for,
    shape_of,
    write_model_dir,
)

from nexagauge_local.judge.runtime import prompt_ids
from nexagauge_local.judge.types import JudgeRequest

ASSUMED_MAX_NUM_SEQS = 1024  # vLLM's default on >= 70 GiB GPUs (engine/arg_utils.py)


# ------------------------------------------------------------------ dry run


def build_dry_plan(cases: int, hf_cases: int, tokenizer_dir: Path | None, cache_dir: Path,
            concurrency: int) -> dict[str, Any]:  # fmt: skip
    """The plan and the floor arithmetic, from the real workload and ASSUMED H100 rates."""
    reqs = requests_for(cases, SEED, cache_dir)
    tok = load_tokenizer(tokenizer_dir, cache_dir)
    ids = [prompt_ids(tok, r.messages) for r in reqs]
    cached = workload.prefix_cache_estimate(ids)
    schema = reqs[0].schema
    min_answer = json.dumps(workload.minimal_answer(schema), separators=(",", ":"))
    min_out = len(tok(min_answer, add_special_tokens=False)["input_ids"]) + 1  # + EOS
    shape = floor.LLAMA3_8B
    hw = floor.Hardware(
        matmul_flops=floor.ASSUMED_H100_MATMUL_FLOPS, hbm_bytes_s=floor.ASSUMED_H100_HBM_BYTES_S,
        source="ASSUMED H100 rates, not measured in this run: 798 TFLOP/s bf16 matmul and "
        "3.0 TB/s copy as measured on an H100 (2026-11-13); datasheet peaks "
        "989 TFLOP/s dense bf16, 3.35 TB/s",
    )  # fmt: skip
    floors = {}
    for label, per in (("minimal_answer", min_out), ("max_tokens", reqs[0].max_tokens)):
        work = floor.Workload(requests=len(reqs), prompt_tokens=sum(map(len, ids)),
                              cached_prompt_tokens=cached, output_tokens=per * len(reqs),
                              longest_output=per)  # fmt: skip
        f = floor.compute_floor(shape, work, hw, ASSUMED_MAX_NUM_SEQS)
        floors[label] = {
            "output_tokens_each": per,
            "floor": f.model_dump(),
            "explain": floor.explain(shape, work, hw, f, ASSUMED_MAX_NUM_SEQS),
        }
    engine = engine_settings("<workdir>/model", dummy=True, gpu_mem=0.85)
    names = [r.schema.__name__ for r in reqs]
    schemas = {s: names.count(s) for s in sorted(set(names))}
    sizes = [len(i) for i in ids]
    lengths = {"total": sum(sizes), "first": sizes[0], "mean": sum(sizes) / len(sizes),
               "min": min(sizes), "max": max(sizes)}  # fmt: skip
    return {
        "dry_run": True,
        "cases": cases,
        "requests": len(reqs),
        "metrics": _metric_names(reqs),
        "nodes": sorted({r.node for r in reqs}),
        "prompt_versions": sorted({r.prompt_version for r in reqs}),
        "schemas": schemas,
        "max_tokens": sorted({r.max_tokens for r in reqs}),
        "tokenizer": type(tok).__name__ + f" ({len(tok)} tokens)",
        "prompt_tokens": lengths,
        "prefix_cache_estimate": {"tokens": cached, "share": cached / lengths["total"]},
        "minimal_answer": min_answer,
        "params": floor.param_counts(shape).model_dump()
        | {"total": floor.param_counts(shape).total},
        "hardware": hw.model_dump(),
        "max_num_seqs": ASSUMED_MAX_NUM_SEQS,
        "floors": floors,
        "engine": engine,
        "server_argv": B.server_argv("python3", engine, 8000),
        "concurrency": concurrency,
        "hf_cases": hf_cases,
        "first_request": {"messages": reqs[0].messages, "schema": reqs[0].schema.__name__},
    }


def _metric_names(reqs: list[JudgeRequest]) -> list[str]:
    """Metric names in the order the node asks them, read back from the prompts."""
    names: list[str] = []
    for r in reqs:
        text = r.messages[-1]["content"]
        name = text.split("for the metric '", 1)[1].split("'", 1)[0]
        if name not in names:
            names.append(name)
    return names


def print_dry(plan: dict[str, Any]) -> None:
    p = plan
    click.echo("bench_gpu DRY RUN: nothing measured, no GPU used")
    click.echo(
        f"workload: {p['cases']} synthetic cases x metrics {p['metrics']} through "
        f"RedteamNode.run = {p['requests']} requests (prompt {p['prompt_versions']})"
    )
    click.echo(f"schemas: {p['schemas']}; max_tokens {p['max_tokens']}")
    pt = p["prompt_tokens"]
    click.echo(
        f"prompt tokens ({p['tokenizer']}, chat template): total {pt['total']:,}, mean "
        f"{pt['mean']:.0f}, min {pt['min']}, max {pt['max']}; prefix cache could serve "
        f"{p['prefix_cache_estimate']['tokens']:,} ({p['prefix_cache_estimate']['share']:.1%})"
    )
    click.echo(
        f"model: Llama-3-8B-shaped config, {p['params']['total'] / 1e9:.3f} B params, "
        f"load_format=dummy (random weights, none on disk)"
    )
    click.echo(f"ours: vllm.LLM(**{json.dumps(p['engine'])}) then every request added to its engine, stepped until done")
    click.echo(f"baseline: {' '.join(p['server_argv'])}")
    click.echo(
        f"  client: openai.AsyncOpenAI, {p['concurrency']} concurrent, one request per "
        f"case x metric, response_format json_schema"
    )
    click.echo(
        f"hf: HFBackend(device=cuda, bfloat16) on {p['hf_cases']} cases, random weights "
        f"of the same shape saved once"
    )
    for label, f in p["floors"].items():
        click.echo(f"\nfloor with answers of {f['output_tokens_each']} tokens each ({label}):")
        click.echo(f["explain"])


# ------------------------------------------------------------------ orchestration


def merge_report(
    workdir: Path, shape: floor.LlamaShape, out: Path | None, echo: bool = True
) -> dict[str, Any]:
    """Summarise every phase file in `workdir` into `out` (after each phase, so a call cut off
    at its time limit still returns the phases that finished)."""
    phases = {p: json.loads((workdir / f"{p}.json").read_text())
              for p in PHASES if (workdir / f"{p}.json").is_file()}  # fmt: skip
    summary = benchreport.summarise(phases, shape)
    doc = {"summary": summary, "phases": phases, "shape": shape.model_dump()}
    if echo:
        for line in benchreport.lines(summary):
            click.echo(line)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1, default=str))
    return doc


@click.command(
    epilog="""\b
Examples:
  python scripts/bench_gpu.py --dry-run                      # plan + floor, no GPU
  python scripts/bench_gpu.py --dry-run --cases 50 --out plan.json
  python scripts/bench_gpu.py --workdir /tmp/bench \\
      --phases probe,ours_caps --out bench_gpu.json               # on the GPU host
  python scripts/bench_gpu.py --phases baseline --workdir /tmp/bench   # adds to the report
  python scripts/bench_gpu.py --device cpu --cases 8 --phases probe,ours_caps,baseline
      # the same phases on vLLM's CPU build with a tiny model: checks the run, not the GPU
"""
)
@click.option("--dry-run", is_flag=True, help="Plan and floor arithmetic only; no GPU, no vLLM.")
@click.option("--cases", type=click.IntRange(1), default=1000, show_default=True)
@click.option(
    "--hf-cases",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    help="Cases for the hf phase (slower; its figures are per 1,000).",
)
@click.option(
    "--phases",
    default="probe,ours_caps,ours,ours_outlines,baseline,hf",
    show_default=True,
    help=f"Comma-separated subset of {','.join(PHASES)}.",
)
@click.option(
    "--tokenizer",
    "tokenizer_dir",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="Tokenizer folder (default: the demo judge's, from its GGUF).",
)
@click.option(
    "--model-dir",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="A real HF Llama-family folder instead of the dummy Llama-3-8B.",
)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    default=None,
    help="Phase results and the model folder (default: a temp dir).",
)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="JSON report.")
@click.option(
    "--concurrency", type=click.IntRange(1), default=B.DEFAULT_CONCURRENCY, show_default=True
)
@click.option(
    "--baseline-deadline",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds after which the baseline sends no new request (the rest is "
    "extrapolated, and the report says so).",
)
@click.option("--gpu-memory-utilization", "gpu_mem", type=float, default=0.85, show_default=True)
@click.option("--phase-timeout", type=float, default=580.0, show_default=True)
@click.option(
    "--device",
    type=click.Choice(["cuda", "cpu"]),
    default="cuda",
    show_default=True,
    help="cpu: every phase on vLLM's CPU build with a tiny Llama (random weights) instead of "
    "the 8B, to check the run end to end before a GPU host is at hand; its figures mean "
    "nothing.",
)
@click.option("--phase-child", type=click.Choice(PHASES), default=None, hidden=True)
def main(dry_run: bool, cases: int, hf_cases: int, phases: str, tokenizer_dir: Path | None,
         model_dir: Path | None, workdir: Path | None, out: Path | None, concurrency: int,
         baseline_deadline: float, gpu_mem: float, phase_timeout: float, device: str,
         phase_child: str | None) -> None:  # fmt: skip
    """Benchmark the vLLM judge on one GPU (see the module docstring); --dry-run without one."""
    from nexagauge_local.settings import default_cache_dir

    if phase_child:
        cfg = json.loads((workdir / "bench_args.json").read_text())  # type: ignore[operator]
        result = PHASE_FUNCS[phase_child](cfg)
        (workdir / f"{phase_child}.json").write_text(json.dumps(result, indent=1, default=str))  # type: ignore[operator]
        return
    chosen = [p.strip() for p in phases.split(",") if p.strip()]
    bad = [p for p in chosen if p not in PHASES]
    if bad:
        raise click.BadParameter(f"unknown phase(s) {bad}; choose from {PHASES}",
                                 param_hint="--phases")  # fmt: skip
    cache_dir = default_cache_dir()
    if dry_run:
        plan = build_dry_plan(cases, hf_cases, tokenizer_dir, cache_dir, concurrency)
        print_dry(plan)
        if out:
            out.write_text(json.dumps(plan, indent=1, default=str))
        return
    workdir = workdir or Path(tempfile.mkdtemp(prefix="bench_gpu_"))
    workdir.mkdir(parents=True, exist_ok=True)
    if device == "cpu":  # the product's CPU-engine environment, inherited by every phase
        from nexagauge_local.judge.vllm.host import EngineHost, usable_cpus

        EngineHost("cpu", cpus=tuple(usable_cpus())).apply()
    if model_dir is None:
        tok = load_tokenizer(tokenizer_dir, cache_dir)
        shape = floor.LLAMA3_8B if device == "cuda" else floor.TINY_LLAMA
        model_dir = write_model_dir(workdir / "model", tok, shape)
        dummy = True
    else:
        shape, dummy = shape_of(model_dir), False
    cfg = {"cases": cases, "hf_cases": hf_cases, "workdir": str(workdir),
           "model_dir": str(model_dir), "dummy": dummy, "cache_dir": str(workdir / "cache"),
           "concurrency": concurrency, "baseline_deadline_s": baseline_deadline,
           "phase_timeout_s": phase_timeout, "device": device,
           "engine": engine_settings(str(model_dir), dummy, gpu_mem, device)}  # fmt: skip
    (workdir / "bench_args.json").write_text(json.dumps(cfg, indent=1))
    failed: list[str] = []
    for name in chosen:
        click.echo(f"--- phase {name}", err=True)
        argv = [sys.executable, __file__, "--phase-child", name, "--workdir", str(workdir)]
        (workdir / f"{name}.json").unlink(missing_ok=True)  # never report an older run's phase
        try:
            proc = subprocess.run(argv, timeout=phase_timeout, check=False)
        except subprocess.TimeoutExpired:
            click.echo(f"phase {name}: over {phase_timeout:.0f} s, stopped", err=True)
            failed.append(name)
            continue
        finally:
            reap_server(workdir)
        if proc.returncode != 0:
            click.echo(f"phase {name}: failed with exit code {proc.returncode}", err=True)
            failed.append(name)
        merge_report(workdir, shape, out, echo=False)
    merge_report(workdir, shape, out)
    if failed:  # the figures of the phases that ended are above and in --out
        click.echo(f"phases that did not end: {', '.join(failed)}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
