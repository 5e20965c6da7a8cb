"""The limits of the parsers behind each input format (readers/limits.py), through the CLI: a
CSV/TSV cell past csv's default 131,072 characters is read; JSON nested past MAX_NESTING is a
bad record named by file, line and field (the rest of the run goes on under --on-error skip);
what a parser cannot read past is one line naming the file, exit 2; never a traceback.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.readers import text as text_reader
from nexagauge_local.readers.limits import MAX_NESTING, TOO_DEEP

PAST_JSON = 5_000  # levels: past json's recursion, a RecursionError before our check
PAST_OURS = MAX_NESTING + 20  # parses, then refused by the stated limit


def nested(levels: int) -> str:
    return "[" * (levels - 1) + "]" * (levels - 1)  # the record's own object is one level


def good(i: int) -> dict[str, str]:
    return {"case_id": f"c{i}", "output": "the cat sat on the mat", "reference": "a cat sat"}


def run(data: Path, tmp_path: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["run", "refmatch", "--input", str(data), "--output-dir",
                                    str(tmp_path / "out"), "--cache-dir",
                                    str(tmp_path / "cache"), "-q", *extra])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def cases(tmp_path: Path) -> int:
    return json.loads((tmp_path / "out" / "summary.json").read_text())["cases"]["valid"]


@pytest.mark.parametrize("levels", [PAST_OURS, PAST_JSON])
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_jsonl_record_nested_too_deep_is_a_bad_record_and_the_rest_runs(
        tmp_path: Path, levels: int, suffix: str) -> None:
    deep = '{"case_id":"c1","output":"x","reference":"y","meta":' + nested(levels) + "}"
    body = "\n".join([json.dumps(good(0)), deep, json.dumps(good(2))]) + "\n"
    data = tmp_path / f"data{suffix}"
    data.write_bytes(gzip.compress(body.encode()) if suffix.endswith(".gz") else body.encode())
    code, said = run(data, tmp_path)
    assert code == 2
    assert said.splitlines()[0] == f"{data}:2: {TOO_DEEP}"
    code, said = run(data, tmp_path, "--on-error", "skip")
    assert code == 0, said
    assert f"{data}:2: {TOO_DEEP}" in said and cases(tmp_path) == 2


def test_a_json_array_record_nested_too_deep_is_a_bad_record(tmp_path: Path) -> None:
    deep = '{"case_id":"c1","output":"x","reference":"y","meta":' + nested(PAST_OURS) + "}"
    data = tmp_path / "data.json"
    data.write_text(f"[{json.dumps(good(0))},{deep},{json.dumps(good(2))}]")
    code, said = run(data, tmp_path, "--on-error", "skip")
    assert code == 0, said
    assert f"{data}[1]: {TOO_DEEP}" in said and cases(tmp_path) == 2


def test_a_json_array_record_past_the_json_parser_is_one_line_naming_it(tmp_path: Path) -> None:
    """json cannot step over such an element, so the array cannot be read past it: one line
    naming the record, exit 2 even under --on-error skip (a shorter run would be silent)."""
    deep = '{"case_id":"c1","output":"x","reference":"y","meta":' + nested(PAST_JSON) + "}"
    data = tmp_path / "data.json"
    data.write_text(f"[{json.dumps(good(0))},{deep},{json.dumps(good(2))}]")
    code, said = run(data, tmp_path, "--on-error", "skip")
    assert code == 2
    assert said.splitlines() == [(f"{data}: record [1] is {TOO_DEEP}, too deep for the JSON "
                                 "parser to read past; fix or remove it")]


@pytest.mark.parametrize("sep", [",", "\t"])
def test_a_csv_cell_longer_than_csvs_default_limit_is_read(tmp_path: Path, sep: str) -> None:
    long_output = "word " * 60_000  # 300,000 characters, past csv's default 131,072
    assert len(long_output) > 131_072
    data = tmp_path / ("data.csv" if sep == "," else "data.tsv")
    data.write_text(f"case_id{sep}output{sep}reference\nc0{sep}the cat{sep}a cat\n"
                    f"c1{sep}{long_output}{sep}a word\nc2{sep}x{sep}y\n")
    code, said = run(data, tmp_path)
    assert code == 0, said
    assert cases(tmp_path) == 3


def test_a_csv_cell_past_the_stated_limit_is_one_line_naming_the_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell over CSV_FIELD_LIMIT (256 Mi characters; 1,000 stands in for it here)."""
    before = csv.field_size_limit()
    monkeypatch.setattr(text_reader, "allow_long_csv_fields", lambda: csv.field_size_limit(1000))
    data = tmp_path / "data.csv"
    data.write_text(f"case_id,output,reference\nc0,the cat,a cat\nc1,\"{'w' * 2000}\",a\n")
    try:
        code, said = run(data, tmp_path, "--on-error", "skip")
    finally:
        csv.field_size_limit(before)
    assert code == 2
    assert said.splitlines() == [(f"{data}:3: not readable as CSV past this line (field larger "
                                 "than field limit (1000))")]


@pytest.mark.parametrize("levels", [PAST_OURS, PAST_JSON])
def test_json_in_a_csv_cell_nested_too_deep_is_a_bad_record_naming_the_field(
        tmp_path: Path, levels: int) -> None:
    data = tmp_path / "data.csv"
    data.write_text(f"case_id,output,reference,meta\nc0,the cat,a cat,\nc1,x,y,\"{nested(levels)}\"\n"
                    "c2,x,y,\n")
    code, said = run(data, tmp_path, "--on-error", "skip")
    assert code == 0, said
    where = f"{data}:3: " + (f"meta: {TOO_DEEP}" if levels == PAST_JSON else TOO_DEEP)
    assert where in said and cases(tmp_path) == 2


def test_a_very_long_jsonl_line_is_read(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"case_id": "c0", "output": "word " * 400_000,
                                "reference": "a word"}) + "\n")
    code, said = run(data, tmp_path)
    assert code == 0, said


def test_a_parquet_schema_nested_past_arrows_limit_is_one_line(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    deep: list = []
    for _ in range(MAX_NESTING + 20):
        deep = [deep]
    data = tmp_path / "data.parquet"
    pq.write_table(pa.table({"case_id": ["c0"], "output": ["x"], "reference": ["y"],
                             "meta": [deep]}), data)
    code, said = run(data, tmp_path, "--on-error", "skip")
    assert code == 2
    (line,) = said.splitlines()
    assert line.startswith(f"{data}: not a readable Parquet file (") and "nested" in line
