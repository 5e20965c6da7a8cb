"""The per-case half of the report, built in one pass over the case reports: drill-down views,
score lists for the distribution charts, and each metric's worst cases.

Size control for large runs (a 10,000-case page must stay small and open fast): each text field
shown in the drill-down is clipped to a per-field budget that shrinks as the run grows (the
full text is one click away in case_report/<case>.json), claim lists are capped, the
template collapses every case but the first few, and at most MAX_LISTED cases (the worst) are
listed at all: the page and the memory that builds it stay bounded at a million cases.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from statistics import fmean
from typing import Any

from markupsafe import Markup

from nexagauge_local.case_report import CaseReport
from nexagauge_local.graph import GRAPH, Graph
from nexagauge_local.nodes.panel import CasePanel
from nexagauge_local.report.charts import ScoreCounts
from nexagauge_local.report.highlight import clip, highlight
from nexagauge_local.report.rows import (
    ROW_EXTRAS,
    TEXT_FIELDS,
    MetricRow,
    metric_rows,
    row_extras_of,
)
from nexagauge_local.report.rundata import CaseFile
from nexagauge_local.results import MetricResult

TEXT_BUDGET = 3_000_000  # characters of evaluated text in the whole page
MAX_FIELD_CHARS = 4000
MIN_FIELD_CHARS = 160
MAX_CLAIMS = 12  # per metric; the claims node's own part caps its list itself
WORST_N = 5
MAX_LISTED = 10_000  # cases listed on the page; the rest are counted and stay in case_report/
ERROR_EXAMPLES = 3
STATUS_ORDER = {"fail": 0, "error": 1, "info": 2, "pass": 3}
_DETAIL_KEYS = (
    "precision",
    "recall",
    "fmeasure",
    "f1",
    "global_cosine",
    "brevity_penalty",
    "matching",
    "units_from",  # refalign: "judge" when atomic_chunks had the judge extract the units
    "units",  # refalign: "nexa-gauge" chunks or "sentences" (--refalign-units)
    "score_method",
    "steps_source",
)


def field_budget(n_cases: int) -> int:
    """Characters shown per text field: generous for small runs, clipped for huge ones."""
    per_case = TEXT_BUDGET // max(1, n_cases)
    return max(MIN_FIELD_CHARS, min(MAX_FIELD_CHARS, per_case // len(TEXT_FIELDS)))


def anchor_for(filename: str) -> str:
    """The drill-down's element id; case file names are already unique and id-safe."""
    return "case-" + Path(filename).stem


@dataclass
class TextView:
    name: str
    html: Markup
    clipped: bool
    length: int


@dataclass
class MetricView:
    row: MetricRow
    unverified: list[str]
    claims: list[dict[str, Any]]
    more_claims: int
    details: str

    @property
    def informational(self) -> bool:
        """A score without a gate or a verdict (ROUGE, BLEU, cosine): shown on one line per
        node in the drill-down instead of one table row each."""
        return self.row.passed is None and not self.row.error and self.row.verdict is None


@dataclass
class CaseView:
    case_id: str
    anchor: str
    filename: str
    status: str
    score: float | None
    failing: list[str]
    texts: list[TextView]
    metrics: list[MetricView]
    skipped: dict[str, str]
    parts: list[CasePart] = field(default_factory=list)


@dataclass(frozen=True)
class CasePart:
    """A node's part of the drill-down (its SPEC's case_panel): the template "<node>/<file>"
    and what it prints as `part.view`; None when the case has nothing of that node's."""

    template: str
    view: Any


def case_panels(graph: Graph) -> dict[str, CasePanel]:
    """node -> its case panel, in graph order (the order the parts are printed in)."""
    return {s.name: s.case_panel for s in graph.nodes if s.case_panel is not None}


CASE_PANELS = case_panels(GRAPH)


def case_status(rows: Iterable[MetricRow]) -> tuple[str, float | None, list[str]]:
    """(status, score, failing keys) with eval's rule: an error or a failed gate fails the
    case; informational metrics (no gate) never do; score = mean of the gating scores."""
    rows = list(rows)
    errors = [r.key for r in rows if r.error]
    failed = [r.key for r in rows if r.passed is False and not r.error]
    gating = [r.score for r in rows if r.passed is not None and r.score is not None]
    informative = [r.score for r in rows if r.score is not None]
    score = fmean(gating) if gating else (fmean(informative) if informative else None)
    if failed:
        return "fail", score, failed + errors
    if errors:
        return "error", score, errors
    return ("pass" if gating else "info"), score, []


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _details(metric: MetricResult) -> str:
    result = metric.result
    first = result[0].model_dump() if len(result) == 1 else {}
    parts = [f"{k} {_fmt(first[k])}" for k in _DETAIL_KEYS if first.get(k) is not None]
    return " · ".join(parts)


