"""Run-level views: header, cost panel, per-node summaries and per-metric tables.

Everything reads summary.json (a RunSummary) and metrics/<node>.json as written by the
runner, tolerating absent keys (an older or partial run still renders, with "-" where a value
is unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup

from nexagauge_local.graph import JUDGED_NODES, SPECS
from nexagauge_local.report import charts
from nexagauge_local.report.run_summary import JudgeInfo, RunSummary
from nexagauge_local.report.usage import USAGE_TOTALS
from nexagauge_local.report.view_cases import CasesDigest, Worst

USAGE_KEYS = ("eligible", *USAGE_TOTALS, "wall_seconds")


def header_view(summary: RunSummary, n_cases: int) -> dict[str, Any]:
    judge = summary.judge
    return {
        "title": f"nexagauge-local report: {summary.input or 'run'}",
        "target": summary.target,
        "input": summary.input,
        "started": summary.started,
        "wall_seconds": summary.wall_seconds,
        "cases": summary.cases,
        "case_reports": n_cases,
        "nodes_run": [n for n in summary.nodes_run if n not in SPECS or SPECS[n].target],
        "nodes_unavailable": summary.nodes_unavailable,
        "judge": judge,
        "node_judges": other_judges(summary, judge),
        "llm_nodes": [n for n in summary.nodes_run if n in JUDGED_NODES],
        "gpus": summary.gpus,
        "versions": {k: v for k, v in summary.versions.items() if v},
        "skipped_records": summary.skipped[:20],
        "rendered": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def other_judges(summary: RunSummary, judge: JudgeInfo | None) -> list[dict[str, Any]]:
    """The LLM nodes a judge other than the run's `judge` judged (`--model NODE=PROFILE`),
    each with its judge's description; [] for a run with one judge (or an older summary)."""
    main = judge.fingerprint if judge is not None else None
    return [{"node": n, **j.model_dump(exclude_unset=True)}
            for n, j in summary.node_judges.items() if j.fingerprint != main]


def cost_view(summary: RunSummary) -> dict[str, Any]:
    totals = summary.cost
    price = summary.gpu_hour_price
    rows = [
        {
            "node": name,
            **usage.model_dump(include=set(USAGE_KEYS)),
            "kind": SPECS[name].kind if name in SPECS else "-",
        }
        for name, usage in summary.nodes.items()
    ]
    requests = totals.requests or 0
    return {
        "totals": totals,
        "price": price,
        "usd": totals.cost if price else None,
        "load_seconds": summary.judge.load_seconds if summary.judge is not None else None,
        "cache_rate": ((totals.cache_hits or 0) / requests) if requests else None,
        "rows": rows,
    }


@dataclass
class MetricTable:
    node: str
    metric: str
    key: str
    stats: dict[str, Any]
    worst: Worst
    gated: bool


@dataclass
class NodesView:
    rows: list[dict[str, Any]] = field(default_factory=list)
    histogram: Markup | None = None
    pass_rates: Markup | None = None
    metrics: list[MetricTable] = field(default_factory=list)


def nodes_view(node_metrics: Mapping[str, Mapping[str, Any]], digest: CasesDigest) -> NodesView:
    view = NodesView()
    bars: list[tuple[str, float | None, int]] = []
    for node, summ in node_metrics.items():  # load_run's order: the graph's metric nodes
        view.rows.append(
            {
                "node": node,
                **{
                    k: summ.get(k)
                    for k in (
                        "eligible",
                        "scored",
                        "errors",
                        "passed",
                        "failed",
                        "pass_rate",
                        "avg_score",
                        "median_score",
                    )
                },
                "skipped": summ.get("skipped") or {},
            }
        )
        for metric, stats in (summ.get("metrics") or {}).items():
            key = f"{node}.{metric}"
            worst = digest.worst.get(key, Worst())
            informational = worst.ungated and not worst.gated
            view.metrics.append(
                MetricTable(node, metric, key, dict(stats), worst, not informational)
            )
            if not informational:
                bars.append((key, stats.get("pass_rate"), int(stats.get("n") or 0)))
    view.histogram = charts.score_histograms(digest.scores)
    view.pass_rates = charts.rate_bars(
        bars, "pass rate per metric: green pass, red fail (score ≥ 0.6)"
    )
    return view
