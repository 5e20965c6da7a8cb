"""Two checkouts of the hf backend side by side on this host: judgements per second, peak RSS
and whether they give the same answers.

Each side runs in a child process of its own (PYTHONPATH = that checkout and its scripts/),
one after the other, on the same judge requests: the redteam node's requests for the first
cases of the bundled sample, on the demo judge (hf backend, the profile's dtype unless
--dtype). The demo GGUF is dequantised once into --cache-dir before either side is timed,
so neither pays it.
Model load is reported apart from judging.

    git worktree add /tmp/hf-before main
    python scripts/bench_hf_engines.py --before /tmp/hf-before            # this checkout = after
    python scripts/bench_hf_engines.py --before /tmp/a --after /tmp/b --n 16 --dtype float32

The demo judge's verdicts are not meaningful; this measures the engine, not the judge.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchlib.scratch import scratch_dir

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"

# Runs inside each side's checkout: builds the requests with that checkout's redteam node.
CHILD = """
import json, resource, sys, time
from pathlib import Path
from nexagauge_local.case import Case
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import GRAPH
from nexagauge_local.judge.hf.backend import HFBackend
from nexagauge_local.judge.profiles import resolve_profile
from benchlib.workload import redteam_requests

sample, cache, n, dtype, threads = sys.argv[1:6]
cases = [c for c in Dataset(Path(sample), blocks=GRAPH.blocks).items() if isinstance(c, Case)]
reqs = redteam_requests(cases, Path(cache))[: int(n)]
backend = HFBackend(resolve_profile("demo"), cache_dir=Path(cache), device="cpu",
                    dtype=dtype or None, threads=int(threads) or None)
started = time.perf_counter()
results = backend.generate(reqs)
wall = time.perf_counter() - started
print(json.dumps({
    "requests": len(reqs), "dtype": backend.dtype, "fingerprint": backend.fingerprint,
    "load_s": backend.load_seconds, "judge_s": wall, "per_s": len(reqs) / wall,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "prompt_tokens": sum(r.prompt_tokens for r in results),
    "output_tokens": sum(r.output_tokens for r in results),
    "errors": sum(r.error is not None for r in results),
    "answers": [r.raw_text for r in results],
}))
"""


def dequantise_once(cache: Path) -> None:
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import ensure_dequantised

    ensure_dequantised(resolve_profile("demo").weights_path(), cache)


def run_side(tree: Path, cache: Path, args: argparse.Namespace) -> dict[str, Any]:
    # that checkout's package, and its scripts/ as a script's own folder (benchlib)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "scripts")])}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(SAMPLE), str(cache), str(args.n), args.dtype or "",
         str(args.threads or 0)],
        capture_output=True, text=True, env=env, cwd=tree, check=False, timeout=args.timeout,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: the run failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="checkout of the older hf backend")
    ap.add_argument("--after", type=Path, default=ROOT, help="checkout to compare (default: this)")
    ap.add_argument("--n", type=int, default=32, help="redteam requests (default 32)")
    ap.add_argument("--dtype", default="", help="float32 or bfloat16 (default: the profile's)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="judge cache (default: a temp)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per side")
    ap.add_argument("--json", type=Path, default=None, help="write both sides' figures here")
    args = ap.parse_args()
    cache = args.cache_dir or scratch_dir("bench-hf-")
    dequantise_once(cache)
    sides = {"before": run_side(args.before, cache, args), "after": run_side(args.after, cache, args)}
    print(f"host: {platform.node()} {platform.machine()} {platform.processor() or ''}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; python {platform.python_version()}")
    print(f"demo judge, hf backend, CPU; {sides['after']['requests']} redteam requests of "
          f"{SAMPLE.name}; each side a fresh process, one after the other")
    print(f"{'side':<8}{'checkout':<28}{'dtype':<10}{'load s':>8}{'judge s':>9}{'judg/s':>8}"
          f"{'peak RSS MB':>13}{'out tok':>9}{'errors':>8}")
    for name, tree in (("before", args.before), ("after", args.after)):
        s = sides[name]
        print(f"{name:<8}{str(tree)[-27:]:<28}{s['dtype']:<10}{s['load_s']:>8.1f}{s['judge_s']:>9.1f}"
              f"{s['per_s']:>8.2f}{s['peak_rss_mb']:>13.0f}{s['output_tokens']:>9}{s['errors']:>8}")
    before, after = sides["before"], sides["after"]
    same = sum(a == b for a, b in zip(before["answers"], after["answers"]))
    print(f"prompt tokens before/after: {before['prompt_tokens']}/{after['prompt_tokens']}; "
          f"identical answers: {same}/{len(after['answers'])}; "
          f"speed after/before: {after['per_s'] / before['per_s']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(sides, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
