"""The `export` service: one row per case x metric of a finished run, as CSV, JSONL or Parquet.

Why a service: reading the run, flattening its case reports and writing the file is work a
notebook or script wants without the CLI; the service turns the report layer's failures into
the typed RunDirError / ExportError the CLI maps to exit 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.app.errors import ExportError, RunDirError
from nexagauge_local.report import export as report_export
from nexagauge_local.report import rundata
from nexagauge_local.report.rows import all_rows


@dataclass(frozen=True)
class Exported:
    """Where the rows went and how many there were."""

    path: Path
    rows: int


def export(out_dir: Path, fmt: str = "csv", output: Path | None = None) -> Exported:
    """Write the rows of the run in OUT_DIR to OUTPUT (default OUT_DIR/results.<fmt>)."""
    target = output or out_dir / f"results.{fmt}"
    try:
        run = rundata.load_run(out_dir)
        rows = all_rows(case.report for case in run.iter_cases())
        n = report_export.export_rows(rows, target, fmt)
    except rundata.RunDirError as exc:
        raise RunDirError(str(exc)) from None
    except report_export.ExportError as exc:
        raise ExportError(str(exc)) from None
    return Exported(target, n)
