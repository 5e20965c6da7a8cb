"""Evaluating a policy against a run: resolve each rule's PATH to a number, then compare.

PATH forms (NODE is a metric node that wrote metrics/NODE.json; `eval` is derived from the
case reports):
  NODE.STAT              node level: mean, median, pass_rate, errors, scored, eligible
  NODE.METRIC.STAT       one metric: mean, median, min, max, pass_rate, errors, n
  NODE.aggregate.KEY...  the red-team run-level table (aggregate_metrics), e.g.
                         redteam.aggregate.high_stakes_failure_rate
  NODE.KEY...            any other number in metrics/NODE.json, by its JSON keys
  compare.max_regression largest drop of a mean or pass rate against --baseline

A rule on a rate with a stats entry (red-team probe rates) also FAILS when fewer of the rate's
probes were judged than `[coverage] min_judged` asks (gate/coverage.py; default: all of them).

A rule whose PATH the run does not have is a policy error (exit 2): a typo must not pass a gate
silently. Rules listed under `optional` are SKIPPED instead. A PATH that exists with value null
(e.g. a pass rate when every case errored) FAILS: a gate cannot pass on a number it lacks.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from nexagauge_local.compare.diff import Comparison
from nexagauge_local.compare.load import RunDir
from nexagauge_local.gate.coverage import shortfall
from nexagauge_local.gate.policy import OPS, Policy, PolicyError, Rule

Status = Literal["PASS", "FAIL", "SKIP"]
NODE_STATS = {
    "mean": "avg_score",
    "median": "median_score",
    "pass_rate": "pass_rate",
    "errors": "errors",
    "scored": "scored",
    "eligible": "eligible",
}
METRIC_STATS = ("mean", "median", "min", "max", "pass_rate", "errors", "n")
ALIASES = {"aggregate": "aggregate_metrics"}


class RuleResult(BaseModel):
    rule: str
    metric: str
    op: str
    threshold: float
    line: int | None
    optional: bool
    value: float | None
    status: Status
    detail: str


class GateReport(BaseModel):
    run: str
    policy: str
    baseline: str | None
    passed: bool
    counts: dict[str, int]
    results: list[RuleResult]


class Missing(Exception):
    """The run has no such metric (a policy error unless the rule is optional)."""


def _number(value: Any, rule: Rule, where: str, policy: Policy) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "a table" if isinstance(value, dict | list) else type(value).__name__
        raise PolicyError(policy.path, rule.line, f"{rule.path} is {kind} in {where}, not a number")
    return float(value)


def resolve(rule: Rule, run: RunDir, comparison: Comparison | None, policy: Policy) -> float | None:
    parts = rule.path.split(".")
    if parts[0] == "compare":
        if parts[1:] != ["max_regression"]:
            raise PolicyError(
                policy.path,
                rule.line,
                f"unknown {rule.path}; the compare value is compare.max_regression",
            )
        if comparison is None:
            raise PolicyError(policy.path, rule.line, f"{rule.path} needs --baseline RUN_BASE")
        return comparison.max_regression.value
    node, rest = parts[0], parts[1:]
    summary = run.node_summary(node)
    if summary is None:
        have = ", ".join(sorted(run.metric_nodes())) or "none"
        raise Missing(f"{run.path} has no metrics for node {node!r} (nodes with metrics: {have})")
    where = f"{run.path}/metrics/{node}.json"
    if len(rest) == 1 and rest[0] in NODE_STATS:
        return _number(summary.get(NODE_STATS[rest[0]]), rule, where, policy)
    metrics = summary.get("metrics") or {}
    if len(rest) == 2 and rest[0] in metrics and rest[1] in METRIC_STATS:
        return _number(metrics[rest[0]].get(rest[1]), rule, where, policy)
    value: Any = summary
    for i, key in enumerate(rest):
        key = ALIASES.get(key, key) if i == 0 else key
        if not isinstance(value, dict) or key not in value:
            known = ", ".join(sorted(metrics)) or "none"
            raise Missing(
                f"{where} has no {'.'.join(rest)} (metrics there: {known}; stats: "
                f"{', '.join(NODE_STATS)} or METRIC.{{{','.join(METRIC_STATS)}}})"
            )
        value = value[key]
    return _number(value, rule, where, policy)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def evaluate_rule(
    rule: Rule, run: RunDir, comparison: Comparison | None, policy: Policy
) -> RuleResult:
    base = {
        "rule": rule.text,
        "metric": rule.path,
        "op": rule.op,
        "threshold": rule.threshold,
        "line": rule.line,
        "optional": rule.optional,
    }
    try:
        value = resolve(rule, run, comparison, policy)
    except Missing as exc:
        if not rule.optional:
            raise PolicyError(
                policy.path,
                rule.line,
                f"{rule.path}: {exc} (list the rule under `optional` to skip it when absent)",
            ) from None
        return RuleResult(**base, value=None, status="SKIP", detail=f"absent: {exc}")
    if value is None:
        return RuleResult(**base, value=None, status="FAIL", detail="no value (null in the run)")
    ok = rule.holds(value)
    detail = f"{_fmt(value)} is {'' if ok else 'not '}{OPS[rule.op]} {_fmt(rule.threshold)}"
    short = None if rule.path.startswith("compare.") else shortfall(
        rule, run.node_summary(rule.path.split(".")[0]), policy.min_judged, ALIASES)
    if short is not None:
        return RuleResult(**base, value=value, status="FAIL", detail=f"{detail}, but {short}")
    if rule.path == "compare.max_regression" and comparison is not None:
        worst = comparison.max_regression
        if worst.node is not None:
            detail += f" (worst: {worst.node}.{worst.metric} {worst.kind})"
    return RuleResult(**base, value=value, status="PASS" if ok else "FAIL", detail=detail)


def evaluate_policy(
    policy: Policy, run: RunDir, comparison: Comparison | None = None
) -> GateReport:
    """Raises PolicyError (exit 2) for the rules the run cannot answer, all of them at once;
    FAILs are in the report."""
    results: list[RuleResult] = []
    errors: list[PolicyError] = []
    for rule in policy.rules:
        try:
            results.append(evaluate_rule(rule, run, comparison, policy))
        except PolicyError as exc:
            errors.append(exc)
    if errors:
        raise PolicyError.combine(errors)
    counts = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    return GateReport(
        run=str(run.path),
        policy=str(policy.path),
        baseline=comparison.run_a if comparison else None,
        passed=counts["FAIL"] == 0,
        counts=counts,
        results=results,
    )
