"""Scale-out: a node's uncached judge requests on a Ray cluster (`run --cluster`).

Ray is an optional extra (`pip install 'nexagauge-local[cluster]'`); nothing here imports it at
module level, so the package and `--help` work without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexagauge_local.cluster.spec import (
    INSTALL_HINT,
    ClusterSpec,
    ClusterUnavailable,
    import_ray,
    parse_cluster,
)

if TYPE_CHECKING:
    from nexagauge_local.cluster.executor import ClusterExecutor
    from nexagauge_local.judge import BackendFactory, CostLedger

__all__ = [
    "INSTALL_HINT",
    "ClusterSpec",
    "ClusterUnavailable",
    "connect_cluster",
    "import_ray",
    "make_executor",
    "parse_cluster",
]


def connect_cluster(value: str) -> ClusterSpec:
    """Validate `--cluster` and connect before any work, so a missing Ray, a malformed value or
    an unreachable cluster stops the run at once (exit 2) rather than surfacing later as an
    error on every metric. Idempotent: the executor reuses this connection."""
    from nexagauge_local.cluster.executor import connect

    spec = parse_cluster(value)
    connect(spec)
    return spec


def make_executor(value: str, factory: BackendFactory, ledger: CostLedger) -> ClusterExecutor:
    """The executor a JudgeClient uses for `--cluster VALUE` (actors start on first use)."""
    from nexagauge_local.cluster.executor import ClusterExecutor

    return ClusterExecutor(factory, parse_cluster(value), ledger=ledger)
