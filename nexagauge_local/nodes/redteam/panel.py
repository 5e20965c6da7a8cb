"""redteam's report hooks: its panel of report.html, its part of each case's drill-down (the
heuristic's score, case.html.j2) and the probe columns of its rows.

The panel is built from metrics/redteam.json as the node's finalize() wrote it
(redteam/heuristics/aggregate.py: aggregate_metrics, verdict_tables, disagreements; redteam/heuristics/observability.py)
and printed by panel.html.j2 next to this file. Heuristic and judge pass rates are shown side by
side, each as passes of judged of n with its Wilson interval: a judge table counts as judged
only the cases where every metric it answers with got a verdict, so a run without a judge shows
an empty judge series and says so rather than drawing zero bars.

The report calls these through the SPEC (nodes/panel.py), handing the chart helpers in; this
module imports nothing from the report layer above it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from nexagauge_local.case_report import CaseReport
from nexagauge_local.nodes.panel import CasePanel, PanelTools, ReportPanel, RowExtras
from nexagauge_local.nodes.redteam.attack_panel import attacks_view

MAX_LISTED = 50  # disagreement rows shown; all of them are in metrics/redteam.json
INDEX_KEYS = (
    ("resilience_index", "resilience index", "1 − mean severity-weighted risk (higher is safer)"),
    ("exposure_index", "exposure index", "mean severity-weighted risk (lower is safer)"),
    ("fragility_spread", "fragility spread", "std of risk scores (how uneven the model is)"),
    ("severity_weighted_pass_rate", "severity-weighted pass rate", "passes weighted by severity"),
    ("high_stakes_failure_rate", "high-stakes failure share", "failures on high/critical probes"),
    ("boundary_language_rate", "boundary-language rate", "outputs with refusal/boundary language"),
    ("safe_unsafe_signal_ratio", "safe:unsafe signal ratio", "null when no unsafe signal matched"),
)


def _rates(table: Mapping[str, Any], groups: list[str]) -> list[float | None]:
    return [(table.get(g) or {}).get("pass_rate") for g in groups]


def _linked(items: list[Mapping[str, Any]], anchors: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{**item, "anchor": anchors.get(str(item.get("case_id")))} for item in items]


RATE_LABELS = (
    ("harmful_compliance_rate", "harmful compliance", "harmful probes answered in part or in full"),
    ("full_compliance_rate", "· full compliance", "harmful probes answered in full"),
    ("partial_compliance_rate", "· partial compliance", "harmful probes answered in part"),
    ("refusal_rate", "refusal", "harmful probes refused or redirected"),
    ("over_refusal_rate", "over-refusal",
     "benign probes refused, redirected or answered only in part"),
)
GROUP_RATES = ("harmful_compliance_rate", "refusal_rate", "over_refusal_rate")


def _stat(layer: Mapping[str, Any] | None, key: str) -> Mapping[str, Any] | None:
    """A rate's stats entry (rate, successes, n_judged, n, ci95; redteam/outcomes/rate_stats.py), or
    one built from the bare scalar of an older run, so its report still shows the rate."""
    layer = layer or {}
    stat = (layer.get("stats") or {}).get(key)
    if isinstance(stat, Mapping):
        return stat
    return {"rate": layer[key]} if key in layer else None


def pass_stat(row: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A pass-rate row's stats entry (passed of n_judged of n, ci95; aggregate.py), or one
    built from the older keys (n then counted the judged cases only), so an older run's
    report still shows its rate."""
    row = row or {}
    stat = (row.get("stats") or {}).get("pass_rate")
    if isinstance(stat, Mapping):
        return stat
    if "pass_rate" not in row:
        return None
    return {"rate": row.get("pass_rate"), "successes": row.get("passed"),
            "n_judged": row.get("n"), "n": row.get("n"), "ci95": row.get("pass_rate_ci95")}


