"""Export a run as one row per case x metric: CSV, JSONL or Parquet (pandas-friendly).

Columns are `rows.COLUMNS`. CSV writes floats with repr (so they reload to the same number),
None as an empty cell and the list columns (violations, evidence_spans) as JSON text; JSONL and
Parquet keep lists as lists. Rows stream case by case, so a large run is never held in memory
(Parquet is written in row groups of BATCH rows).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from nexagauge_local.report.rows import COLUMNS, EXTRA_COLUMNS, MetricRow, csv_cell

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
BATCH = 20_000
PYARROW_HINT = "parquet export needs pyarrow: pip install 'nexagauge-local[export]'"


class ExportError(Exception):
    pass


def write_csv(rows: Iterable[MetricRow], path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        for row in rows:
            d = row.as_dict()
            writer.writerow([csv_cell(c, d[c]) for c in COLUMNS])
            n += 1
    return n


def write_jsonl(rows: Iterable[MetricRow], path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row.as_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def _arrow_schema(pa: Any) -> Any:
    """Explicit types: a column that is null in the first batch must not become type null.
    A node's own columns are typed by the kind its row_extras declares."""
    text, num, flag, whole = pa.string(), pa.float64(), pa.bool_(), pa.int64()
    kinds = {"text": text, "number": num, "flag": flag, "whole": whole}
    types = {
        "score": num,
        "passed": flag,
        "severity": whole,
        "rating": whole,
        "claims": whole,
        "claims_passed": whole,
        "violations": pa.list_(text),
        "evidence_spans": pa.list_(text),
        **{column: kinds[kind] for column, kind in EXTRA_COLUMNS.items()},
    }
    return pa.schema([(c, types.get(c, text)) for c in COLUMNS])


def _batches(rows: Iterable[MetricRow]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row.as_dict())
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def write_parquet(rows: Iterable[MetricRow], path: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError(PYARROW_HINT) from None
    schema = _arrow_schema(pa)
    n = 0
    with pq.ParquetWriter(path, schema) as writer:
        for batch in _batches(rows):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
        if n == 0:
            writer.write_table(schema.empty_table())
    return n


WRITERS: dict[str, Callable[[Iterable[MetricRow], Path], int]] = {
    "csv": write_csv,
    "jsonl": write_jsonl,
    "parquet": write_parquet,
}


def export_rows(rows: Iterable[MetricRow], path: Path, fmt: str) -> int:
    """Write `rows` to `path` in `fmt`; returns the number of rows. Atomic: a failed export
    leaves no half-written file behind."""
    if fmt not in WRITERS:
        raise ExportError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        n = WRITERS[fmt](rows, tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return n
