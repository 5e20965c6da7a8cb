"""Claims yield of a judge on a dataset: the claims/v1 prompt (one request per chunk, "extract
the atomic claims") against claims/v2 (one request per sentence: fact / facts / none), side by
side in one run, through the same hf backend.

Cases: the records with an output and an input or a context (the ones relevance or grounding
would judge). Chunks are the chunk node's sentence groups (chunk_text), what the claims node
reads. Prints what it compared and on what, then per prompt: requests, seconds, claims, claims
per case, the share of cases with at least one claim, and the v2 cases with no verifiable
claims or a judge error.

    python scripts/bench_claims.py                       # bundled sample, demo judge
    python scripts/bench_claims.py --input data.jsonl --model /path/to/hf-folder --json out.json

No cache: every request is sent. The demo judge's claims are for trying the tool.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchlib import claims_v1 as V1

from nexagauge_local.judge.schemas import max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.chunk import chunk_text
from nexagauge_local.nodes.claims.node import (
    SentenceClaims,
    chunk_sentences,
    sentence_claims,
    sentence_requests,
)
from nexagauge_local.nodes.claims.prompt import PROMPT_VERSION
from nexagauge_local.scoring.judge_scores import dedupe_claims

SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def load_cases(path: Path) -> list[dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    rows = json.loads(text) if text.lstrip().startswith("[") else [
        json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in rows if str(r.get("output") or "").strip()
            and (str(r.get("input") or "").strip() or str(r.get("context") or "").strip())]


def v1_requests(chunks: list[str]) -> list[JudgeRequest]:
    schema = V1.claims_schema()
    return [JudgeRequest(V1.render_claims(c, chunks[i - 1] if i else None), schema,
                         max_tokens_for(schema), node="claims", prompt_version=V1.PROMPT_VERSION)
            for i, c in enumerate(chunks)]  # fmt: skip


def report(label: str, per_case: list[list[str]], n_requests: int, seconds: float) -> dict:
    n = len(per_case)
    counts = [len(c) for c in per_case]
    with_claims = sum(1 for c in counts if c)
    fig = {"requests": n_requests, "seconds": seconds, "claims": sum(counts),
           "claims_per_case": sum(counts) / n if n else 0.0,
           "cases_with_claims": with_claims, "share_with_claims": with_claims / n if n else 0.0}
    print(f"  {label:<9} {n_requests:4d} requests {seconds:7.1f} s   claims {fig['claims']:3d}   "
          f"per case {fig['claims_per_case']:.2f}   cases with >= 1 claim {with_claims}/{n} "
          f"({fig['share_with_claims']:.0%})")  # fmt: skip
    return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", type=Path, default=SAMPLE)
    ap.add_argument("--model", default="demo", help="profile name or weights path")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from nexagauge_local.judge.hf.backend import HFBackend
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.settings import default_cache_dir

    cases = load_cases(args.input)
    backend = HFBackend(resolve_profile(args.model), cache_dir=default_cache_dir(),
                        threads=args.threads)  # fmt: skip
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} "
          f"threads={args.threads} load_avg_1min={os.getloadavg()[0]:.2f}")
    print(f"judge:   {backend.fingerprint}")
    print(f"compare: claims/v1 (one request per chunk) vs {PROMPT_VERSION} (one per sentence) "
          f"on {len(cases)} case(s) of {args.input} with an output and an input or context; "
          f"no cache")
    chunks = [chunk_text(c["output"]) for c in cases]

    reqs1 = [v1_requests(ch) for ch in chunks]
    t0 = time.perf_counter()
    flat1 = backend.generate([r for rs in reqs1 for r in rs])
    s1 = time.perf_counter() - t0
    per1, pos = [], 0
    for rs in reqs1:
        got = flat1[pos : pos + len(rs)]
        pos += len(rs)
        per1.append(dedupe_claims(c for r in got if r.parsed for c in r.parsed.claims))  # type: ignore[attr-defined]
    errors1 = sum(r.error is not None for r in flat1)

    sents = [chunk_sentences(chunk) for chunk in chunks]
    reqs2 = [sentence_requests(ss) for ss in sents]
    t0 = time.perf_counter()
    flat2 = backend.generate([r for rs in reqs2 for r in rs])
    s2 = time.perf_counter() - t0
    per2: list[list[str]] = []
    kinds: dict[str, int] = {}
    none_cases = error_cases = 0
    pos = 0
    for ss in sents:
        got: list[SentenceClaims] = [sentence_claims(s, r) for s, r in zip(ss, flat2[pos : pos + len(ss)], strict=True)]
        pos += len(ss)
        for g in got:
            kinds[g.kind or "failed"] = kinds.get(g.kind or "failed", 0) + 1
        claims = dedupe_claims(c for g in got for c in g.claims)
        per2.append(claims)
        if not claims and got and all(g.kind == "none" for g in got):
            none_cases += 1
        elif not claims:
            error_cases += 1

    print("results:")
    f1 = report("claims/v1", per1, len(flat1), s1)
    f2 = report(PROMPT_VERSION, per2, len(flat2), s2)
    print(f"  v1 request errors {errors1}; v2 sentence kinds {kinds}; v2 cases with no verifiable "
          f"claims {none_cases}, with a judge error {error_cases}")
    ratio = (f"{f2['claims_per_case'] / f1['claims_per_case']:.1f}x" if f1["claims_per_case"]
             else "n/a (v1 found none)")  # fmt: skip
    print(f"ratio claims per case {ratio} (v2 / v1); share of cases with claims "
          f"{f1['share_with_claims']:.0%} -> {f2['share_with_claims']:.0%}")
    if args.json:
        args.json.write_text(json.dumps({"cases": len(cases), "v1": f1, "v2": f2, "v2_kinds": kinds,
                                         "v2_no_verifiable": none_cases,
                                         "v2_judge_error": error_cases,
                                         "judge": backend.fingerprint}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
