"""report: the stable report files, run summary and HTML report.

Not a per-case node: the runner writes these once, after the last shard, by streaming over the
case reports on disk. It is in the graph so `run report` is a target that plans everything.
"""

from __future__ import annotations

from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("report", ("eval",), (), "aggregate", "stable report files, run summary, HTML report",
                order=12, per_case=False)
