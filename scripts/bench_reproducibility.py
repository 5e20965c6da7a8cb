"""Does a judgement depend on what else the engine holds? Measured per engine and dtype.

Why: an auditor who re-runs a subset without the cache, or `reproduce`s a run on another host,
needs to know which parts of a judgement are guaranteed to come out the same. The same
requests are judged by the real engines under each condition and compared with one reference,
the requests judged together in one batch:

  again       the batch judged again by the same engine (on vLLM its prefix cache now warm)
  fresh       vLLM only: the batch in a new engine, as `reproduce` judges it
  alone       each of the first `--alone` requests in its own engine call, the engine warm
              (on vLLM its prefix cache holds the rubric from the batch)
  cold        the same, vLLM's prefix cache emptied before each request (hf keeps nothing
              between calls: its cold is its alone)
  2 engines   the batch split over two vLLM engines on the CPUs' two halves (data-parallel
              pool, one thread each)
  invariant   the profile's `batch_invariant = true` (hf: each request alone with its whole
              prompt; vLLM on a CPU: one sequence per step, no prefix cache): its batch against
              its own alone answers, and its wall time against the shared batch's

Requests: the bundled sample's outputs, each prefixed with its number, judged by the redteam
node's bias and toxicity rubrics in scale_1_5 with reasoning (the node's own prompts and
schema), so `--records 32` is a batch of 64. A "score" is the severity and verdict; a "full
result" is the whole parsed answer, free text (reasoning, violations, evidence) included.

    python scripts/bench_reproducibility.py                        # hf and vLLM, both dtypes
    python scripts/bench_reproducibility.py --backends hf --dtypes float32 --records 4 --alone 2
    python scripts/bench_reproducibility.py --show rows.json       # the table again
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
OUTPUT_KEYS = ("output", "answer", "response", "actual_output")
SCORE_KEYS = ("severity", "verdict")
Answer = dict[str, Any] | None


def sample_outputs(n: int) -> list[str]:
    """The first `n` outputs of the bundled sample (cycled), each prefixed with its number so
    that no two requests are the same."""
    texts = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        text = next((record[k] for k in OUTPUT_KEYS if isinstance(record.get(k), str)), None)
        if text:
            texts.append(text)
    return [f"{i + 1}. {texts[i % len(texts)]}" for i in range(n)]


def build_requests(records: int) -> list[Any]:
    """Two requests per record (bias, toxicity), as the redteam node builds them."""
    from nexagauge_local.judge import JudgeRequest, max_tokens_for
    from nexagauge_local.nodes.redteam.prompt import DEFAULT_METRICS
    from nexagauge_local.nodes.redteam.prompt import render as render_redteam
    from nexagauge_local.nodes.redteam.schema import verdict_schema
    from nexagauge_local.scoring.mode import ScoringMode

    schema = verdict_schema(ScoringMode.SCALE, True)
    return [JudgeRequest(messages=render_redteam(metric, {"output": text},
                                                 ScoringMode.SCALE, True),
                         schema=schema, max_tokens=max_tokens_for(schema))
            for text in sample_outputs(records) for metric in DEFAULT_METRICS]  # fmt: skip


def answers(results: Sequence[Any]) -> list[Answer]:
    return [r.parsed.model_dump() if r.parsed is not None else None for r in results]


def agreement(reference: Sequence[Answer], other: Sequence[Answer]) -> dict[str, int]:
    """How many of `other` (aligned with the start of `reference`) keep the score, and the
    whole answer. A failed answer counts as different unless both failed."""
    pairs = list(zip(reference, other))
    same_score = sum(a == b if a is None or b is None
                     else all(a.get(k) == b.get(k) for k in SCORE_KEYS) for a, b in pairs)
    return {"compared": len(pairs), "same_score": same_score,
            "same_full": sum(a == b for a, b in pairs)}


def one_by_one(backend: Any, requests: Sequence[Any],
               before_each: Callable[[], None] | None = None) -> list[Answer]:
    out: list[Answer] = []
    for request in requests:
        if before_each:
            before_each()
        out += answers(backend.generate([request]))
    return out


def timed(fn: Callable[[], list[Any]]) -> tuple[list[Any], float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def make_backend(kind: str, dtype: str, cache_dir: Path, model: str, **update: Any) -> Any:
    from nexagauge_local.judge.hf.backend import HFBackend
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.vllm.backend import VLLMBackend

    profile = resolve_profile(model).model_copy(update={"dtype": dtype, **update})
    if kind == "hf":
        return HFBackend(profile, cache_dir=cache_dir, device="cpu", dtype=dtype)
    return VLLMBackend(profile, dtype=dtype, device="cpu", cache_dir=cache_dir)


def measure(kind: str, dtype: str, requests: list[Any], alone: int, cache_dir: Path,
            model: str, echo: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every condition of one engine kind in one dtype, against its shared batch."""
    rows: list[dict[str, Any]] = []

    def row(condition: str, reference: list[Answer], other: list[Answer],
            wall: float | None = None) -> None:
        rows.append({"backend": kind, "dtype": dtype, "condition": condition,
                     "wall_s": wall, **agreement(reference, other)})
        r = rows[-1]
        echo(f"  {kind} {dtype} {condition}: {r['same_score']}/{r['compared']} scores, "
             f"{r['same_full']}/{r['compared']} full results")

    with closing(make_backend(kind, dtype, cache_dir, model)) as backend:
        batch, batch_s = timed(lambda: answers(backend.generate(requests)))
        echo(f"  {kind} {dtype}: batch of {len(requests)} in {batch_s:.1f} s")
        row(f"batch of {len(requests)}, again", batch, answers(backend.generate(requests)))
        row("alone, warm", batch, one_by_one(backend, requests[:alone]))
        if kind == "vllm":
            llm = backend._llm
            row("alone, cold prefix cache", batch,
                one_by_one(backend, requests[:alone], llm.reset_prefix_cache))
    if kind == "vllm":
        # the same batch in other engines: a new one, its prefix cache empty as the first
        # run's was (what `reproduce` does; hf keeps nothing between calls: its "again" is
        # this), and the data-parallel pool of two
        for condition, update in ((f"batch of {len(requests)}, fresh engine", {}),
                                  ("2 engines", {"vllm_cpu_engines": 2})):
            with closing(make_backend(kind, dtype, cache_dir, model, **update)) as other:
                row(condition, batch, answers(other.generate(requests)))
    with closing(make_backend(kind, dtype, cache_dir, model, batch_invariant=True)) as strict:
        inv, inv_s = timed(lambda: answers(strict.generate(requests)))
        row("invariant: alone vs its batch", inv, one_by_one(strict, requests[:alone]), inv_s)
        row("invariant vs shared batch", batch, inv)
        rows[-2]["shared_wall_s"] = batch_s
    return rows