def _metric_views(report: CaseReport, rows: list[MetricRow]) -> list[MetricView]:
    raw: dict[tuple[str, str], MetricResult] = {}
    for node in {r.node for r in rows}:
        section = report.metrics_of(node)
        for m in section.metrics if section is not None else []:
            raw[(node, m.name)] = m
    views: list[MetricView] = []
    for row in rows:
        metric = raw.get((row.node, row.metric))
        result = metric.result if metric is not None else []
        claims = [r.model_dump() for r in result if r.is_claim]
        first = result[0].model_dump() if len(result) == 1 else {}
        views.append(
            MetricView(
                row=row,
                unverified=[str(s) for s in first.get("unverified_spans") or []],
                claims=claims[:MAX_CLAIMS],
                more_claims=max(0, len(claims) - MAX_CLAIMS),
                details="" if claims or metric is None else _details(metric),
            )
        )
    return views


def case_view(case: CaseFile, rows: list[MetricRow], budget: int,
              panels: Mapping[str, CasePanel] = CASE_PANELS) -> CaseView:
    """`panels`: the case panels of the graph that wrote the run (the pipeline's by default)."""
    report = case.report
    spans = [s for r in rows for s in r.evidence_spans]
    texts: list[TextView] = []
    for name in TEXT_FIELDS:
        value = report.input.text(name)
        if not value:
            continue
        shown, clipped = clip(value, budget)
        texts.append(TextView(name, highlight(shown, spans), clipped, len(value)))
    status, score, failing = case_status(rows)
    return CaseView(
        case_id=report.case_id,
        anchor=anchor_for(case.filename),
        filename=case.filename,
        status=status,
        score=score,
        failing=failing,
        texts=texts,
        metrics=_metric_views(report, rows),
        skipped={str(k): str(v) for k, v in report.skipped.items()},
        parts=[CasePart(f"{node}/{panel.template}", panel.view(report))
               for node, panel in panels.items()],
    )


@dataclass
class Worst:
    """A metric's worst cases: lowest scores and a few error examples, with anchors."""

    # score, case_id, anchor (None when the case is not listed on the page)
    lowest: list[tuple[float, str, str | None]] = field(default_factory=list)
    errors: list[tuple[str, str, str | None]] = field(default_factory=list)  # error, case_id, anchor
    error_count: int = 0
    gated: bool = False  # some case got a pass/fail verdict
    ungated: bool = False  # some case got a score without a verdict (informational metric)


@dataclass
class CasesDigest:
    cases: list[CaseView]  # the listed cases, worst first (at most MAX_LISTED)
    scores: dict[str, dict[str, ScoreCounts]]  # node -> metric -> the histogram's counts
    worst: dict[str, Worst]  # node.metric -> worst cases
    anchors: dict[str, str]  # case_id -> anchor, for the listed cases only
    field_chars: int
    total: int = 0  # cases read; total - len(cases) are not listed on the page

    def stands_for(self, n_cases: int) -> bool:
        """Whether this digest is the one a folder of `n_cases` case reports gives: as many
        cases, clipped to that count's field budget."""
        return self.total == n_cases and self.field_chars == field_budget(min(n_cases, MAX_LISTED))


SortKey = tuple[int, float, str]


def _sort_key(status: str, score: float | None, case_id: str) -> SortKey:
    """Worst first: failures, then errors; lower scores first; then the case id."""
    return (STATUS_ORDER[status], score if score is not None else 2.0, case_id)


class _Smallest:
    """The k smallest items seen, in bounded memory: the buffer is cut back to k whenever it
    reaches 2k, so a million cases cost O(k) memory and O(n log k) time. (heapq.nsmallest
    needs the whole iterable at once; one heap per metric would need a reversed key type.)"""

    def __init__(self, k: int, key: Any = None) -> None:
        self.k, self.key = k, key
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        self.items.append(item)
        if len(self.items) >= 2 * self.k:
            self.items = heapq.nsmallest(self.k, self.items, key=self.key)

    def result(self) -> list[Any]:
        return heapq.nsmallest(self.k, self.items, key=self.key)


