"""How honest is `estimate`? Predicted output tokens and device-seconds against the run's own.

Why a script: the estimate's targets are to land within 30% (output tokens) and 20%
(device-seconds) of the run on the peer sample, and device-seconds can only be judged on a quiet
host, so the measurement must be repeatable wherever a quiet host is found (a GPU host's idle
cores, for one). Steps, all through the real CLI in fresh processes and one private cache:

  1. history: `run TARGET` on --history-input (the bundled sample by default), so the cache
     holds this judge's output tokens and device-seconds per schema on this host;
  2. `estimate TARGET --json` on --input;
  3. `run TARGET` on --input;
  4. predicted / actual for output tokens and device-seconds, summed over the LLM nodes.

It prints what it compared, on what host (cores, load average, GPU), and the ratios.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import click
from benchlib.scratch import scratch_dir

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
TARGETS = {"output_tokens": 0.30, "gpu_seconds": 0.20}  # the targets, relative error


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The checkout's CLI (cwd = ROOT wins over an installed copy), output captured."""
    cmd = [sys.executable, "-m", "nexagauge_local", *args]
    done = subprocess.run(cmd, check=False, cwd=ROOT, env=env, text=True, capture_output=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise click.ClickException(f"{' '.join(args[:2])} exited {done.returncode}")
    return done


def _host() -> dict[str, Any]:
    gpu = None
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "gpu": gpu,
    }


def predicted(est: dict[str, Any]) -> dict[str, Any]:
    """Sum the LLM nodes' predictions; device-seconds is None when any node has none."""
    judged = [n["judge"] for n in est["nodes"].values() if "judge" in n]
    secs = [j["gpu_seconds"] for j in judged]
    return {
        "requests": sum(j["uncached"] for j in judged),
        "output_tokens": sum(j["output_tokens"] for j in judged),
        "output_spread": round(sum(j.get("output_spread", 0) ** 2 for j in judged) ** 0.5),
        "gpu_seconds": None if any(s is None for s in secs) else round(sum(secs), 2),
        "sources": sorted({str(j["gpu_seconds_source"]) for j in judged}),
    }


def actual(summary: dict[str, Any]) -> dict[str, Any]:
    t = summary["cost"]  # the run totals
    return {
        "requests": t["requests"] - t["cache_hits"],
        "output_tokens": t["output_tokens"],
        "gpu_seconds": round(t["gpu_seconds"], 2),
    }


def compare(pred: dict[str, Any], act: dict[str, Any]) -> dict[str, Any]:
    """Relative error (pred / actual - 1) per measure, and whether it is inside its bound."""
    out: dict[str, Any] = {}
    for key, bound in TARGETS.items():
        p, a = pred[key], act[key]
        err = None if p is None or not a else p / a - 1
        out[key] = {"predicted": p, "actual": a, "error": None if err is None else round(err, 3),
                    "bound": bound, "met": err is not None and abs(err) <= bound}  # fmt: skip
    return out


def _last_sample(db: Path) -> int:
    """The judge_samples row the history run ended at (the run's rows come after it)."""
    with closing(sqlite3.connect(db)) as con:
        return int(con.execute("SELECT COALESCE(MAX(rowid), 0) FROM judge_samples").fetchone()[0])


def one_rate_vs_model(db: Path, boundary: int) -> dict[str, Any] | None:
    """Side by side on the same answers: the run's device-seconds predicted by one rate per
    token (how the estimate worked before) and by the fitted cost model, both from the
    history run's answers only, each schema on its own."""
    from nexagauge_local.estimate.seconds_model import fit_seconds

    with closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT rowid, schema, prompt_tokens, output_tokens, seconds "
                           "FROM judge_samples ORDER BY rowid").fetchall()  # fmt: skip
    hist: dict[str, list[tuple[int, int, float]]] = {}
    for rowid, schema, p, o, sec in rows:
        if rowid <= boundary:
            hist.setdefault(schema, []).append((p, o, sec))
    run = [r for r in rows if r[0] > boundary and r[1] in hist]
    if not run:
        return None
    per_schema = {  # schema -> (mean output tokens, one rate per token, fitted model or None)
        schema: (sum(x[1] for x in h) / len(h),
                 sum(x[2] for x in h) / (sum(x[0] + x[1] for x in h) or 1),
                 fit_seconds(h))
        for schema, h in hist.items()
    }  # fmt: skip
    one = model = actual = 0.0
    for _, schema, p, _o, sec in run:
        mean_out, rate, fitted = per_schema[schema]
        one += rate * (p + mean_out)
        model += fitted.predict(p, mean_out) if fitted else rate * (p + mean_out)
        actual += sec
    return {"requests": len(run), "one_rate": one, "model": model, "actual": actual,
            "one_rate_error": one / actual - 1, "model_error": model / actual - 1}


