"""Case reports flattened to one row per case x metric: the common shape of export, agreement
and the HTML tables.

Case reports do not store a metric-level `passed` (MetricResult has no such key), so
it is re-derived here with the same rules the nodes used: a single-entry result carries its own
`passed` (redteam, geval, refalign); claim lists (grounding, relevance) pass when their mean
score does; metrics without a gate (ROUGE, BLEU, METEOR, cosine) have `passed = None`.

A node may add columns of its own to its rows through its SPEC's `row_extras` (redteam: the
heuristic's verdict on the case; they follow the common columns, in graph order), so no node
is named here. Which nodes are metric nodes is
read from the report itself (the sections holding a metrics list, written in graph order).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from nexagauge_local.case_report import CaseReport
from nexagauge_local.graph import GRAPH, Graph
from nexagauge_local.nodes.panel import ColumnKind, RowExtras
from nexagauge_local.results import MetricResult, ResultEntry, passed_for

TEXT_FIELDS: tuple[str, ...] = ("input", "output", "context", "reference")


@dataclass(frozen=True)
class MetricRow:
    """One metric of one case. Lists stay lists here; the CSV writer encodes them as JSON."""

    case_id: str
    node: str
    metric: str
    category: str | None
    score: float | None
    passed: bool | None
    verdict: str | None
    severity: int | None
    rating: int | None
    error: str | None
    reasoning: str | None
    violations: list[str] = field(default_factory=list)
    evidence_spans: list[str] = field(default_factory=list)
    claims: int | None = None
    claims_passed: int | None = None
    # the node's own columns (its SPEC's row_extras), e.g. redteam's probe_category
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.node}.{self.metric}"

    def as_dict(self) -> dict[str, Any]:
        """The row as export writes it: the common columns, then every node's extra columns
        of the pipeline's graph (empty on other nodes' rows), then any other the row has."""
        out = asdict(self)
        extras = out.pop("extras")
        out.update(dict.fromkeys(EXTRA_COLUMNS))
        out.update(extras)
        return out


def extra_columns_of(graph: Graph) -> dict[str, ColumnKind]:
    """Every node's extra row columns in `graph`, in graph order: name -> kind."""
    return {name: kind for s in graph.nodes if s.row_extras is not None
            for name, kind in s.row_extras.columns.items()}


EXTRA_COLUMNS: dict[str, ColumnKind] = extra_columns_of(GRAPH)
COLUMNS: tuple[str, ...] = (*(f for f in MetricRow.__dataclass_fields__ if f != "extras"),
                            *EXTRA_COLUMNS)
LIST_COLUMNS: frozenset[str] = frozenset({"violations", "evidence_spans"})


def _is_claim_list(result: list[ResultEntry]) -> bool:
    return bool(result) and all(r.is_claim for r in result)


def metric_passed(metric: MetricResult) -> bool | None:
    """The metric's gate as its node decided it; None when it has no gate or no score."""
    if metric.score is None:
        return None
    result = metric.result
    if _is_claim_list(result):
        return passed_for(metric.score)
    if len(result) == 1 and "passed" in result[0].model_fields_set:
        value = result[0].written("passed")
        return None if value is None else bool(value)
    return None


def metric_verdict(metric: MetricResult, passed: bool | None) -> str | None:
    """The entry's own verdict (SAFE/UNSAFE, PASS/FAIL); claim lists get PASS/FAIL from the
    metric's gate, since their per-claim labels (supported, ...) describe one claim each."""
    result = metric.result
    if len(result) == 1 and not _is_claim_list(result) and result[0].written("verdict"):
        return str(result[0].written("verdict"))
    if passed is None:
        return None
    return "PASS" if passed else "FAIL"


def _absent(key: str) -> None:
    return None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def row_extras_of(graph: Graph) -> dict[str, RowExtras]:
    """node -> its SPEC's row_extras hook, for the nodes of `graph` that declare one."""
    return {s.name: s.row_extras for s in graph.nodes if s.row_extras is not None}


ROW_EXTRAS = row_extras_of(GRAPH)


def metric_rows(report: CaseReport,
                row_extras: Mapping[str, RowExtras] = ROW_EXTRAS) -> Iterator[MetricRow]:
    """Every metric of one case report, in node order.

    The metric nodes are the sections that hold a metrics list, in the order the runner wrote
    them (the graph's): a node added to the graph reaches the rows, and so export, agreement
    and the HTML tables, without being listed here. `row_extras`: the hooks of the graph
    that wrote the report (the pipeline's by default)."""
    case_id = report.case_id
    for node, section in report.metric_sections():
        hook = row_extras.get(node)
        extras = dict(hook.values(report.sections[node])) if hook is not None else {}
        for metric in section.metrics:
            result = metric.result
            claims = _is_claim_list(result)
            # the single entry's keys as written: the table shows whichever of these its kind has
            first = result[0] if len(result) == 1 and not claims else None
            written = first.written if first is not None else _absent
            passed = metric_passed(metric)
            yield MetricRow(
                case_id=case_id,
                node=node,
                metric=metric.name,
                category=metric.category,
                score=metric.score,
                passed=passed,
                verdict=metric_verdict(metric, passed),
                severity=_int_or_none(written("severity")),
                rating=_int_or_none(written("rating")),
                error=metric.error,
                reasoning=written("reasoning"),
                violations=_strings(written("violations")),
                evidence_spans=_strings(written("evidence_spans")),
                claims=len(result) if claims else None,
                claims_passed=sum(bool(r.written("passed")) for r in result) if claims else None,
                extras=extras,
            )


def all_rows(reports: Iterable[CaseReport],
             row_extras: Mapping[str, RowExtras] = ROW_EXTRAS) -> Iterator[MetricRow]:
    for report in reports:
        yield from metric_rows(report, row_extras)


def csv_cell(column: str, value: Any) -> str:
    """CSV text of one cell: lists as JSON, None as empty, floats with full precision (repr)."""
    if column in LIST_COLUMNS:
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