# A case that may be listed: its sort key, file name and report (or the report's JSON text,
# a third of the memory of the parsed dict or of its view).
_Candidate = tuple[SortKey, str, "CaseReport | str"]


class CaseDigester:
    """digest_cases one case at a time, for a caller that sees the cases as they are made: the
    runner feeds it each case report as it writes the file, so report.html need not read 2,000
    case files back after the run (0.8 s of a 6.5 s refmatch run); the work is done while the
    scoring pool keeps the cores busy. `n_cases` sets the field budget, so a digest only stands
    for a folder holding exactly that many case reports.

    A case's drill-down view (highlighted texts, metric views: about 5.7 KB of objects) is
    built only in `result`, for the MAX_LISTED cases that are listed: until then a candidate is
    kept as its report's JSON text when the caller has it. Building every view as it came held
    up to 2 * MAX_LISTED of them (118 MB) inside the case loop, and built views for cases a
    large run never lists (0.3 ms each)."""

    def __init__(self, n_cases: int, graph: Graph = GRAPH) -> None:
        """`graph`: the one that wrote the cases (its row extras and case panels)."""
        self.row_extras = ROW_EXTRAS if graph is GRAPH else row_extras_of(graph)
        self.panels = CASE_PANELS if graph is GRAPH else case_panels(graph)
        self.budget = field_budget(min(n_cases, MAX_LISTED))
        self.listed = _Smallest(MAX_LISTED, key=itemgetter(0))
        self.scores: dict[str, dict[str, ScoreCounts]] = {}
        self.lowest: dict[str, _Smallest] = {}
        self.errors: dict[str, _Smallest] = {}
        self.worst: dict[str, Worst] = {}
        self.total = 0

    def add(self, case: CaseFile, text: str | None = None) -> None:
        """`text`: the JSON text `case.report` was read from, kept instead of the dict."""
        self.total += 1
        rows = list(metric_rows(case.report, self.row_extras))
        case_id = case.report.case_id
        status, score, _ = case_status(rows)
        candidate: _Candidate = (_sort_key(status, score, case_id), case.filename,
                                 case.report if text is None else text)
        self.listed.add(candidate)
        for r in rows:
            w = self.worst.setdefault(r.key, Worst())
            w.gated |= r.passed is not None
            w.ungated |= r.score is not None and r.passed is None and not r.error
            if r.score is not None:
                (self.scores.setdefault(r.node, {}).setdefault(r.metric, ScoreCounts())
                 .add(float(r.score)))
                self.lowest.setdefault(r.key, _Smallest(WORST_N)).add((float(r.score), case_id))
            if r.error:
                w.error_count += 1
                self.errors.setdefault(r.key, _Smallest(ERROR_EXAMPLES)).add((case_id, r.error))

    def _view(self, candidate: _Candidate) -> CaseView:
        _, filename, report = candidate
        report = CaseReport.from_json(report) if isinstance(report, str) else report
        return case_view(CaseFile(filename, report), list(metric_rows(report, self.row_extras)),
                         self.budget, self.panels)

    def result(self) -> CasesDigest:
        views = [self._view(c) for c in sorted(self.listed.result(), key=itemgetter(0))]
        anchors = {v.case_id: v.anchor for v in views}
        for key, smallest in self.lowest.items():
            self.worst[key].lowest = [(score, cid, anchors.get(cid))
                                      for score, cid in smallest.result()]
        for key, smallest in self.errors.items():
            self.worst[key].errors = [(err, cid, anchors.get(cid))
                                      for cid, err in smallest.result()]
        return CasesDigest(views, self.scores, self.worst, anchors, self.budget, self.total)


def digest_cases(cases: Iterable[CaseFile], n_cases: int, graph: Graph = GRAPH) -> CasesDigest:
    """One pass in bounded memory, whatever the run's size: at most MAX_LISTED case views
    (the worst), WORST_N lowest scores and ERROR_EXAMPLES errors per metric, and the
    histogram's bin counts per metric for the charts. The order the files come in does not matter:
    every kept list is chosen by a total order (score or status, then case id)."""
    digester = CaseDigester(n_cases, graph)
    for case in cases:
        digester.add(case)
    return digester.result()