def show(rows: list[dict[str, Any]], echo: Callable[[str], None]) -> None:
    echo("| backend | dtype | condition (against the shared batch) | same scores | same full "
         "results | wall s (invariant / shared) |")
    echo("| --- | --- | --- | ---: | ---: | ---: |")
    for r in rows:
        n = r["compared"]
        wall = (f"{r['wall_s']:.1f} / {r['shared_wall_s']:.1f}"
                if r.get("wall_s") and r.get("shared_wall_s") else "")
        echo(f"| {r['backend']} | {r['dtype']} | {r['condition']} | "
             f"{r['same_score']}/{n} ({r['same_score'] / max(n, 1):.0%}) | "
             f"{r['same_full']}/{n} ({r['same_full'] / max(n, 1):.0%}) | {wall} |")


@click.command()
@click.option("--backends", default="hf,vllm", show_default=True)
@click.option("--dtypes", default="float32,bfloat16", show_default=True)
@click.option("--records", default=32, show_default=True,
              help="records judged; two requests each (bias, toxicity)")
@click.option("--alone", default=12, show_default=True,
              help="requests also judged one by one (the first ones)")
@click.option("--model", default="demo", show_default=True,
              help="judge profile or weights folder (the demo judge's figures are the table's)")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None,
              help="the tool's cache (dequantised demo weights); default: its usual place")
@click.option("--json", "json_out", type=click.Path(path_type=Path), default=None)
@click.option("--show", "show_json", type=click.Path(exists=True, path_type=Path), default=None,
              help="print the table of an earlier --json and stop")
def main(backends: str, dtypes: str, records: int, alone: int, model: str,
         cache_dir: Path | None, json_out: Path | None, show_json: Path | None) -> None:
    """Reproducibility of judgements per engine and dtype (see the module docstring)."""
    if show_json is not None:
        show(json.loads(show_json.read_text()), click.echo)
        return
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from nexagauge_local.settings import default_cache_dir

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text()
                .splitlines() if ln.startswith("model name")), "?")
    requests = build_requests(records)
    alone = min(alone, len(requests))
    click.echo(f"bench_reproducibility: judge {model}, {len(requests)} redteam requests "
               f"(scale_1_5 + reasoning), first {alone} also alone; {os.cpu_count()} cores "
               f"({cpu}); each condition against the same engine's shared batch")
    rows: list[dict[str, Any]] = []
    for kind in [b for b in backends.split(",") if b]:
        for dtype in [d for d in dtypes.split(",") if d]:
            rows += measure(kind, dtype, requests, alone, cache_dir or default_cache_dir(),
                            model, click.echo)
            if json_out:
                json_out.write_text(json.dumps(rows, indent=1))
    show(rows, click.echo)


if __name__ == "__main__":
    main()
