"""Which judge-usage counters summary.json shows for every node, taken from NodeUsage.

Every node's usage block and the run totals carry NodeUsage's counters; the ones that only make
sense for a node the judge served (deduplicated, backend_requests, errors, cache_retried) appear
only there, and wall_seconds is the runner's own clock per node. Deriving the list from
NodeUsage keeps the runner and the HTML report in step with the ledger.
"""

from __future__ import annotations

from nexagauge_local.judge import NodeUsage

_JUDGE_ONLY = frozenset({"deduplicated", "backend_requests", "errors", "cache_retried",
                         "wall_seconds"})

USAGE_TOTALS: tuple[str, ...] = tuple(k for k in NodeUsage.model_fields if k not in _JUDGE_ONLY)


def zero_usage() -> dict[str, int | float]:
    """The counters of a node the judge never served, all zero."""
    defaults = NodeUsage().model_dump()
    return {k: defaults[k] for k in USAGE_TOTALS}
