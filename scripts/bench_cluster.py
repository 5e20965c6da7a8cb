"""Judge requests/s through the Ray cluster executor: 1 worker vs 2 workers, then N-GPU arithmetic.

What is compared: the same N red-team judgements (the real redteam prompt, verdict schema,
distinct outputs so nothing is deduplicated) answered by ClusterExecutor on a private local Ray
with 1 and then 2 hf actors of 1 CPU each. Model load and the first grammar compile are done in
a warm-up run per pool and excluded; the timed figure is the executor's wall for the node, which
includes driver work (token counting, dispatch, re-parsing, cache writes).

    python scripts/bench_cluster.py                    # tiny random judge, 24 requests
    python scripts/bench_cluster.py --n 64 --model ~/models/qwen2.5-7b-instruct --cpus 4
    python scripts/bench_cluster.py --assume-gpu-rps 40  # per-GPU rate for the N-GPU table

On a 2-core machine expect little or no gain from 2 workers: both actors share the same two
cores with the driver. The point here is that the path works and what it costs the driver; the
N-GPU table is arithmetic from a stated per-GPU rate, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = [
    "I can't help with that, but here is how to report harassment to the platform.",
    "People from that town are all lazy and stupid, everyone knows it.",
    "Here's a recipe for vegetable soup: onions, carrots, celery, stock and salt.",
    "You are an idiot and nobody will ever listen to you.",
]


def build_requests(n: int, offset: int = 0) -> list[Any]:
    """Redteam judgements exactly as the node builds them (both default rubrics)."""
    from nexagauge_local.judge.schemas import max_tokens_for
    from nexagauge_local.judge.types import JudgeRequest
    from nexagauge_local.nodes.redteam import DEFAULT_METRICS, render_redteam, verdict_schema
    from nexagauge_local.nodes.redteam import PROMPT_VERSION as REDTEAM_VERSION

    schema = verdict_schema("binary_yes_no", False)
    reqs = []
    for i in range(offset, offset + n):
        metric = DEFAULT_METRICS[i % len(DEFAULT_METRICS)]
        fields = {f: f"{OUTPUTS[i % len(OUTPUTS)]} (case {i})" for f in metric.item_fields}
        reqs.append(
            JudgeRequest(
                render_redteam(metric, fields, "binary_yes_no", False),
                schema,
                max_tokens_for(schema),
                node="redteam",
                prompt_version=REDTEAM_VERSION,
            )
        )
    return reqs


def model_path(arg: str | None, tmp: Path) -> str:
    if arg:
        return arg
    sys.path.insert(0, str(ROOT))
    from tests.judge_fixtures import build_tiny_judge  # the CI test judge: random weights

    return str(build_tiny_judge(tmp / "tiny_judge"))


def bench_pool(factory: Any, workers: int, n: int, batch: int, cache_dir: Path) -> dict[str, Any]:
    """Warm a pool of `workers` actors, then time one node of `n` requests through it."""
    from nexagauge_local.cluster import parse_cluster
    from nexagauge_local.cluster.executor import ClusterExecutor
    from nexagauge_local.judge.cache import CacheEntry, JudgeCache

    spec = parse_cluster(f"auto?workers={workers}&cpus_per_worker=1&batch={batch}")
    ex = ClusterExecutor(factory, spec)
    cache = JudgeCache(cache_dir / f"w{workers}")

    def on_batch(positions: list[int], results: list[Any]) -> None:
        # what the JudgeClient does per batch: one cache transaction
        cache.put_many(
            [
                CacheEntry(
                    key=f"{workers}-{p}",
                    node="bench",
                    raw_text=r.raw_text,
                    prompt_tokens=r.prompt_tokens,
                    output_tokens=r.output_tokens,
                    gpu_seconds=r.gpu_seconds,
                )
                for p, r in zip(positions, results)
            ]
        )

    try:
        t0 = time.perf_counter()
        # one 1-request batch per worker at least: every actor loads and compiles the grammar
        ex.run(
            "warmup",
            build_requests(workers * spec.batches_per_worker, offset=10_000),
            lambda p, r: None,
        )
        warm = time.perf_counter() - t0
        before = {w["name"]: w for w in ex.describe()["workers"]}
        t0, cpu0 = time.perf_counter(), time.process_time()
        ex.run("redteam", build_requests(n), on_batch)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        info = ex.describe()
    finally:
        ex.close()
    node = info["nodes"]["redteam"]
    rates, device_s = [], 0.0
    fresh = {"busy_seconds": 0.0, "requests": 0, "device_seconds": 0.0}
    for w in info["workers"]:  # this node only: warm-up batches subtracted
        # a worker the pool started after the warm-up (one lost and replaced) starts from zero
        was = before.get(w["name"], fresh)
        busy = w["busy_seconds"] - was["busy_seconds"]
        done = w["requests"] - was["requests"]
        device_s += w["device_seconds"] - was["device_seconds"]
        rates.append(done / busy if busy > 0 else 0.0)
    return {
        "workers": workers,
        "requests": n,
        "wall_seconds": round(wall, 3),
        "requests_per_s": round(n / wall, 3),
        "warmup_seconds": round(warm, 2),
        "batches": node["batches"],
        "driver_seconds_per_request": node["driver_seconds"] / n,
        "driver_cpu_seconds_per_request": cpu / n,
        "device_seconds": round(device_s, 3),
        "per_worker_requests_per_s": [round(r, 3) for r in rates],
    }


def gpu_table(rps_per_gpu: float, driver_s_per_req: float, total: int) -> list[dict[str, Any]]:
    """N GPUs at an ASSUMED per-GPU rate, capped by the driver's measured per-request work
    (one driver does that work for the whole cluster, so it is the ceiling)."""
    ceiling = 1 / driver_s_per_req if driver_s_per_req > 0 else float("inf")
    rows = []
    for gpus in (1, 2, 4, 8, 16, 32, 64):
        rate = min(gpus * rps_per_gpu, ceiling)
        rows.append(
            {
                "gpus": gpus,
                "requests_per_s": rate,
                "hours_for_total": total / rate / 3600,
                "gpu_hours": gpus * total / rate / 3600,
                "driver_bound": rate == ceiling,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32, help="timed requests per pool size")
    ap.add_argument("--batch", type=int, default=8, help="most requests per shipped batch")
    ap.add_argument("--model", help="judge profile or weights path (default: the tiny test judge)")
    ap.add_argument(
        "--assume-gpu-rps",
        type=float,
        default=40.0,
        help="ASSUMED judge requests/s per GPU for the N-GPU table (see docs/scale-out.md)",
    )
    ap.add_argument("--total", type=int, default=1_000_000, help="requests in the N-GPU table")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on loopback only
    import ray

    from nexagauge_local.judge.factory import make_backend_factory

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        model = model_path(args.model, tmp)
        factory = make_backend_factory(model, backend="hf", cache_dir=tmp)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            counter_t0 = time.perf_counter()
            runs = [bench_pool(factory, w, args.n, args.batch, tmp) for w in (1, 2)]
            total_t = time.perf_counter() - counter_t0
        finally:
            ray.shutdown()

    machine = f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip()
    print(
        f"machine: {platform.node()} | {machine} | Python {platform.python_version()} | "
        f"ray {ray.__version__} | judge {factory.decision.profile} "
        f"({factory.decision.backend}, {factory.decision.dtype}, CPU)"
    )
    print(
        f"compared: {args.n} redteam judgements through ClusterExecutor on a local 2-CPU Ray, "
        f"1 vs 2 one-CPU hf actors, <= {args.batch} requests per batch (warm-up excluded; "
        "wall includes driver work)"
    )
    for r in runs:
        per = ", ".join(f"{x:.2f}" for x in r["per_worker_requests_per_s"] if x)
        print(
            f"  {r['workers']} worker(s): {r['wall_seconds']:7.2f} s  "
            f"{r['requests_per_s']:6.2f} req/s  ({r['batches']} batches; per worker busy-rate "
            f"{per} req/s; device-seconds {r['device_seconds']:.2f}; "
            f"warm-up {r['warmup_seconds']:.1f} s)"
        )
    speedup = runs[1]["requests_per_s"] / runs[0]["requests_per_s"]
    print(f"  2 vs 1 worker: x{speedup:.2f} (2 cores shared by both actors and the driver)")
    # CPU time, not wall: on 2 cores the driver's wall is stretched by the actors' compute
    drv = min(r["driver_cpu_seconds_per_request"] for r in runs)
    print(
        f"  driver work (token counting, dispatch, re-parse, cache writes): {drv * 1e3:.2f} ms "
        f"CPU per request at <= {args.batch} requests per batch"
    )

    print(
        f"\nN-GPU arithmetic (ASSUMPTION, not measured: {args.assume_gpu_rps:g} judge "
        f"requests/s per GPU; GPU figures pending). {args.total:,} requests:"
    )
    table = gpu_table(args.assume_gpu_rps, drv, args.total)
    for row in table:
        bound = "  (driver-bound)" if row["driver_bound"] else ""
        print(
            f"  {row['gpus']:>3} GPU(s): {row['requests_per_s']:>9,.0f} req/s  "
            f"{row['hours_for_total']:7.2f} h wall  {row['gpu_hours']:6.2f} GPU-hours{bound}"
        )
    print("  rate = min(N x per-GPU rate, 1 / driver cost per request); GPU-hours = N x wall")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "runs": runs,
                    "speedup_2_vs_1": speedup,
                    "machine": machine,
                    "seconds": total_t,
                    "assumed_gpu_rps": args.assume_gpu_rps,
                    "gpu_table": table,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
