"""The hf backend's two grammar engines side by side: llguidance ("guidance", the default) vs
outlines-core ("outlines"), on the demo judge, in one run.

Each engine runs in its own child process (peak RSS is per process), on the same N synthetic
red-team judgements as scripts/bench_batching.py (the redteam verdict schema with evidence
spans: the schema whose outlines index was the demo judge's memory hog). Each child
loads the judge, compiles the schema (timed), decodes all requests in one generate call
(timed) and reports its peak RSS. Prints the machine, both engines' figures, the ratios
(outlines / guidance) and how many answers are identical and parsed.

    python scripts/bench_grammar.py                 # 64 judgements, demo judge, 2 threads
    python scripts/bench_grammar.py --n 16 --model /path/to/hf-folder

The demo judge's verdicts are not meaningful; this measures memory and throughput only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

ENGINES = ("guidance", "outlines")


def child(engine: str, n: int, model: str, threads: int) -> dict[str, object]:
    from bench_batching import build_requests

    from nexagauge_local.judge.hf.backend import HFBackend
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.settings import default_cache_dir

    backend = HFBackend(resolve_profile(model), cache_dir=default_cache_dir(), threads=threads,
                        grammar=engine)  # fmt: skip
    reqs = build_requests(n)
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    backend.grammar_for(reqs[0].schema)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = backend.generate(reqs)
    decode_s = time.perf_counter() - t0
    return {
        "engine": engine, "fingerprint": backend.fingerprint, "compile_s": compile_s,
        "decode_s": decode_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_load_mb": rss_loaded, "load_s": backend.load_seconds,
        "output_tokens": sum(r.output_tokens for r in results),
        "parsed": sum(r.error is None for r in results), "texts": [r.raw_text for r in results],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64, help="number of judgements (default 64)")
    ap.add_argument("--model", default="demo", help="profile name or weights path")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n, args.model, args.threads)))
        return
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} "
          f"threads={args.threads} load_avg_1min={os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"compare: the hf backend's grammar engines {' vs '.join(ENGINES)}, each in its own "
          f"process, on {args.n} red-team judgements (verdict schema with evidence spans), "
          f"model {args.model}")
    figures: dict[str, dict[str, object]] = {}
    for engine in ENGINES:
        cmd = [sys.executable, __file__, "--child", engine, "--n", str(args.n), "--model",
               args.model, "--threads", str(args.threads)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"{engine} child failed:\n{proc.stderr[-3000:]}")
        fig = json.loads(proc.stdout.strip().splitlines()[-1])
        figures[engine] = fig
        print(f"  {engine:<9} compile {fig['compile_s']:7.2f} s   decode {fig['decode_s']:7.2f} s"
              f"   output {fig['output_tokens']:5d} tok   parsed {fig['parsed']}/{args.n}   "
              f"peak RSS {fig['peak_rss_mb']:7.0f} MB (after load {fig['rss_after_load_mb']:.0f})"
              f"   [{fig['fingerprint']}]")
    g, o = figures["guidance"], figures["outlines"]
    same = sum(a == b for a, b in zip(g["texts"], o["texts"], strict=True))  # type: ignore[arg-type]
    print(f"  identical answers: {same}/{args.n}")
    print(f"ratio compile {o['compile_s'] / g['compile_s']:.1f}x, decode "  # type: ignore[operator]
          f"{o['decode_s'] / g['decode_s']:.2f}x, peak RSS "  # type: ignore[operator]
          f"{o['peak_rss_mb'] / g['peak_rss_mb']:.2f}x (outlines / guidance)")  # type: ignore[operator]
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "engines": figures, "identical": same},
                                        indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
