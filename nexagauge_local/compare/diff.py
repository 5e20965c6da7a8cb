"""Run B against run A: per (node, metric) means, paired delta with a CI, pass rates, flips.

Every number is over the cases the two runs share (matched by case_id), so a delta is never
an artefact of different case sets; cases in one run only are listed, not scored.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import fmean
from typing import Any

from pydantic import BaseModel, Field

from nexagauge_local.case_report import VerdictSection
from nexagauge_local.compare.bootstrap import CONFIDENCE, DEFAULT_RESAMPLES, paired_delta_ci
from nexagauge_local.compare.load import CaseMetric, RunDir
from nexagauge_local.results import MetricResult

EVIDENCE_KEYS = (
    "claim",
    "verdict",
    "passed",
    "severity",
    "rating",
    "score",
    "reasoning",
    "violations",
    "evidence_spans",
    "unverified_spans",
    "failed_metrics",
    "error_metrics",
)
MAX_EVIDENCE_ROWS = 20


class Side(BaseModel):
    """One run's view of a flipped case: verdict, score and the judge's evidence."""

    status: str
    score: float | None
    error: str | None = None
    evidence: list[dict[str, Any]] = Field(default_factory=list)


class Flip(BaseModel):
    case_id: str
    a: Side
    b: Side


class MetricRow(BaseModel):
    node: str
    metric: str
    n_matched: int  # cases scored (no error) in both runs: the pairs behind mean/delta/CI
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    pass_rate_a: float | None  # over shared cases with a verdict in that run
    pass_rate_b: float | None
    pass_rate_change: float | None
    errors_a: int
    errors_b: int
    flipped_to_fail: list[Flip] = Field(default_factory=list)
    flipped_to_pass: list[Flip] = Field(default_factory=list)


class JudgeCheck(BaseModel):
    a: dict[str, Any] | None
    b: dict[str, Any] | None
    same_fingerprint: bool
    same_prompt_versions: bool | None  # None: a run did not record its prompt versions
    warnings: list[str] = Field(default_factory=list)


class Regression(BaseModel):
    value: float  # largest drop (>= 0) in a mean or a pass rate; 0.0 when nothing dropped
    node: str | None = None
    metric: str | None = None
    kind: str | None = None  # "mean" or "pass_rate"


class Comparison(BaseModel):
    run_a: str
    run_b: str
    seed: int
    resamples: int
    confidence: float
    n_cases_a: int
    n_cases_b: int
    n_matched_cases: int
    only_in_a: list[str]
    only_in_b: list[str]
    judge: JudgeCheck
    max_regression: Regression
    metrics: list[MetricRow]


def compare_runs(
    run_a: RunDir,
    run_b: RunDir,
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    progress: Callable[[int], None] | None = None,
    on_metric: Callable[[int, int], None] | None = None,
) -> Comparison:
    """`progress(1)` per case report read; `on_metric(done, total)` per metric compared."""
    cases_a, cases_b = run_a.cases(progress), run_b.cases(progress)
    shared = sorted(set(cases_a) & set(cases_b))
    keys = _metric_keys(run_a, run_b)
    rows: list[MetricRow] = []
    for node, metric in keys:
        rows.append(_row(node, metric, shared, run_a, run_b, seed, n_resamples))
        if on_metric:
            on_metric(len(rows), len(keys))
    return Comparison(
        run_a=str(run_a.path),
        run_b=str(run_b.path),
        seed=seed,
        resamples=n_resamples,
        confidence=CONFIDENCE,
        n_cases_a=len(cases_a),
        n_cases_b=len(cases_b),
        n_matched_cases=len(shared),
        only_in_a=sorted(set(cases_a) - set(cases_b)),
        only_in_b=sorted(set(cases_b) - set(cases_a)),
        judge=judge_check(run_a, run_b),
        max_regression=max_regression(rows),
        metrics=rows,
    )


def _metric_keys(run_a: RunDir, run_b: RunDir) -> list[tuple[str, str]]:
    """Every (node, metric) seen in either run, nodes in plan order (as summary.json lists
    them), metrics in the order the case reports first show them."""
    keys: dict[tuple[str, str], None] = {}
    for run in (run_b, run_a):
        for record in run.cases().values():
            keys.update(dict.fromkeys(record.metrics))
    order = list(dict.fromkeys(run_b.nodes_run + run_a.nodes_run))
    return sorted(keys, key=lambda k: order.index(k[0]) if k[0] in order else len(order))


def _rate(verdicts: list[CaseMetric]) -> float | None:
    gated = [v for v in verdicts if v.status in ("pass", "fail")]
    return sum(v.status == "pass" for v in gated) / len(gated) if gated else None


def _row(
    node: str,
    metric: str,
    shared: list[str],
    run_a: RunDir,
    run_b: RunDir,
    seed: int,
    n_resamples: int,
) -> MetricRow:
    key = (node, metric)
    ca, cb = run_a.cases(), run_b.cases()
    pairs = [(cid, ca[cid].metrics.get(key), cb[cid].metrics.get(key)) for cid in shared]
    scored = [
        (a, b) for _, a, b in pairs if a and b and a.status != "error" and b.status != "error"
    ]
    sa = [a.score for a, _ in scored if a.score is not None]
    sb = [b.score for _, b in scored if b.score is not None]
    ci = paired_delta_ci(sa, sb, seed=seed, n_resamples=n_resamples)
    va = [a for _, a, _ in pairs if a is not None]
    vb = [b for _, _, b in pairs if b is not None]
    rate_a, rate_b = _rate(va), _rate(vb)
    to_fail: list[Flip] = []
    to_pass: list[Flip] = []
    for cid, a, b in pairs:
        if a is None or b is None or "info" in (a.status, b.status):
            continue
        if a.status == "pass" and b.status != "pass":
            to_fail.append(_flip(cid, node, metric, a, b, run_a, run_b))
        elif a.status != "pass" and b.status == "pass":
            to_pass.append(_flip(cid, node, metric, a, b, run_a, run_b))
    return MetricRow(
        node=node,
        metric=metric,
        n_matched=len(sa),
        mean_a=fmean(sa) if sa else None,
        mean_b=fmean(sb) if sb else None,
        delta=ci.delta if ci else None,
        ci_low=ci.low if ci else None,
        ci_high=ci.high if ci else None,
        pass_rate_a=rate_a,
        pass_rate_b=rate_b,
        pass_rate_change=None if rate_a is None or rate_b is None else rate_b - rate_a,
        errors_a=sum(v.status == "error" for v in va),
        errors_b=sum(v.status == "error" for v in vb),
        flipped_to_fail=to_fail,
        flipped_to_pass=to_pass,
    )


def _flip(
    cid: str, node: str, metric: str, a: CaseMetric, b: CaseMetric, run_a: RunDir, run_b: RunDir
) -> Flip:
    return Flip(
        case_id=cid,
        a=_side(a, run_a.metric_section(cid, node, metric)),
        b=_side(b, run_b.metric_section(cid, node, metric)),
    )


def _side(verdict: CaseMetric, entry: MetricResult | VerdictSection | None) -> Side:
    return Side(
        status=verdict.status, score=verdict.score, error=verdict.error, evidence=evidence(entry)
    )


def evidence(entry: MetricResult | VerdictSection | None) -> list[dict[str, Any]]:
    """The parts of a metric entry that explain a verdict (verdicts, reasoning, violations,
    evidence spans, per-claim labels), without bulky detail such as G-Eval's steps."""
    if entry is None:
        return []
    if isinstance(entry, VerdictSection):  # the eval section is one flat dict: its own keys
        rows = [entry.model_dump(exclude_unset=True)]
    else:
        rows = [r.model_dump() for r in entry.result]  # as written: whichever keys it has
    picked = [{k: r[k] for k in EVIDENCE_KEYS if k in r} for r in rows[:MAX_EVIDENCE_ROWS]]
    return [p for p in picked if p]


