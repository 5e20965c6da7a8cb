"""The `agreement` service: the judge's verdicts in a finished run against human labels.

Why a service: scoring the labels, writing agreement.json and re-rendering the report (which
re-finalizes an audited folder's manifest) is one workflow; the CLI only prints its summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexagauge_local.agreement import LabelError, bundled_labels_path, write_agreement
from nexagauge_local.app.errors import LabelFileError, RunDirError
from nexagauge_local.app.report_rerender import Rerendered, rerender_report
from nexagauge_local.report.rundata import RunDirError as ReportRunDirError

BUNDLED = "bundled"  # --labels bundled: the labelled set shipped with the tool


@dataclass(frozen=True)
class Agreement:
    """agreement.json's content, where it was written, and the re-rendered report."""

    doc: dict[str, Any]
    path: Path
    report: Rerendered


def labels_path(labels: str) -> Path:
    """The label file `--labels` names: a path, or `bundled` for the shipped set."""
    return bundled_labels_path() if labels == BUNDLED else Path(labels)


def agreement(
    out_dir: Path, labels: str, progress: Callable[[int], None] | None = None
) -> Agreement:
    """Score LABELS against the run in OUT_DIR, write OUT_DIR/agreement.json and re-render its
    report (`progress(n)` per n case reports rendered).

    Raises LabelFileError (nothing written), RunDirError, and ReportRefused when an audited
    folder no longer matches its manifest (agreement.json is written, the report is not).
    """
    path = labels_path(labels)
    try:
        doc = write_agreement(out_dir, path)
    except LabelError as exc:
        raise LabelFileError(path, exc.problems) from None
    except ReportRunDirError as exc:
        raise RunDirError(str(exc)) from None
    report = rerender_report(out_dir, None, progress)
    return Agreement(doc, out_dir / "agreement.json", report)
