"""export: one row per case x metric; CSV, JSONL and Parquet reload into the same values."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.report.rows import COLUMNS, LIST_COLUMNS, metric_passed
from nexagauge_local.results import MetricResult
from tests.report_helpers import scripted_run

NUMERIC = {"score", "risk_score"}
INTS = {"severity", "rating", "claims", "claims_passed"}
BOOLS = {"passed", "heuristic_passed"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """redteam (lists, heuristics) and refmatch (long floats) over the bundled sample."""
    base = tmp_path_factory.mktemp("export")
    out = scripted_run(base / "out", base / "cache", target="redteam")
    scripted_run(base / "ref", base / "cache", target="refmatch")
    for path in (base / "ref" / "case_report").glob("*.json"):  # one dir, both nodes
        ref = json.loads(path.read_text())
        if "refmatch" in ref:
            red_path = out / "case_report" / path.name
            red = json.loads(red_path.read_text())
            red["refmatch"] = ref["refmatch"]
            red_path.write_text(json.dumps(red))
    return out


def _expected(run_dir: Path) -> list[tuple[str, str, str, float | None, bool | None]]:
    """(case, node, metric, score, passed) straight from the case report files."""
    out = []
    for path in sorted((run_dir / "case_report").glob("*.json")):
        report = json.loads(path.read_text())
        for node in ("redteam", "refmatch"):
            for m in (report.get(node) or {}).get("metrics", []):
                out.append(
                    (report["input"]["case_id"], node, m["name"], m["score"], metric_passed(MetricResult.model_validate(m)))
                )
    return out


def _parse_csv_cell(column: str, text: str) -> Any:
    if column in LIST_COLUMNS:
        return json.loads(text)
    if text == "":
        return None
    if column in NUMERIC:
        return float(text)
    if column in INTS:
        return int(text)
    if column in BOOLS:
        return {"True": True, "False": False}[text]
    return text


def _export(run_dir: Path, fmt: str, target: Path) -> None:
    res = CliRunner().invoke(
        main, ["export", str(run_dir), "--format", fmt, "--output", str(target)]
    )
    assert res.exit_code == 0, res.output
    assert str(target) in res.output


def test_csv_round_trips_to_the_same_numbers(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rows.csv"
    _export(run_dir, "csv", target)
    with target.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        rows = [{c: _parse_csv_cell(c, r[c]) for c in COLUMNS} for r in reader]
    got = sorted((r["case_id"], r["node"], r["metric"], r["score"], r["passed"]) for r in rows)
    assert got == sorted(_expected(run_dir))  # exact float equality, not approx
    unsafe = [r for r in rows if r["verdict"] == "UNSAFE"]
    assert unsafe and all(r["violations"] and r["passed"] is False for r in unsafe)
    assert any(r["evidence_spans"] for r in unsafe)
    red = [r for r in rows if r["node"] == "redteam"]
    assert all(r["probe_severity"] in ("low", "medium", "high", "critical") for r in red)
    assert all(isinstance(r["risk_score"], float) for r in red)
    assert all(r["passed"] is None for r in rows if r["node"] == "refmatch")  # no gate


def test_jsonl_keeps_types_and_lists(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    _export(run_dir, "jsonl", target)
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert all(tuple(r) == COLUMNS for r in rows)
    got = sorted((r["case_id"], r["node"], r["metric"], r["score"], r["passed"]) for r in rows)
    assert got == sorted(_expected(run_dir))


def test_parquet_round_trips(run_dir: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "rows.parquet"
    _export(run_dir, "parquet", target)
    table = pq.read_table(target)
    assert tuple(table.column_names) == COLUMNS
    rows = table.to_pylist()
    got = sorted((r["case_id"], r["node"], r["metric"], r["score"], r["passed"]) for r in rows)
    assert got == sorted(_expected(run_dir))
    violations = table.schema.field("violations").type
    assert violations.num_fields == 1 and str(violations.value_type) == "string"
    assert any(r["violations"] for r in rows)


def test_default_output_path(run_dir: Path) -> None:
    res = CliRunner().invoke(main, ["export", str(run_dir)])
    try:
        assert res.exit_code == 0, res.output
        assert (run_dir / "results.csv").is_file()
    finally:
        (run_dir / "results.csv").unlink(missing_ok=True)


def test_parquet_without_pyarrow_says_how_to_install(
    run_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    target = tmp_path / "rows.parquet"
    res = CliRunner().invoke(
        main, ["export", str(run_dir), "--format", "parquet", "--output", str(target)]
    )
    assert res.exit_code == 2
    assert "pip install 'nexagauge-local[export]'" in res.output
    assert not target.exists() and not list(tmp_path.glob(".*.tmp"))


def test_export_of_a_non_run_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["export", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such directory" in res.output
