"""Reading a finished output directory back: summary, per-node summaries, per-case verdicts.

Only what a comparison needs is kept per case (score, status, error); the evidence of a flipped
case is read again from its case report on demand, so a run of 100k cases stays small in memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from nexagauge_local.case_report import (
    CaseReport,
    ValidationError,
    VerdictSection,
    invalid_because,
)
from nexagauge_local.report.run_summary import (
    JudgeInfo,
    RunSummary,
    SummaryFileError,
    read_summary,
)
from nexagauge_local.results import MetricResult, passed_for

Status = Literal["pass", "fail", "error", "info"]
"""pass/fail: a gated metric's verdict; error: not scored (an unscored metric is not a pass);
info: an informational metric (ROUGE, BLEU, ...) that has no pass/fail of its own."""

EVAL_NODE = "eval"
EVAL_METRIC = "overall"
"""The case-level verdict of the `eval` node is compared as the metric eval.overall."""


class BadRunDir(Exception):
    """An output directory that cannot be read; the message names the file."""


@dataclass(frozen=True)
class CaseMetric:
    score: float | None
    status: Status
    error: str | None = None


@dataclass
class CaseRecord:
    path: Path
    metrics: dict[tuple[str, str], CaseMetric] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadRunDir(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadRunDir(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise BadRunDir(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def metric_status(metric: MetricResult) -> CaseMetric:
    """A case-report metric's verdict. The report leaves `passed` out of the metric itself
    (spec shape), so it is read from the result rows: a single row carrying `passed` is the
    metric's own verdict (redteam, geval, refalign); several rows carrying it are per-claim
    verdicts, and the metric's verdict is the global threshold on its score (grounding,
    relevance); rows without it mean an informational metric."""
    score, error = metric.score, metric.error
    if error or score is None:
        return CaseMetric(score, "error", error or "no score")
    gated = [r.gate for r in metric.result if r.gate is not None]
    if not gated:
        return CaseMetric(score, "info")
    ok = gated[0] if len(metric.result) == 1 else bool(passed_for(score))
    return CaseMetric(score, "pass" if ok else "fail")


def case_metrics(report: CaseReport) -> dict[tuple[str, str], CaseMetric]:
    """Every (node, metric) verdict of one case report, in report order."""
    out: dict[tuple[str, str], CaseMetric] = {}
    for node in report.sections:
        verdict = report.verdict_of(node) if node == EVAL_NODE else None
        if verdict is not None:
            if verdict.passed is None:
                status: Status = "info"
            else:
                status = "pass" if verdict.passed else "fail"
            out[(EVAL_NODE, EVAL_METRIC)] = CaseMetric(verdict.score, status)
            continue
        section = report.metrics_of(node)
        for metric in section.metrics if section is not None else []:
            out[(node, metric.name)] = metric_status(metric)
    return out


def _case_report(path: Path) -> CaseReport:
    """The case report in `path`, with its case id; BadRunDir names the file otherwise."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise BadRunDir(f"{path}: a case report must be a JSON object")
    try:
        report = CaseReport.model_validate(data)
    except ValidationError as exc:
        raise BadRunDir(f"{path}: field {invalid_because(exc)}") from None
    if not report.case_id:
        raise BadRunDir(f"{path}: field input.case_id is missing")
    return report


