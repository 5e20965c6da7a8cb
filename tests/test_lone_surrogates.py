"""Lone UTF-16 surrogates (valid JSON, not text) are bad records on every input format.

Before, a record whose output held "\\ud800" ran and ended in a UnicodeEncodeError traceback
while its case report was written. The CLI runs `refmatch` (no model), so this stays fast.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.lone_surrogates import lone_surrogates

GOOD = {"case_id": "good", "output": "The cat sat on the mat.", "reference": "A cat sat."}
LONE = json.loads('"cut \\ud800 here"')  # what json.loads makes of a broken escape
PAIR = json.loads('"smile \\ud83d\\ude00"')  # a well-formed pair: one code point, fine


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # messages carry bare file names
    return tmp_path


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stderr


def test_paths_name_the_field_and_pairs_pass() -> None:
    record = {"output": PAIR, "geval": {"metrics": [{"name": LONE}]}, LONE: "x"}
    found = [path for path, _ in lone_surrogates(record)]
    assert found == ["geval.metrics.0.name", LONE]
    assert "\\ud800 at character 4" in next(lone_surrogates(LONE))[1]


def test_a_lone_surrogate_is_a_bad_record_exit_2_nothing_run(work: Path) -> None:
    lines = [json.dumps(GOOD), json.dumps({"output": LONE, "reference": "r"})]
    (work / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, err = _run("run", "refmatch", "--input", "data.jsonl", "--output-dir", "out", "-q")
    assert code == 2, err
    first = err.splitlines()[0]
    assert first.startswith("data.jsonl:2: output: holds a lone UTF-16 surrogate (\\ud800"), err
    assert "Traceback" not in err and not (work / "out" / "summary.json").exists()


def test_on_error_skip_runs_the_rest_and_the_folder_verifies(work: Path) -> None:
    lines = [json.dumps(GOOD), json.dumps({"output": LONE, "reference": "r"})]
    (work / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, err = _run("run", "refmatch", "--input", "data.jsonl", "--output-dir", "out", "-q",
                     "--on-error", "skip")
    assert code == 0, err
    summary = json.loads((work / "out" / "summary.json").read_text(encoding="utf-8"))
    assert [(s["line"], s["field"]) for s in summary["skipped"]] == [(2, "output")]
    assert len(list((work / "out" / "case_report").iterdir())) == 1
    code, err = _run("verify", "out")
    assert code == 0, err


def test_every_input_format_reports_it(work: Path) -> None:
    block = {"metrics": [{"name": "m", "rubric": {"goal": LONE}}]}
    (work / "data.json").write_text(json.dumps([GOOD, dict(GOOD, case_id="b", redteam=block)]),
                                    encoding="utf-8")
    code, err = _run("run", "refmatch", "--input", "data.json", "--output-dir", "o1", "-q")
    assert code == 2 and err.startswith("data.json[1]: redteam.metrics.0.rubric.goal: holds"), err
    with open(work / "data.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["output", "reference", "context"])
        writer.writerow(["fine", "fine", '["ok", "a\\ud800"]'])  # a JSON list in a cell
    code, err = _run("run", "refmatch", "--input", "data.csv", "--output-dir", "o2", "-q")
    assert code == 2 and err.startswith("data.csv:2: context.1: holds a lone UTF-16"), err


def test_a_probe_file_for_generate_reports_it(work: Path) -> None:
    probes = [{"id": "p1", "input": "Say hi."}, {"id": "p2", "input": LONE}]
    (work / "probes.jsonl").write_text("".join(json.dumps(p) + "\n" for p in probes),
                                       encoding="utf-8")
    code, err = _run("generate", "--model", "demo", "--input", "probes.jsonl", "--output",
                     "answers.jsonl")
    assert code == 2 and err.startswith("probes.jsonl:2: input: holds a lone UTF-16"), err
    assert not (work / "answers.jsonl").exists()