@click.command()
@click.option("--input", "input_path", type=click.Path(exists=True, dir_okay=False), required=True,
              help="The dataset estimated and then run (e.g. the peer's sample.json).")
@click.option("--history-input", type=click.Path(exists=True, dir_okay=False),
              default=str(BUNDLED), show_default="the bundled sample",
              help="Run first so the cache holds this judge's history on this host.")
@click.option("--target", default="redteam", show_default=True)
@click.option("--backend", type=click.Choice(["hf", "vllm"]), default="hf", show_default=True)
@click.option("--gpu", default=None, help="GPU ids for the runs; none: CPU.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Private judge cache (default: a fresh temp dir, so nothing is reused).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the figures as JSON.")
def main(input_path: str, history_input: str, target: str, backend: str, gpu: str | None,
         cache_dir: Path | None, out: Path | None) -> None:  # fmt: skip
    """Compare `estimate` with the run it predicts, on this host."""
    tmp = scratch_dir("bench_estimate_")
    cache = cache_dir or tmp / "cache"
    env = dict(os.environ)
    if gpu is None:
        env["CUDA_VISIBLE_DEVICES"] = ""
    common = ["--backend", backend, "--cache-dir", str(cache), *(["--gpu", gpu] if gpu else [])]
    host = _host()
    click.echo(f"bench_estimate: {target} on {input_path}, backend {backend}, "
               f"{'GPU ' + gpu if gpu else 'CPU'}; host {host}")  # fmt: skip
    t = time.perf_counter()
    _cli(["run", target, "--input", history_input, "--output-dir", str(tmp / "history"),
          "-q", *common], env)  # fmt: skip
    click.echo(f"1. history run on {history_input}: {time.perf_counter() - t:.1f} s")
    boundary = _last_sample(cache / "judge.sqlite")
    est_args = ["estimate", target, "--input", input_path, "--backend", backend,
                "--cache-dir", str(cache), "--json"]  # fmt: skip
    est = json.loads(_cli(est_args, env).stdout)
    pred = predicted(est)
    click.echo(f"2. estimate: {pred}")
    t = time.perf_counter()
    _cli(["run", target, "--input", input_path, "--output-dir", str(tmp / "run"),
          "-q", *common], env)  # fmt: skip
    wall = time.perf_counter() - t
    summary = json.loads((tmp / "run" / "summary.json").read_text())
    act = actual(summary)
    click.echo(f"3. run: {act} ({wall:.1f} s wall)")
    cmp = compare(pred, act)
    for key, c in cmp.items():
        verdict = "met" if c["met"] else "NOT met"
        err = "n/a" if c["error"] is None else f"{c['error']:+.0%}"
        click.echo(f"   {key}: predicted {c['predicted']} vs run {c['actual']}: {err} "
                   f"(bound ±{c['bound']:.0%}: {verdict})")  # fmt: skip
    models = one_rate_vs_model(cache / "judge.sqlite", boundary)
    if models:
        click.echo(f"   device-seconds of the run's {models['requests']} answers, predicted from "
                   f"the history run's (each answer's prompt tokens, its schema's mean output): "
                   f"one rate per token {models['one_rate']:.1f} ({models['one_rate_error']:+.0%}),"
                   f" cost model {models['model']:.1f} ({models['model_error']:+.0%}),"
                   f" run {models['actual']:.1f}")  # fmt: skip
    host["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    click.echo(f"   peak RSS of the CLI processes: {rss_mb:.0f} MB")
    doc = {"target": target, "input": input_path, "history_input": history_input,
           "backend": backend, "gpu": gpu, "host": host, "predicted": pred, "actual": act,
           "run_wall_seconds": round(wall, 2), "compare": cmp,
           "peak_rss_mb": round(rss_mb), "judge": summary.get("judge"),
           "one_rate_vs_model": models}  # fmt: skip
    if out:
        out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
