"""Reading a finished output directory back: the JSON files are the report's only source.

`report`, `export` and `agreement` all start here, so a report can be re-rendered (or a run
exported) on another machine from the directory alone. Optional files (metrics of a node that
did not run, agreement.json, compare.json) read as None; a missing summary.json means the
directory is not a run and is a user error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexagauge_local.case_report import CaseReport, ValidationError, invalid_because
from nexagauge_local.graph import METRIC_NODES
from nexagauge_local.report.run_summary import RunSummary, SummaryFileError, read_summary


class RunDirError(Exception):
    """An output directory that cannot be read; the message names the file."""


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.loads(fh.read())
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except OSError as exc:
        raise RunDirError(f"{path}: cannot read: {exc.strerror}") from None


def _optional(path: Path) -> Any:
    return read_json(path) if path.is_file() else None


@dataclass
class CaseFile:
    """One case report and the file it came from (the drill-down links to it)."""

    filename: str
    report: CaseReport


@dataclass
class RunData:
    out_dir: Path
    summary: RunSummary
    node_metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: dict[str, Any] | None = None
    compare: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # a summary handed over as the parsed JSON object (a caller that read the file itself)
        if isinstance(self.summary, Mapping):
            self.summary = RunSummary.model_validate(self.summary)

    def metrics_of(self, node: str) -> dict[str, Any] | None:
        """metrics/<node>.json, whether or not `node` is a metric node of the pipeline's graph
        (a report panel's node may belong to another graph, e.g. a test's)."""
        if node in self.node_metrics:
            return self.node_metrics[node]
        data = _optional(self.out_dir / "metrics" / f"{node}.json")
        return data if isinstance(data, dict) else None

    def case_paths(self) -> list[Path]:
        folder = self.out_dir / "case_report"
        return sorted(folder.glob("*.json")) if folder.is_dir() else []

    def _scan(self) -> Iterator[os.DirEntry[str]]:
        folder = self.out_dir / "case_report"
        if not folder.is_dir():
            return
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(".json") and entry.is_file():
                    yield entry

    def count_cases(self) -> int:
        """How many case reports there are, without holding their names."""
        return sum(1 for _ in self._scan())

    def iter_cases(self, ordered: bool = True) -> Iterator[CaseFile]:
        """Case reports one at a time (a 100k-case run need not sit in memory for export).

        `ordered=False` streams in directory order and holds no list of names at all: the
        report uses it, since everything it keeps is chosen by a total order of its own.
        """
        # (name, path) strings when streaming: a Path per file would intern every name
        pairs: Iterable[tuple[str, str | Path]] = (
            ((p.name, p) for p in self.case_paths())
            if ordered
            else ((e.name, e.path) for e in self._scan())
        )
        for name, path in pairs:
            data = read_json(path)
            if isinstance(data, dict):
                yield CaseFile(name, _case_report(path, data))


def _case_report(path: str | os.PathLike[str], data: dict[str, Any]) -> CaseReport:
    try:
        return CaseReport.model_validate(data)
    except ValidationError as exc:
        raise RunDirError(f"{path}: not a case report: {invalid_because(exc)}") from None


def load_run(out_dir: Path, metric_nodes: Sequence[str] = METRIC_NODES) -> RunData:
    """`metric_nodes`: the graph's that wrote the run (the pipeline's by default), whose
    metrics/<node>.json the overview shows, in that order."""
    out_dir = Path(out_dir)
    summary_path = out_dir / "summary.json"
    if not out_dir.is_dir():
        raise RunDirError(f"{out_dir}: no such directory")
    if not summary_path.is_file():
        raise RunDirError(
            f"{summary_path}: missing; is {out_dir} the --output-dir of a finished run?"
        )
    try:
        summary = read_summary(summary_path)
    except SummaryFileError as exc:
        raise RunDirError(str(exc)) from None
    metrics: dict[str, dict[str, Any]] = {}
    for node in metric_nodes:
        data = _optional(out_dir / "metrics" / f"{node}.json")
        if isinstance(data, dict):
            metrics[node] = data
    agreement = _optional(out_dir / "agreement.json")
    compare = _optional(out_dir / "compare.json")
    return RunData(
        out_dir=out_dir,
        summary=summary,
        node_metrics=metrics,
        agreement=agreement if isinstance(agreement, dict) else None,
        compare=compare if isinstance(compare, dict) else None,
    )
