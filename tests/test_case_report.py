"""The case-report model (nexagauge_local/case_report.py): what the runner writes is what the
readers load, byte for byte, and reports of older or hand-made runs still load.

Why a test: the case file is the tool's output format (docs/outputs.md "The output directory") and
compare reads folders written by earlier versions; a model that reorders, adds or drops a key
would silently change every case file or refuse an old run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexagauge_local.case_report import CaseReport, VerdictSection
from nexagauge_local.report.files import json_text
from tests.report_helpers import scripted_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("case_report")
    return scripted_run(tmp / "out", tmp / "cache", limit=12)


def test_every_case_file_reads_back_to_the_same_bytes(run_dir: Path) -> None:
    paths = sorted((run_dir / "case_report").glob("*.json"))
    assert paths
    for path in paths:
        text = path.read_text(encoding="utf-8")
        report = CaseReport.from_json(text)
        assert json_text(report.to_dict(), indent=None) == text
        assert report.case_id == json.loads(text)["input"]["case_id"]


def test_sections_keep_the_report_order_and_metric_nodes_are_typed(run_dir: Path) -> None:
    text = next((run_dir / "case_report").glob("*.json")).read_text(encoding="utf-8")
    raw = json.loads(text)
    report = CaseReport.from_json(text)
    assert list(report.sections) == [k for k in raw if k not in
                                     ("target_node", "input", "skipped", "input_truncated")]
    for node, section in report.metric_sections():
        assert [m.name for m in section.metrics] == [m["name"] for m in raw[node]["metrics"]]
    assert "claims" in report.sections and report.metrics_of("claims") is None  # no metrics list
    assert isinstance(report.verdict_of("eval"), VerdictSection)


def test_an_older_or_partial_report_loads() -> None:
    old = {
        "input": {"case_id": "c1", "output": "o", "legacy_field": 1},  # extra key: kept
        "grounding": {"metrics": [{"name": "faithfulness", "score": 0.5}]},  # no category
        "some_old_note": "a string at the top level is not a section",
    }
    report = CaseReport.model_validate(old)
    assert report.target_node is None and report.skipped == {} and report.case_id == "c1"
    assert list(report.sections) == ["grounding"]
    grounding = report.metrics_of("grounding")
    assert grounding is not None and grounding.metrics[0].category is None
    assert report.input.model_dump()["legacy_field"] == 1
    assert "target_node" not in report.to_dict() and "skipped" not in report.to_dict()


def test_a_damaged_metric_entry_costs_its_own_row_only() -> None:
    report = CaseReport.model_validate({"input": {"case_id": "c"}, "redteam": {"metrics": [
        {"name": "bias", "category": "output", "score": "0.5"},  # a score as text: damaged
        "not an entry",
        {"name": "toxicity", "category": "output", "score": 1.0, "result": []},
    ]}})
    section = report.metrics_of("redteam")
    assert section is not None and [m.name for m in section.metrics] == ["toxicity"]


def test_both_loaders_name_the_file_and_the_field_of_a_bad_case_report(tmp_path: Path) -> None:
    """report/ and compare/ refuse a case report whose input is not an object with one line:
    the file, the field, pydantic's reason (case_report.invalid_because)."""
    from nexagauge_local.compare.load import BadRunDir
    from nexagauge_local.compare.load import _case_report as compare_load
    from nexagauge_local.report.rundata import RunDirError
    from nexagauge_local.report.rundata import _case_report as report_load

    data = {"target_node": "eval", "input": "not an object"}
    path = tmp_path / "c1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=rf"^{path}: not a case report: input: "):
        report_load(path, data)
    with pytest.raises(BadRunDir, match=rf"^{path}: field input: "):
        compare_load(path)
