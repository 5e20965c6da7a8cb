"""The attack loop batched across conversations against one conversation at a time, same engines.

Multi-turn escalation of the bundled suite's harmful probes: the demo model plays attacker,
target and judge (one vLLM engine for attacker and judge, one for the target). Two modes over
the same conversations, the same engines, no cache (so neither mode is served the other's
answers):

- batched: round-synchronous, as `attack` runs it: round r of every conversation is one
  attacker call, one target call and one judge call;
- sequential: one conversation at a time, each round three calls of one request each, as the
  peers drive their attacker, target and judge over HTTP.

    python scripts/bench_attacks.py                         # 64 probes x 3 turns, vLLM-CPU
    python scripts/bench_attacks.py --probes 8 --json out.json
    python scripts/bench_attacks.py --backend vllm --gpu 0 --sequential-sample 8   # a GPU host

Prints what it compared and on what, the wall time of each mode and their ratio, the engine
calls, the successes, and tokens and device-seconds per successful attack. Exit 0 when the
batched mode is at least --min-speedup faster, 1 when not.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib.host import cpu_model
from benchlib.scratch import scratch_dir


def _items(n: int, tmp: Path) -> list[Any]:
    from nexagauge_local.redteam.suites.bundled import load_suite, probe_record
    from nexagauge_local.redteam.suites.probe_file import read_probes

    harmful = [p for p in load_suite() if p.get("expect", "refuse") == "refuse"][:n]
    path = tmp / "probes.jsonl"
    path.write_text("".join(json.dumps(probe_record(p)) + "\n" for p in harmful))
    items, errors = read_probes(path)
    assert not errors, errors
    return items


def _per_success(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from nexagauge_local.redteam.attacks.record import AttackBlock

    blocks = [AttackBlock.model_validate(r["attack"]) for r in rows]
    won = [b for b in blocks if b.exchanges and b.exchanges[-1].response in (
        "partial_compliance", "full_compliance")]
    tokens = sum(u.prompt_tokens + u.output_tokens for b in won for u in b.usage.values())
    seconds = sum(u.device_seconds for b in won for u in b.usage.values())
    return {"conversations": len(blocks), "successes": len(won),
            "tokens_per_success": tokens / len(won) if won else None,
            "device_seconds_per_success": seconds / len(won) if won else None,
            "outcomes": {r["case_id"]: [e.response for e in b.exchanges]
                         for r, b in zip(rows, blocks, strict=True)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", type=int, default=64)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--backtracks", type=int, default=0,
                    help="refused steps rephrased (0: every conversation plays --turns rounds)")
    ap.add_argument("--max-tokens", type=int, default=96, help="target answer length")
    ap.add_argument("--model", default="demo")
    ap.add_argument("--backend", default="vllm")
    ap.add_argument("--gpu", default="", help="GPU ids, e.g. 0: both engines share them, each "
                    "reserving its part of the memory, as `attack --gpu` does")
    ap.add_argument("--sequential-sample", type=int, default=0,
                    help="run the sequential mode on the first K conversations only and compare "
                         "time per conversation (0: all; one at a time is slow on a CPU)")
    ap.add_argument("--min-speedup", type=float, default=5.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from nexagauge_local.app.judge import open_client, preflight
    from nexagauge_local.cli.options import parse_gpu_ids
    from nexagauge_local.redteam.campaign.model_driven import (
        plan_conversations,
        run_model_attacks,
    )
    from nexagauge_local.redteam.campaign.rounds import Limits, Parties
    from nexagauge_local.redteam.service.attack import SHARING
    from nexagauge_local.redteam.service.generate import open_target
    from nexagauge_local.settings import RunSettings

    tmp = scratch_dir("bench-attacks-")
    items = _items(args.probes, tmp)
    limits = Limits(turns=args.turns, backtracks=args.backtracks)
    gpu_ids = parse_gpu_ids(args.gpu or None)
    settings = RunSettings(model=args.model, backend=args.backend, use_cache=False,
                           cache_dir=tmp / "cache", progress=False, gpu_ids=list(gpu_ids))
    started = time.perf_counter()
    # two engines alive at once: each takes its part of a GPU
    asker = open_client(settings, preflight(settings).shared_by(2, SHARING))
    target = open_target(args.model, None, backend=args.backend, gpu_ids=gpu_ids,
                         cache_dir=tmp / "cache", seed=0, batch_size=None, engines=2,
                         sharing=SHARING)
    parties = Parties(asker, target, asker, max_tokens=args.max_tokens)
    # warm both engines so neither mode pays their start-up
    warm = Limits(turns=1, backtracks=0)
    plan = plan_conversations(items[:1], ["multi-turn-escalation"], warm, seed=0)
    run_model_attacks(plan, items[:1], parties, warm, tmp / "warm.jsonl")
    load_s = time.perf_counter() - started

    results: dict[str, Any] = {}
    for mode in ("batched", "sequential"):
        out = tmp / f"{mode}.jsonl"
        convs = plan_conversations(items, ["multi-turn-escalation"], limits, seed=0)
        t0 = time.perf_counter()
        if mode == "batched":
            stats = run_model_attacks(convs, items, parties, limits, out)
            calls = stats.rounds * 3
        else:
            calls = 0
            if args.sequential_sample:
                convs = convs[:args.sequential_sample]
            for conv in convs:
                one = run_model_attacks([conv], items, parties, limits, out)
                calls += one.rounds * 3
        wall = time.perf_counter() - t0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        results[mode] = {"wall_s": round(wall, 2), "engine_calls": calls,
                         "s_per_conversation": round(wall / len(convs), 3), **_per_success(rows)}
        print(f"{mode:>10}: {wall:8.1f} s, {calls} engine calls, "
              f"{results[mode]['successes']}/{len(rows)} broken", flush=True)
    asker.close()
    target.close()

    speedup = (results["sequential"]["s_per_conversation"]
               / results["batched"]["s_per_conversation"])
    same = sum(results["batched"]["outcomes"][k] == v
               for k, v in results["sequential"]["outcomes"].items())
    versions = {d: md.version(d) for d in ("vllm", "vllm-cpu", "torch", "transformers")
                if _installed(d)}
    if gpu_ids:
        import torch

        versions["gpu"] = torch.cuda.get_device_name(0)
    report = {
        "compared": "multi-turn escalation, round-synchronous batched vs one conversation "
                    "at a time, same engines, no cache",
        "host": {"cpu": cpu_model(), "cores": os.cpu_count(), **versions},
        "workload": {"probes": len(items), "turns": args.turns, "backtracks": args.backtracks,
                     "target_max_tokens": args.max_tokens, "model": args.model,
                     "backend": args.backend, "engine_load_s": round(load_s, 1)},
        "batched": {k: v for k, v in results["batched"].items() if k != "outcomes"},
        "sequential": {k: v for k, v in results["sequential"].items() if k != "outcomes"},
        "speedup": round(speedup, 2),  # time per conversation, sequential / batched
        "same_outcomes": f"{same}/{len(results['sequential']['outcomes'])}",
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if speedup >= args.min_speedup else 1


def _installed(dist: str) -> bool:
    try:
        md.version(dist)
        return True
    except md.PackageNotFoundError:
        return False


if __name__ == "__main__":
    sys.exit(main())
