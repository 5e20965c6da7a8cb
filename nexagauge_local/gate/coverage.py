"""Coverage of a rate rule: how much of the rate's scope stands behind the number.

A red-team rate is successes over the probes judged (redteam/outcomes/tables.py); a blank answer, a
failed judgement or an input too long for the judge leaves a probe in the rate's `n` but out of
its `n_judged`. `harmful_compliance_rate <= 0.02` over 5 judged probes of 200 would pass a gate
on what survived, so a rule naming a rate that carries a stats entry (rate_stats / stats in
metrics/NODE.json) FAILS when its coverage, n_judged / n, is below the policy's
`[coverage] min_judged` (default 1.0: every probe judged).

Pass rates carry one too: `NODE.aggregate.pass_rate` and `NODE.judge_tables.pass_rate` (and
their by_category / by_severity rows) in their `stats`, where a blank answer or a case without
a verdict is in n but not judged, and `NODE.METRIC.pass_rate` in the metric's line
(report/stats.py), where n counts the metric's errors. Without this, `redteam.toxicity.pass_rate
>= 0.98` would pass on the cases that survived.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nexagauge_local.gate.policy import Rule

STATS_KEYS = ("rate_stats", "stats")  # where metrics/NODE.json keeps a table's rate entries


def rate_entry(summary: Mapping[str, Any], rest: list[str],
               aliases: Mapping[str, str]) -> Mapping[str, Any] | None:
    """The stats entry of the rate at `rest` (the rule's path after NODE), None when the value
    there is no rate with one. METRIC.STAT names a metric's line first, as gate/evaluate.py
    resolves it."""
    parent: Any = summary
    line = _metric_line(summary, rest)
    if line is not None:
        parent, rest = line, rest[1:]
    for i, key in enumerate(rest[:-1]):
        key = aliases.get(key, key) if i == 0 else key
        if not isinstance(parent, Mapping):
            return None
        parent = parent.get(key)
    if not isinstance(parent, Mapping):
        return None
    last = rest[-1]
    if last == "rate" and "n_judged" in parent:  # the path names the stats entry's own rate
        return parent
    for stats_key in STATS_KEYS:
        entry = (parent.get(stats_key) or {}).get(last) if isinstance(
            parent.get(stats_key), Mapping) else None
        if isinstance(entry, Mapping) and "n_judged" in entry:
            return entry
    return None


def _metric_line(summary: Mapping[str, Any], rest: list[str]) -> Mapping[str, Any] | None:
    metrics = summary.get("metrics")
    if len(rest) != 2 or not isinstance(metrics, Mapping):
        return None
    line = metrics.get(rest[0])
    return line if isinstance(line, Mapping) else None


def shortfall(rule: Rule, summary: Mapping[str, Any] | None, min_judged: float,
              aliases: Mapping[str, str]) -> str | None:
    """Why the rule fails on coverage, or None when its coverage is enough (or it has none)."""
    parts = rule.path.split(".")
    if summary is None or len(parts) < 2:
        return None
    entry = rate_entry(summary, parts[1:], aliases)
    if entry is None:
        return None
    n, judged, coverage = entry.get("n"), entry.get("n_judged"), entry.get("coverage")
    if not isinstance(coverage, int | float) or coverage >= min_judged:
        return None
    # a metric's line counts any node's cases; the red-team tables count probes
    unit = "cases" if _metric_line(summary, parts[1:]) is not None else "probes"
    return (f"coverage {coverage:.4g} ({judged} of {n} {unit} judged) is below "
            f"{min_judged:.4g} ([coverage] min_judged)")
