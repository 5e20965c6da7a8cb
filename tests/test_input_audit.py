"""The input audit's promise: the manifest hashes what was read in every format, `verify` and
`reproduce` work with each, a pipe or in-memory records that cannot be read again are named,
and `evaluate()` reads DataFrames and iterables in place with the reports of the JSONL."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.audit import read_manifest
from tests.conftest import user_env
from tests.input_data import (
    RECORDS,
    case_reports,
    compress,
    csv_bytes,
    invoke,
    jsonl_bytes,
    run_refmatch,
    write_parquet,
    write_save_to_disk,
)

pytest.importorskip("pyarrow")
REPO = Path(__file__).resolve().parents[1]


def _jsonl_zst(tmp: Path) -> Path:
    (tmp / "data.jsonl.zst").write_bytes(compress(jsonl_bytes(), "zstd"))
    return tmp / "data.jsonl.zst"


def _csv_gz(tmp: Path) -> Path:
    (tmp / "data.csv.gz").write_bytes(compress(csv_bytes(), "gzip"))
    return tmp / "data.csv.gz"


WRITERS: dict[str, Callable[[Path], Path]] = {
    "jsonl.zst": _jsonl_zst,
    "csv.gz": _csv_gz,
    "parquet": lambda tmp: write_parquet(tmp / "data.parquet"),
    "save_to_disk": lambda tmp: write_save_to_disk(tmp / "ds"),
}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_verify_and_reproduce_every_format(tmp_path: Path, kind: str) -> None:
    data = WRITERS[kind](tmp_path)
    out = tmp_path / "out"
    assert run_refmatch(data, out).exit_code == 0
    m = read_manifest(out)
    assert m.input is not None and m.input.records.count == len(RECORDS)
    assert m.input.origin == ("folder" if data.is_dir() else "file")
    assert m.input.compression == {"jsonl.zst": "zstd", "csv.gz": "gzip"}.get(kind)
    res = invoke(["verify", out, "--input", data])
    assert res.exit_code == 0, res.output
    assert "checked: outputs, input;" in res.output
    res = invoke(["reproduce", out, "--output-dir", tmp_path / "again"])
    assert res.exit_code == 0, res.output
    assert "REPRODUCED: 3 cases" in res.output


def test_verify_names_the_changed_parquet_row(tmp_path: Path) -> None:
    data = write_parquet(tmp_path / "data.parquet")
    assert run_refmatch(data, tmp_path / "out").exit_code == 0
    write_parquet(data, [RECORDS[0], RECORDS[1], {**RECORDS[2], "output": "Water is wet."}])
    res = invoke(["verify", tmp_path / "out", "--input", data])
    assert res.exit_code == 1
    assert "DIFF data.parquet: record r3 at [2]: changed" in res.output


def test_save_to_disk_folder_changed_shard(tmp_path: Path) -> None:
    folder = write_save_to_disk(tmp_path / "ds")
    assert run_refmatch(folder, tmp_path / "out").exit_code == 0
    (folder / "dataset_info.json").write_text("{}")  # metadata only: same records
    res = invoke(["verify", tmp_path / "out", "--input", folder])
    assert res.exit_code == 0, res.output
    assert "input records (same records, other bytes)" in res.output
    shutil.rmtree(folder)
    write_save_to_disk(folder, RECORDS[:2])
    res = invoke(["verify", tmp_path / "out", "--input", folder])
    assert res.exit_code == 1 and "record r3 at [2]: removed" in res.output


def test_recompressed_input_has_the_same_records(tmp_path: Path) -> None:
    gz = tmp_path / "data.jsonl.gz"
    gz.write_bytes(compress(jsonl_bytes(), "gzip"))
    assert run_refmatch(gz, tmp_path / "out").exit_code == 0
    (tmp_path / "data.jsonl").write_bytes(jsonl_bytes())
    res = invoke(["verify", tmp_path / "out", "--input", tmp_path / "data.jsonl"])
    assert res.exit_code == 0, res.output
    assert "input records (same records, other bytes)" in res.output
    res = invoke(["reproduce", tmp_path / "out", "--output-dir", tmp_path / "again",
                  "--input", tmp_path / "data.jsonl"])
    assert res.exit_code == 0 and "REPRODUCED" in res.output, res.output


def test_process_substitution_pipe_then_reproduce(tmp_path: Path) -> None:
    """docs/data-formats.md's example, in a real shell: `--input <(zcat data.jsonl.gz)` is
    /dev/fd/63, read like a file; its manifest says stream, so `reproduce` asks for the input
    and takes the compressed file, whose records are the pipe's."""
    gz = tmp_path / "data.jsonl.gz"
    gz.write_bytes(compress(jsonl_bytes(), "gzip"))
    (tmp_path / "plain.jsonl").write_bytes(jsonl_bytes())
    out = tmp_path / "out"
    script = (f'"{sys.executable}" -m nexagauge_local run refmatch --input <(gzip -dc "{gz}") '
              f'--output-dir "{out}" -q --cache-dir "{tmp_path / "cache"}"')
    proc = subprocess.run(["bash", "-c", script], check=False, cwd=REPO, env=user_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert run_refmatch(tmp_path / "plain.jsonl", tmp_path / "plain").exit_code == 0
    assert case_reports(out) == case_reports(tmp_path / "plain")
    m = read_manifest(out)
    assert m.input is not None and m.input.origin == "stream"
    assert m.input.path.startswith("/dev/fd/")
    assert m.input.sha256 == read_manifest(tmp_path / "plain").input.sha256  # the pipe's bytes
    res = invoke(["reproduce", out, "--output-dir", tmp_path / "again"])
    assert res.exit_code == 2
    assert "the run read a stream (a pipe or stdin), which cannot be read again" in res.stderr
    res = invoke(["reproduce", out, "--output-dir", tmp_path / "again", "--input", gz])
    assert res.exit_code == 0 and "REPRODUCED" in res.output, res.output


# ---------------------------------------------------------------- evaluate() in memory


@pytest.fixture(scope="module")
def jsonl_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("evaluate")
    (tmp / "data.jsonl").write_bytes(jsonl_bytes())
    assert run_refmatch(tmp / "data.jsonl", tmp / "out").exit_code == 0
    return case_reports(tmp / "out")


def _evaluate(records: Any, out: Path, **kw: Any) -> dict[str, Any]:
    from nexagauge_local import evaluate

    outcome = evaluate(records, target="refmatch", output_dir=out,
                       cache_dir=out.parent / "cache", **kw)
    assert outcome.summary["cases"]["valid"] == len(RECORDS)
    return case_reports(out)


def test_evaluate_a_pandas_dataframe(jsonl_reports: dict[str, Any], tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(RECORDS)  # a key a record lacks is NaN in its column: missing, as in JSON
    assert _evaluate(df, tmp_path / "out") == jsonl_reports
    m = read_manifest(tmp_path / "out")
    assert m.input is not None and (m.input.origin, m.input.path) == ("memory", "<DataFrame>")
    assert not list(tmp_path.glob("**/records.jsonl"))  # no temporary file was written
    # the frame saved as a file has its records: verify and reproduce take it
    df.to_json(tmp_path / "frame.json", orient="records")
    df.to_parquet(tmp_path / "frame.parquet")
    for saved in ("frame.json", "frame.parquet"):
        res = invoke(["verify", tmp_path / "out", "--input", tmp_path / saved])
        assert res.exit_code == 0 and "same records" in res.output, res.output
    res = invoke(["reproduce", tmp_path / "out", "--output-dir", tmp_path / "again"])
    assert res.exit_code == 2 and "records in memory" in res.stderr
    res = invoke(["reproduce", tmp_path / "out", "--output-dir", tmp_path / "again",
                  "--input", tmp_path / "frame.json"])
    assert res.exit_code == 0 and "REPRODUCED" in res.output, res.output


def test_evaluate_a_dataframe_with_nested_columns(jsonl_reports: dict[str, Any],
                                                  tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame([{"id": r.get("case_id"), "gold": r["reference"], "prompt": r.get("input"),
                        "ctx": r.get("context"), "response": {"text": r["output"]}}
                       for r in RECORDS])
    fields = {"case_id": "id", "reference": "gold", "context": "ctx", "output": "response.text"}
    assert _evaluate(df, tmp_path / "out", field_map=fields) == jsonl_reports


def test_evaluate_a_polars_dataframe(jsonl_reports: dict[str, Any], tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    assert _evaluate(pl.DataFrame(RECORDS), tmp_path / "out") == jsonl_reports


def test_evaluate_iterables(jsonl_reports: dict[str, Any], tmp_path: Path) -> None:
    assert _evaluate(list(RECORDS), tmp_path / "list") == jsonl_reports
    assert _evaluate((dict(r) for r in RECORDS), tmp_path / "gen") == jsonl_reports


def test_evaluate_refuses_what_is_no_records(tmp_path: Path) -> None:
    from nexagauge_local import evaluate

    with pytest.raises(TypeError, match="expected a path, a DataFrame or an iterable of dicts"):
        evaluate(42, target="refmatch", cache_dir=tmp_path / "cache")


def test_evaluate_names_a_bad_row(tmp_path: Path) -> None:
    from nexagauge_local import evaluate
    from nexagauge_local.records import RecordsError

    pd = pytest.importorskip("pandas")
    df = pd.DataFrame([RECORDS[0], {"case_id": "x", "output": 3.5}])
    with pytest.raises(RecordsError) as exc:
        evaluate(df, target="refmatch", cache_dir=tmp_path / "cache")
    assert [str(e) for e in exc.value.errors] == ["<DataFrame>[1]: output: must be text, got float"]
    outcome = evaluate(df, target="refmatch", cache_dir=tmp_path / "cache", on_error="skip")
    assert outcome.summary["skipped"][0]["index"] == 1
    assert json.dumps(outcome.summary)  # nothing non-JSON leaked into the summary