def outcomes_view(tables: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The probe-outcome rates (redteam/outcomes/tables.py), judge beside heuristic, overall and per
    category and severity, each with its count, n_judged of n and Wilson interval; None when
    the run had no probe records."""
    if not tables:
        return None

    def rows(group: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{"name": name, "n": row.get("n"), "n_judged": row.get("n_judged"),
                 "rates": [(_stat(row.get("judge"), key), _stat(row.get("heuristic"), key))
                           for key in GROUP_RATES]}
                for name, row in group.items()]

    labels = {key: label for key, label, _ in RATE_LABELS}
    return {
        "counts": tables.get("counts") or {},
        "overall": [(label, help_, _stat(tables.get("judge"), key),
                     _stat(tables.get("heuristic"), key)) for key, label, help_ in RATE_LABELS],
        "labels": [labels[key] for key in GROUP_RATES],
        "categories": rows(tables.get("by_category") or {}),
        "severities": rows(tables.get("by_severity") or {}),
        "responses": tables.get("responses") or {},
        "strongreject": tables.get("strongreject"),
    }


def redteam_view(red: Mapping[str, Any] | None, tools: PanelTools) -> dict[str, Any]:
    """The values panel.html.j2 prints; {"present": False} when redteam did not run."""
    charts, anchors = tools.charts, tools.anchors
    if not red or "aggregate_metrics" not in red:
        return {"present": False}
    agg = red["aggregate_metrics"]
    judge = red.get("judge_tables") or {}
    judged = int(judge.get("n_judged", judge.get("n")) or 0)
    categories = sorted(set(agg.get("by_category") or {}) | set(judge.get("by_category") or {}))
    severities = [
        s
        for s in ("low", "medium", "high", "critical")
        if ((agg.get("by_severity") or {}).get(s) or {}).get("n")
    ]
    series_cat = {"heuristic": _rates(agg.get("by_category") or {}, categories)}
    series_sev = {"heuristic": _rates(agg.get("by_severity") or {}, severities)}
    if judged:
        series_cat["judge"] = _rates(judge.get("by_category") or {}, categories)
        series_sev["judge"] = _rates(judge.get("by_severity") or {}, severities)
    obs = red.get("observability")
    points = charts.sample_points((obs or {}).get("points") or [])
    cat_rows = []
    for c in categories:
        h = (agg.get("by_category") or {}).get(c) or {}
        j = (judge.get("by_category") or {}).get(c) or {}
        cat_rows.append(
            {
                "category": c,
                "n": h.get("n"),
                "heuristic": h.get("pass_rate"),
                "judge": j.get("pass_rate") if judged else None,
                "heuristic_stat": pass_stat(h),
                "judge_stat": pass_stat(j) if judged else None,
                "mean_risk": h.get("mean_risk"),
                "critical_failures": h.get("critical_failures"),
                "high_failures": h.get("high_failures"),
            }
        )
    sev_rows = []
    for s in severities:
        h = (agg.get("by_severity") or {}).get(s) or {}
        j = (judge.get("by_severity") or {}).get(s) or {}
        sev_rows.append(
            {
                "severity": s,
                "n": h.get("n"),
                "heuristic": h.get("pass_rate"),
                "judge": j.get("pass_rate") if judged else None,
                "heuristic_stat": pass_stat(h),
                "judge_stat": pass_stat(j) if judged else None,
            }
        )
    return {
        "present": True,
        "counts": agg.get("counts") or {},
        "pass_rate": agg.get("pass_rate"),
        "pass_stat": pass_stat(agg),
        "judge_pass_rate": judge.get("pass_rate") if judged else None,
        "judge_pass_stat": pass_stat(judge) if judged else None,
        "judged": judged,
        "risk": agg.get("risk_score") or {},
        "indices": [(label, agg.get(key), help_) for key, label, help_ in INDEX_KEYS],
        "categories": cat_rows,
        "severities": sev_rows,
        "failure_modes": agg.get("failure_mode_histogram") or {},
        "worst": _linked(agg.get("worst_cases") or [], anchors),
        "disagreements": _linked((red.get("disagreements") or [])[:MAX_LISTED], anchors),
        "disagreements_total": len(red.get("disagreements") or []),
        "disagreement_kinds": dict(
            Counter(str(d.get("kind")) for d in red.get("disagreements") or [])
        ),
        "observability": obs,
        "outcomes": outcomes_view(red.get("probe_outcomes")),
        "attacks": attacks_view(red.get("attack_outcomes")),
        "points_shown": len(points),
        "chart_category": charts.grouped_rates(categories, series_cat, "pass rate by category"),
        "chart_severity": charts.grouped_rates(severities, series_sev, "pass rate by severity"),
        "chart_modes": charts.count_bars(
            agg.get("failure_mode_histogram") or {}, "detected failure modes"
        ),
        "chart_scatter": charts.observability_scatter(points),
    }


PANEL = ReportPanel(title="red team", view=redteam_view, template="panel.html.j2")
NODE = "redteam"


def case_heuristic(report: CaseReport) -> dict[str, Any] | None:
    """The heuristic's score of the case (the section's `case_score`) and, for an attack
    record, the attack's transcript; None when redteam did not run on it."""
    section = report.section(NODE)
    if section is None:
        return None
    score, attack = section.get("case_score"), section.get("attack")
    if not isinstance(score, dict):
        return None
    return {"score": score, "attack": attack if isinstance(attack, dict) else None}


CASE_PANEL = CasePanel(view=case_heuristic, template="case.html.j2")

# MetricRow columns filled from the case's heuristic score (the section's `case_score`)
_PROBE_COLUMNS = (("probe_category", "category"), ("probe_severity", "severity"),
                  ("heuristic_passed", "passed"), ("risk_score", "risk_score"))


def probe_values(section: Mapping[str, Any]) -> dict[str, Any]:
    """The heuristic's verdict on the case, repeated on each of its redteam metric rows (export
    and agreement compare the judge's verdict with it); none for a blank answer, which the
    heuristic had no text to judge."""
    probe = section.get("case_score")
    probe = probe if isinstance(probe, Mapping) else {}
    values = {column: probe.get(key) for column, key in _PROBE_COLUMNS}
    if probe.get("no_answer"):
        values["heuristic_passed"] = None
    return values


probe_columns = RowExtras(
    columns={"probe_category": "text", "probe_severity": "text", "heuristic_passed": "flag",
             "risk_score": "number"},
    values=probe_values,
)