class RunDir:
    """A finished output directory. Raises BadRunDir at construction when it is not one."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise BadRunDir(f"{self.path}: not a directory")
        try:
            summary = read_summary(self.path / "summary.json")
        except FileNotFoundError:
            raise BadRunDir(f"{self.path / 'summary.json'}: no such file") from None
        except SummaryFileError as exc:
            raise BadRunDir(str(exc)) from None
        if not (self.path / "case_report").is_dir():
            raise BadRunDir(f"{self.path / 'case_report'}: no such directory (run not finished?)")
        self.summary: RunSummary = summary
        self._nodes: dict[str, dict[str, Any]] | None = None
        self._cases: dict[str, CaseRecord] | None = None

    # ------------------------------------------------------------ run level

    @property
    def nodes_run(self) -> list[str]:
        return self.summary.nodes_run

    @property
    def judge(self) -> JudgeInfo | None:
        return self.summary.judge

    @property
    def node_fingerprints(self) -> dict[str, str | None]:
        """LLM node -> the fingerprint of the judge that judged it (summary.json's
        `node_judges`; {} for a run written before per-node judges)."""
        return self.summary.node_fingerprints()

    @property
    def prompt_versions(self) -> dict[str, str] | None:
        """Prompt template version per node; None when the run did not record them. Read from
        summary.json's `prompt_versions`, or from its judge block's."""
        return self.summary.recorded_prompt_versions()

    def node_summaries(self) -> dict[str, dict[str, Any]]:
        """metrics/<node>.json by node, read once."""
        if self._nodes is None:
            nodes: dict[str, dict[str, Any]] = {}
            mdir = self.path / "metrics"
            for path in sorted(mdir.glob("*.json")) if mdir.is_dir() else []:
                data = _read_json(path)
                if not isinstance(data, dict):
                    raise BadRunDir(f"{path}: must be a JSON object")
                nodes[path.stem] = data
            self._nodes = nodes
        return self._nodes

    def metric_nodes(self) -> list[str]:
        """Nodes a policy can name: those with metrics/<node>.json, plus `eval` when it ran."""
        nodes = list(self.node_summaries())
        return (
            nodes + [EVAL_NODE] if EVAL_NODE in self.nodes_run and EVAL_NODE not in nodes else nodes
        )

    def node_summary(self, node: str) -> dict[str, Any] | None:
        """One node's summary. `eval` has no metrics file, so it is derived from the case
        reports (read only when asked), letting a policy gate the case-level verdict too."""
        nodes = self.node_summaries()
        if node not in nodes and node == EVAL_NODE and EVAL_NODE in self.nodes_run:
            nodes[EVAL_NODE] = self._eval_summary()
        return nodes.get(node)

    def _eval_summary(self) -> dict[str, Any]:
        verdicts = [
            r.metrics[(EVAL_NODE, EVAL_METRIC)]
            for r in self.cases().values()
            if (EVAL_NODE, EVAL_METRIC) in r.metrics
        ]
        gated = [v for v in verdicts if v.status in ("pass", "fail")]
        scores = [v.score for v in verdicts if v.score is not None]
        rate = sum(v.status == "pass" for v in gated) / len(gated) if gated else None
        mean = fmean(scores) if scores else None
        stats = {"n": len(verdicts), "mean": mean, "pass_rate": rate, "errors": 0}
        return {
            "node": EVAL_NODE,
            "scored": len(verdicts),
            "pass_rate": rate,
            "avg_score": mean,
            "metrics": {EVAL_METRIC: stats},
        }

    # ------------------------------------------------------------ case level

    def report_paths(self) -> list[Path]:
        return sorted((self.path / "case_report").glob("*.json"))

    def cases(self, progress: Callable[[int], None] | None = None) -> dict[str, CaseRecord]:
        """case_id -> verdicts, read once. `progress(1)` is called per case report."""
        if self._cases is None:
            cases: dict[str, CaseRecord] = {}
            for path, report in self._iter_reports():
                cid = report.case_id
                if cid in cases:
                    raise BadRunDir(f"{path}: case_id {cid!r} also in {cases[cid].path.name}")
                cases[cid] = CaseRecord(path, case_metrics(report))
                if progress:
                    progress(1)
            self._cases = cases
        return self._cases

    def _iter_reports(self) -> Iterator[tuple[Path, CaseReport]]:
        for path in self.report_paths():
            yield path, _case_report(path)

    def metric_section(self, case_id: str, node: str, metric: str) -> MetricResult | VerdictSection | None:
        """The metric's full entry in the case report (for evidence), read again from disk:
        eval's verdict for eval.overall."""
        record = self.cases()[case_id]
        report = _case_report(record.path)
        if node == EVAL_NODE:
            return report.verdict_of(EVAL_NODE)
        section = report.metrics_of(node)
        return next((m for m in section.metrics if m.name == metric), None) if section else None
