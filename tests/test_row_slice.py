"""`--start N` / `--end M`: a slice of the input's records, as nexa-gauge has them.

0-based, start inclusive, end exclusive; `--limit` counts from `--start` (records
[start:end][:limit]). Messages keep naming the file's own lines, and generated case ids are the
ones a run over the whole file gives. Runs use `refmatch` (deterministic, no model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main
from nexagauge_local.dataset import Dataset, Duplicate
from nexagauge_local.graph import BLOCKS
from nexagauge_local.records import DatasetError
from nexagauge_local.settings import RunSettings

ROWS = [{"case_id": f"c{i}", "output": f"answer {i}.", "reference": f"answer {i}."}
        for i in range(6)]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def ids(path: Path, **kw: Any) -> list[str]:
    return [c.case_id for c in Dataset(path, blocks=BLOCKS, **kw).cases()]


def invoke(work: Path, *extra: str) -> Result:
    args = ["run", "refmatch", "--input", "data.jsonl", "--output-dir", str(work / "out"), "-q",
            "--cache-dir", str(work / "cache"), *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # messages then carry the bare name data.jsonl
    return tmp_path


def test_start_and_end_are_python_slice_bounds(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", ROWS)
    assert ids(path, start=2, end=4) == ["c2", "c3"]
    assert ids(path, start=4) == ["c4", "c5"]
    assert ids(path, end=2) == ["c0", "c1"]
    assert ids(path, start=5, end=100) == ["c5"]


def test_limit_counts_from_start_and_end_still_bounds(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", ROWS)
    assert ids(path, start=1, limit=2) == ["c1", "c2"]  # [1:][:2]
    assert ids(path, start=1, end=3, limit=5) == ["c1", "c2"]  # end comes first
    assert ids(path, start=1, end=5, limit=2) == ["c1", "c2"]  # limit comes first


def test_a_generated_id_in_the_slice_is_the_one_the_whole_file_gives(tmp_path: Path) -> None:
    """Same texts, different blocks: the second record's generated id carries `-2` in the full
    file, and so it does when the slice starts at it."""
    plain = {"output": "same text."}
    blocked = {"output": "same text.", "geval": {"metrics": [{"name": "m", "criteria": "c"}]}}
    path = write_jsonl(tmp_path / "data.jsonl", [plain, blocked, plain])
    full = [c.case_id for c in Dataset(path, blocks=BLOCKS).cases()]
    assert full[1].endswith("-2")
    assert ids(path, start=1) == full[1:]
    items = list(Dataset(path, blocks=BLOCKS, start=2).items())  # an exact repeat of record 0
    assert len(items) == 1 and isinstance(items[0], Duplicate)


def test_a_bad_record_in_the_slice_is_named_by_its_file_line(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [*ROWS[:3], "{oops", *ROWS[3:]])
    result = invoke(work, "--start", "2", "--end", "5")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "data.jsonl:4: invalid JSON"
    # a bad record outside the slice is never judged and never reported
    assert invoke(work, "--start", "4").exit_code == 0
    out = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    assert out["cases"]["valid"] == 3
    reports = sorted(p.stem for p in (work / "out" / "case_report").glob("*.json"))
    assert reports == ["c3", "c4", "c5"]


def test_a_skipped_record_keeps_its_line_under_on_error_skip(work: Path) -> None:
    write_jsonl(work / "data.jsonl", [*ROWS[:3], "{oops", *ROWS[3:]])
    result = invoke(work, "--start", "2", "--limit", "3", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    out = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    assert out["cases"]["valid"] == 2
    assert [s["line"] for s in out["skipped"]] == [4]


def test_bad_bounds_are_one_line_exit_2(work: Path) -> None:
    write_jsonl(work / "data.jsonl", ROWS)
    for extra, says in ((("--start", "3", "--end", "3"), "--end 3 must be greater than --start 3"),
                        (("--start", "-1"), "--start"),
                        (("--end", "0"), "--end")):
        result = invoke(work, *extra)
        assert result.exit_code == 2, extra
        assert says in result.output and "Traceback" not in result.output
    result = invoke(work, "--start", "10")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "data.jsonl: --start 10: the input has 6 record(s), none at or past it"]


def test_settings_refuse_an_empty_slice() -> None:
    with pytest.raises(ValueError, match="--end 2 must be greater than --start 5"):
        RunSettings(start=5, end=2)


def test_the_slice_reaches_estimate_and_prompts(work: Path) -> None:
    write_jsonl(work / "data.jsonl", ROWS)
    result = CliRunner().invoke(main, ["estimate", "refmatch", "--input", "data.jsonl",
                                       "--start", "1", "--end", "4", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cases"] == 3
    result = CliRunner().invoke(main, ["prompts", "redteam", "--input", "data.jsonl",
                                       "--start", "4", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["case_id"] == "c4"


def test_an_empty_file_is_still_named_empty(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", [])
    with pytest.raises(DatasetError):
        Dataset(path, blocks=BLOCKS, start=0).scan()
