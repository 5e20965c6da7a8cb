"""Agreement over a finished output directory: labels + case reports -> agreement.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexagauge_local.agreement.labels import load_labels
from nexagauge_local.agreement.scores import compute_agreement
from nexagauge_local.report.files import write_json
from nexagauge_local.report.rows import MetricRow, metric_rows
from nexagauge_local.report.rundata import load_run


def write_agreement(out_dir: Path, labels_path: Path) -> dict[str, Any]:
    """Compute agreement for the run in `out_dir` and write `out_dir/agreement.json`.

    Raises LabelError (bad label file) or RunDirError (not a finished run).
    """
    labels = load_labels(labels_path)
    run = load_run(out_dir)
    wanted = {label.case_id for label in labels}
    rows_by_case: dict[str, list[MetricRow]] = {}
    for case in run.iter_cases():
        case_id = case.report.case_id
        if case_id in wanted:
            rows_by_case[case_id] = list(metric_rows(case.report))
    doc = compute_agreement(labels, rows_by_case, str(labels_path))
    write_json(out_dir / "agreement.json", doc)
    return doc
