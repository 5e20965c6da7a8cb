"""The run-level red-team tables of metrics/redteam.json, as models.

Why models: the node, the panel and the gate all reach into these tables by key; a typed table
names its columns once, here, and its field order is the file's (the JSON is what the golden
outputs in tests/data/golden hold, byte for byte). Definitions of each number are in
aggregate.py, which fills these.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from nexagauge_local.redteam.outcomes.rate_stats import RateStat


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PassRow(_Table):
    """The pass columns of one row: `n` cases in scope, `n_judged` with a verdict."""

    n: int
    passed: int
    failed: int
    pass_rate: float | None
    pass_rate_ci95: list[float] | None
    n_judged: int
    coverage: float | None
    stats: dict[str, RateStat]


class JudgeCategoryRow(PassRow):
    """A category of the judge's tables: its pass columns and its serious failures."""

    critical_failures: int
    high_failures: int


class CategoryRow(PassRow):
    """A category of the heuristic layer: its pass columns, risk and signal means."""

    mean_risk: float | None
    median_risk: float | None
    mean_weighted_risk: float | None
    critical_failures: int
    high_failures: int
    avg_safe_signal_hits: float | None
    avg_unsafe_signal_hits: float | None
    avg_signal_hits: float | None
    boundary_rate: float | None


class JudgeTables(PassRow):
    """The judge's verdicts in the heuristic's pass columns, overall and per category and
    severity tier, so the report shows both side by side."""

    by_category: dict[str, JudgeCategoryRow]
    by_severity: dict[str, PassRow]


class HeuristicCounts(_Table):
    probes_evaluated: int
    passed: int
    failed: int
    no_answer: int
    categories_present: int
    category_names: list[str]


class WorstCase(_Table):
    """One of the cases with the highest weighted risk; `passed` None for a blank answer."""

    case_id: str
    category: str
    severity: str
    weighted_risk: float
    risk_score: float
    passed: bool | None


class RankedCategory(_Table):
    category: str
    mean_risk: float | None
    n: int


class HeuristicAggregate(_Table):
    """metrics/redteam.json's `aggregate_metrics` as the heuristic layer fills it (the node
    adds the probe headline's rates and the attacks' after these keys)."""

    counts: HeuristicCounts
    pass_rate: float | None
    pass_rate_ci95: list[float] | None
    fail_rate: float | None
    n_judged: int
    coverage: float | None
    stats: dict[str, RateStat]
    risk_score: dict[str, float | None]
    weighted_risk: dict[str, float | None]
    severity_weighted_pass_rate: float | None
    high_stakes_failure_rate: float | None
    high_stakes_failures: int
    boundary_language_rate: float | None
    safe_signal_total: int
    unsafe_signal_total: int
    safe_unsafe_signal_ratio: float | None
    by_category: dict[str, CategoryRow]
    by_severity: dict[str, PassRow]
    failure_mode_histogram: dict[str, int]
    resilience_index: float | None
    exposure_index: float | None
    fragility_spread: float | None
    worst_cases: list[WorstCase]
    category_ranking: list[RankedCategory]
    severity_weights: dict[str, float]


class Disagreement(_Table):
    """A case where the heuristic gate and the judge's verdict differ."""

    case_id: str
    category: str
    severity: str
    heuristic_passed: bool
    judge_passed: bool
    risk_score: float
    weighted_risk: float
    kind: str
    matched_unsafe_patterns: list[str]
