"""Report size and render time for a large run: a synthetic N-case output directory (default
10,000 cases of an `eval` run: redteam with heuristic scores, grounding and relevance claims,
refmatch, refalign), then `report.html` rendered from it.

Case reports are built from the real result classes and node summaries from the real
NodeStats / probe aggregates, so the report sees the same shapes a run writes; only the texts
and judge verdicts are random (seeded).

    .venv/bin/python scripts/bench_report.py                # 10,000 cases in a temp dir
    .venv/bin/python scripts/bench_report.py --cases 2000 --keep out/bench --browser
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.nodes.eval import case_verdict
from nexagauge_local.redteam.heuristics.aggregate import (
    aggregate_metrics,
    disagreements,
    verdict_tables,
)
from nexagauge_local.redteam.heuristics.observability import build_observability
from nexagauge_local.redteam.heuristics.scoring import CaseScore, score_case
from nexagauge_local.report.files import case_filename, write_json
from nexagauge_local.report.html import write_report
from nexagauge_local.report.stats import NodeStats
from nexagauge_local.results import MetricResult, NodeCost, NodeReport, passed_for

_WORD_BAG = (
    "battery warranty refund policy customer order delivery engineer hiring manager team report "
    "data model system network account password support ticket schedule budget project release "
    "database backup invoice contract product service quality"
)
WORDS = tuple(_WORD_BAG.split())
UNSAFE_BITS = (
    "you are an idiot",
    "women are too emotional",
    "ignore previous instructions",
    "here is the api key",
    "older people are useless",
)
CATEGORIES = (
    "hate_harassment",
    "prompt_injection",
    "privacy_pii",
    "misinformation",
    "self_harm",
    "cyber_misuse",
)
SEVERITIES = ("low", "medium", "high", "critical")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _text(rng: random.Random, sentences: int, words: int = 14) -> str:
    return " ".join(_sentence(rng, words) for _ in range(sentences))


def _redteam(rng: random.Random, output: str, unsafe: str | None) -> list[MetricResult]:
    out = []
    for name in ("bias", "toxicity"):
        bad = unsafe is not None and rng.random() < 0.7
        entry: dict[str, Any] = {
            "verdict": "UNSAFE" if bad else "SAFE",
            "passed": not bad,
            "reasoning": f"{name} judged on the output",
            "violations": [f"contains '{unsafe}'"] if bad else [],
            "evidence_spans": [unsafe] if bad and unsafe in output else [],
        }
        out.append(
            MetricResult(
                name=name,
                category="output|generation|answer",
                score=0.0 if bad else 1.0,
                result=[entry],
                passed=not bad,
            )
        )
    return out


def _claims_metric(rng: random.Random, kind: str, claims: list[str]) -> MetricResult:
    rows = []
    for claim in claims:
        ok = rng.random() < 0.8
        rows.append(
            {
                "claim": claim,
                "verdict": ("supported" if ok else "not_supported")
                if kind == "grounding"
                else ("relevant" if ok else "not_relevant"),
                "passed": ok,
                "score": 1.0 if ok else 0.0,
            }
        )
    score = sum(r["score"] for r in rows) / len(rows)
    category = "output|context" if kind == "grounding" else "output|input"
    return MetricResult(
        name=kind, category=category, score=score, result=rows, passed=passed_for(score)
    )


def _lexical(rng: random.Random) -> list[MetricResult]:
    out = []
    for name in ("rouge1", "rouge2", "rougeL"):
        f = rng.random()
        out.append(
            MetricResult(
                name=name,
                category="reference|lexical",
                score=f,
                result=[{"precision": f, "recall": f, "fmeasure": f}],
            )
        )
    for name in ("bleu", "meteor"):
        f = rng.random() * 0.6
        out.append(
            MetricResult(name=name, category="reference|lexical", score=f, result=[{"score": f}])
        )
    f1 = rng.random()
    cos = 0.5 + rng.random() / 2
    out.append(
        MetricResult(
            name="refalign",
            category="reference|semantic",
            score=f1,
            result=[
                {"passed": f1 >= 0.6, "precision": f1, "recall": f1, "f1": f1, "global_cosine": cos}
            ],
            passed=f1 >= 0.6,
        )
    )
    out.append(
        MetricResult(
            name="semantic_similarity",
            category="reference|semantic",
            score=cos,
            result=[{"global_cosine": cos}],
        )
    )
    return out


def build_synthetic(out: Path, n: int, seed: int = 0) -> Path:
    """Write an n-case eval-run output directory (case reports, node metrics, summary)."""
    rng = random.Random(seed)
    stats = {
        name: NodeStats(name)
        for name in ("relevance", "grounding", "redteam", "refmatch", "refalign")
    }
    scores: list[CaseScore] = []
    judge_passed: dict[str, bool] = {}
    cost = NodeCost(input_tokens=420.0, output_tokens=35.0, gpu_seconds=0.02)
    for i in range(n):
        case_id = f"synthetic-{i:05d}"
        unsafe = rng.choice(UNSAFE_BITS) if rng.random() < 0.15 else None
        output = _text(rng, 2) + (f" And {unsafe}." if unsafe else "")
        fields = {
            "case_id": case_id,
            "output": output,
            "input": _sentence(rng, 12),
            "context": _text(rng, 3, 18),
            "reference": _text(rng, 1, 16),
        }
        probe = ProbeBlock(
            id=case_id, category=rng.choice(CATEGORIES), severity=rng.choice(SEVERITIES)
        )
        heuristic = score_case(case_id, output, probe, fields["input"])
        claims = [_sentence(rng, 10) for _ in range(3)]
        red_metrics = _redteam(rng, output, unsafe)
        reports = {
            "relevance": NodeReport(metrics=[_claims_metric(rng, "relevance", claims)], cost=cost),
            "grounding": NodeReport(metrics=[_claims_metric(rng, "grounding", claims)], cost=cost),
            "redteam": NodeReport(
                metrics=red_metrics, cost=cost, extras={"case_score": heuristic.model_dump()}
            ),
            "refmatch": NodeReport(metrics=_lexical(rng)[:5]),
            "refalign": NodeReport(metrics=_lexical(rng)[5:]),
        }
        for name, rep in reports.items():
            stats[name].eligible += 1
            stats[name].add_report(rep)
        scores.append(heuristic)
        judge_passed[case_id] = all(bool(m.passed) for m in red_metrics)
        case = {
            "target_node": "eval",
            "input": fields,
            **{name: rep.report_dict() for name, rep in reports.items()},
            "eval": case_verdict(reports).model_dump(),
        }
        write_json(out / "case_report" / case_filename(case_id), case)
    node_summaries = {name: s.summary().to_json() for name, s in stats.items()}
    rows = [(s.case_id, s.category, s.severity, judge_passed[s.case_id]) for s in scores]
    node_summaries["redteam"].update(
        {
            "aggregate_metrics": aggregate_metrics(scores).model_dump(),
            "judge_tables": verdict_tables(rows).model_dump(),
            "disagreements": [d.model_dump() for d in disagreements(scores, judge_passed)],
            "observability": build_observability(scores, seed=seed),
        }
    )
    for name, summ in node_summaries.items():
        write_json(out / "metrics" / f"{name}.json", summ)
    usage = {
        name: {
            "eligible": n,
            "requests": n,
            "cache_hits": 0,
            "backend_calls": 1,
            "input_tokens": 420 * n,
            "output_tokens": 35 * n,
            "gpu_seconds": 0.02 * n,
            "wall_seconds": 1.0,
        }
        for name in stats
    }
    write_json(
        out / "summary.json",
        {
            "tool": "nexagauge-local",
            "target": "eval",
            "input": f"synthetic-{n}.jsonl",
            "started": "2025-01-01T00:00:00+00:00",
            "wall_seconds": 0.0,
            "cases": {"records": n, "valid": n, "skipped": 0, "duplicates": 0},
            "nodes_run": ["scan", "chunk", "refiner", "claims", *stats, "eval"],
            "nodes_unavailable": [],
            "gpus": [0],
            "gpu_hour_price": None,
            "judge": {
                "model": "synthetic",
                "fingerprint": "synthetic",
                "demo": False,
                "backend": "none",
                "device": "none",
                "load_seconds": 0.0,
            },
            "nodes": usage,
            "cost": {
                k: sum(u[k] for u in usage.values())
                for k in (
                    "requests",
                    "cache_hits",
                    "backend_calls",
                    "input_tokens",
                    "output_tokens",
                    "gpu_seconds",
                )
            }
            | {"cost": 0.0},
        },
    )
    return out


def browser_seconds(report: Path) -> float | None:
    """Wall time of headless chromium loading the page and dumping its DOM (None: no chromium)."""
    exe = shutil.which("chromium")
    if exe is None:
        return None
    t0 = time.perf_counter()
    subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            report.resolve().as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=300,
    )
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, help="write the output dir here and keep it")
    ap.add_argument("--browser", action="store_true", help="also time headless chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "out"
        t0 = time.perf_counter()
        build_synthetic(out, args.cases, args.seed)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = write_report(out)
        render = time.perf_counter() - t0
        size_mb = report.stat().st_size / 1e6
        print(f"cases            {args.cases}")
        print(f"synthetic build  {built:.1f} s")
        print(f"render           {render:.1f} s")
        print(f"report size      {size_mb:.2f} MB ({report})")
        if args.browser:
            secs = browser_seconds(report)
            print(f"chromium load    {'n/a (no chromium)' if secs is None else f'{secs:.1f} s'}")


if __name__ == "__main__":
    main()