def _judge_side(run: RunDir) -> dict[str, Any] | None:
    judge = run.judge
    if judge is None and run.prompt_versions is None:
        return None
    # compare.json's judge side: these four of the judge block, in this order
    out: dict[str, Any] = {} if judge is None else {
        "model": judge.model, "fingerprint": judge.fingerprint,
        "backend": judge.backend, "demo": judge.demo,
    }
    out["prompt_versions"] = run.prompt_versions
    return out


def judge_check(run_a: RunDir, run_b: RunDir) -> JudgeCheck:
    """Whether the two runs were judged alike. A cross-judge comparison is allowed, but its
    deltas measure the judge change as much as the model change, so it is said loudly."""
    ja, jb = run_a.judge, run_b.judge
    fa = ja.fingerprint if ja is not None else None
    fb = jb.fingerprint if jb is not None else None
    warnings: list[str] = []
    if fa != fb:
        warnings.append(f"different judges: A {fa or 'none'} vs B {fb or 'none'}")
    na, nb = run_a.node_fingerprints, run_b.node_fingerprints
    changed_nodes = [f"{n}: {na[n]} -> {nb[n]}" for n in sorted(set(na) & set(nb))
                     if na[n] != nb[n] and (na[n], nb[n]) != (fa, fb)]
    if changed_nodes:  # a node's own judge changed (`--model NODE=PROFILE`)
        warnings.append("different judges for nodes: " + ", ".join(changed_nodes))
    pa, pb = run_a.prompt_versions, run_b.prompt_versions
    same_pv: bool | None = None
    if pa is not None and pb is not None:
        # only prompts both runs name: a node one run did not use is not a version change
        changed = [f"{k}: {pa[k]} -> {pb[k]}" for k in sorted(set(pa) & set(pb)) if pa[k] != pb[k]]
        same_pv = not changed
        if changed:
            warnings.append("different prompt versions: " + ", ".join(changed))
    return JudgeCheck(
        a=_judge_side(run_a),
        b=_judge_side(run_b),
        same_fingerprint=fa == fb,
        same_prompt_versions=same_pv,
        warnings=warnings,
    )


def max_regression(rows: list[MetricRow]) -> Regression:
    """The largest drop from A to B in any metric's mean or pass rate (a gate threshold)."""
    worst = Regression(value=0.0)
    for row in rows:
        for kind, change in (("mean", row.delta), ("pass_rate", row.pass_rate_change)):
            if change is not None and -change > worst.value:
                worst = Regression(value=-change, node=row.node, metric=row.metric, kind=kind)
    return worst
