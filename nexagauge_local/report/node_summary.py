"""metrics/<node>.json as models: a node's counts and rates, each metric's line, then the
node's own run-level sections (finalize) and its usage.

Why models: the runner, `run`'s result lines, compare and gate all read these numbers back;
named fields make a misspelt key a type error instead of a None. The file keeps its key order
(the declared order, then the node's own sections in the order they were added) and writes only
the keys that were set: a node without scores (claims) writes node, eligible and skipped, then
its own sections, not a row of nulls.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from nexagauge_local.redteam.outcomes.rate_stats import RateStat

KEPT_WITHOUT_SCORES = ("node", "eligible", "skipped")


class MetricSummary(BaseModel):
    """One metric's line. `pass_rate` is over the cases with a verdict (`n_judged`) while `n`
    counts every case the metric ran on, errors included; `stats.pass_rate` is the rate's entry
    with its Wilson 95% interval, where a gate rule reads its coverage."""

    n: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None
    pass_rate: float | None
    errors: int
    n_judged: int
    coverage: float | None
    pass_rate_ci95: list[float] | None
    stats: dict[str, RateStat]


class NodeSummary(BaseModel):
    """One node's metrics/<node>.json. Sections a node adds at the end of the run (redteam's
    aggregate_metrics, claims' extraction yield) and `usage` ride as extra keys."""

    model_config = ConfigDict(extra="allow")

    node: str
    eligible: int
    scored: int = 0  # written only by a node with scores (as errors)
    errors: int = 0
    passed: int | None = None
    failed: int | None = None
    pass_rate: float | None = None
    avg_score: float | None = None
    median_score: float | None = None
    metrics: dict[str, MetricSummary] | None = None
    skipped: dict[str, int]

    @model_serializer(mode="wrap")
    def _written_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def with_sections(self, sections: dict[str, Any], *, scored: bool = True) -> NodeSummary:
        """This summary with the node's own run-level `sections` after its keys; `scored`
        False keeps only node, eligible and skipped of the counts (a node without scores)."""
        own = self.model_dump()
        if not scored:
            own = {k: own[k] for k in KEPT_WITHOUT_SCORES}
        return NodeSummary.model_validate({**own, **sections})

    def section(self, key: str) -> Any:
        """A section the node added (None when it has none), as JSON."""
        return (self.model_extra or {}).get(key)

    def to_json(self) -> dict[str, Any]:
        """The JSON object metrics/<node>.json holds."""
        return self.model_dump()
