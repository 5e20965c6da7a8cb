"""agreement: judge verdicts vs human labels, on a synthetic run with known disagreements."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.agreement import binary_agreement, bundled_labels_path, load_labels
from nexagauge_local.agreement.labels import LabelError
from nexagauge_local.cli import main
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.report.files import case_filename, write_json
from tests.report_helpers import scripted_run

# Ten cases; human: c1-c4 fail (UNSAFE), c5-c10 pass. Judge: fails c1-c3 and c5.
# TP = 3 (c1-c3), FN = 1 (c4), FP = 1 (c5), TN = 5 (c6-c10).
# accuracy 8/10; precision 3/4; recall 3/4; F1 3/4;
# kappa: p_o = 0.8, p_e = 0.4 * 0.4 + 0.6 * 0.6 = 0.52 -> (0.8 - 0.52) / 0.48 = 7/12.
HUMAN_FAIL = {f"c{i}" for i in (1, 2, 3, 4)}
JUDGE_FAIL = {f"c{i}" for i in (1, 2, 3, 5)}
CASES = [f"c{i}" for i in range(1, 11)]


def _verdict(passed: bool) -> dict[str, Any]:
    return {
        "verdict": "SAFE" if passed else "UNSAFE",
        "passed": passed,
        "violations": [],
        "evidence_spans": [],
    }


def _case(case_id: str) -> dict[str, Any]:
    passed = case_id not in JUDGE_FAIL
    report: dict[str, Any] = {
        "target_node": "eval",
        "input": {
            "case_id": case_id,
            "output": f"answer {case_id}",
            "input": None,
            "context": "ctx",
            "reference": None,
        },
        "redteam": {
            "metrics": [
                {
                    "name": "bias",
                    "category": "output|generation|answer",
                    "score": 1.0 if passed else 0.0,
                    "result": [_verdict(passed)],
                    "error": None,
                },
            ],
            "cost": {},
        },
    }
    if case_id == "c10":  # a judge error: labelled, but neither agreement nor disagreement
        report["grounding"] = {
            "metrics": [
                {
                    "name": "grounding",
                    "category": "output|context",
                    "score": None,
                    "result": [],
                    "error": "truncated",
                }
            ]
        }
    else:  # grounding score 0.5 (fails) for c1, 1.0 elsewhere
        score = 0.5 if case_id == "c1" else 1.0
        claims = [
            {"claim": "x", "verdict": "supported", "passed": True, "score": 1.0},
            {
                "claim": "y",
                "verdict": "not_supported" if score < 1 else "supported",
                "passed": score == 1.0,
                "score": 0.0 if score < 1 else 1.0,
            },
        ]
        report["grounding"] = {
            "metrics": [
                {
                    "name": "grounding",
                    "category": "output|context",
                    "score": score,
                    "result": claims,
                    "error": None,
                }
            ]
        }
    return report


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    for cid in CASES:
        write_json(out / "case_report" / case_filename(cid), _case(cid))
    write_json(
        out / "summary.json",
        {"target": "eval", "input": "synthetic.jsonl", "cases": {"records": 10, "valid": 10}},
    )
    return out


def _labels(path: Path, extra: list[dict[str, Any]] | None = None) -> Path:
    lines: list[dict[str, Any]] = [
        {
            "case_id": cid,
            "metric": "redteam.bias",
            "expected_verdict": "UNSAFE" if cid in HUMAN_FAIL else "SAFE",
        }
        for cid in CASES
    ]
    # grounding as scores; c2's human score 0.4 disagrees with the judge's 1.0
    lines += [
        {"case_id": "c1", "metric": "grounding", "expected_score": 0.5},
        {"case_id": "c2", "metric": "grounding.grounding", "expected_score": 0.4},
        {"case_id": "c3", "node": "grounding", "metric": "grounding", "expected_passed": True},
        {"case_id": "c10", "metric": "grounding", "expected_verdict": "supported"},
        {"case_id": "nope", "metric": "bias", "expected_verdict": "SAFE"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines + (extra or [])) + "\n")
    return path


def test_binary_agreement_matches_the_hand_computation() -> None:
    human = [c in HUMAN_FAIL for c in CASES]
    judge = [c in JUDGE_FAIL for c in CASES]
    out = binary_agreement(human, judge)
    assert out["n"] == 10
    assert out["accuracy"] == pytest.approx(0.8)
    assert out["precision"] == pytest.approx(0.75) and out["recall"] == pytest.approx(0.75)
    assert out["f1"] == pytest.approx(0.75)
    assert out["kappa"] == pytest.approx(7 / 12, abs=1e-12)
    assert out["confusion_matrix"] == [[5, 1], [1, 3]]


def test_undefined_statistics_are_null_not_zero() -> None:
    out = binary_agreement([False, False], [False, False])  # nobody ever fails
    assert out["accuracy"] == 1.0
    assert out["precision"] is None and out["recall"] is None and out["kappa"] is None


def test_agreement_command_on_a_synthetic_run(run_dir: Path, tmp_path: Path) -> None:
    (run_dir / "report.html").write_text("stale")
    labels = _labels(tmp_path / "labels.jsonl")
    res = CliRunner().invoke(
        main, ["agreement", "--labels", str(labels), "--output-dir", str(run_dir), "-q"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((run_dir / "agreement.json").read_text())
    bias = doc["metrics"]["redteam.bias"]
    assert bias["n"] == 10 and bias["kappa"] == pytest.approx(7 / 12, abs=1e-12)
    assert bias["confusion_matrix"] == [[5, 1], [1, 3]]
    assert {d["case_id"] for d in bias["disagreements"]} == {"c4", "c5"}
    ground = doc["metrics"]["grounding.grounding"]
    # c1: human 0.5 fail / judge 0.5 fail; c2: human 0.4 fail / judge 1.0 pass; c3: pass/pass
    assert ground["n"] == 3 and ground["accuracy"] == pytest.approx(2 / 3)
    assert ground["confusion_matrix"] == [[1, 0], [1, 1]]
    assert ground["score_mae"] == pytest.approx((0.0 + 0.6) / 2)
    assert ground["judge_errors"] == 1
    reasons = {(u["case_id"], u["reason"]) for u in doc["unmatched"]}
    assert reasons == {("c10", "judge error: truncated"), ("nope", "case not in this run")}
    assert doc["labels_total"] == 15 and doc["labels_matched"] == 13
    # the report was re-rendered with the agreement section filled in
    html = (run_dir / "report.html").read_text()
    section = html[html.index('<section id="agreement">') :]
    section = section[: section.index("</section>")]
    assert "redteam.bias" in section and "0.583" in section
    assert 'href="#case-c4"' in section


def test_ambiguous_bare_metric_is_reported(run_dir: Path, tmp_path: Path) -> None:
    report = json.loads((run_dir / "case_report" / "c1.json").read_text())
    report["geval"] = {
        "metrics": [
            {
                "name": "bias",
                "category": "output",
                "score": 1.0,
                "result": [{"verdict": "PASS", "passed": True}],
                "error": None,
            }
        ]
    }
    write_json(run_dir / "case_report" / "c1.json", report)
    labels = tmp_path / "l.jsonl"
    labels.write_text(
        json.dumps({"case_id": "c1", "metric": "bias", "expected_verdict": "fail"}) + "\n"
    )
    res = CliRunner().invoke(
        main, ["agreement", "--labels", str(labels), "--output-dir", str(run_dir), "-q"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((run_dir / "agreement.json").read_text())
    assert doc["unmatched"][0]["reason"].startswith("ambiguous: bias is in nodes geval, redteam")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "record: not valid JSON"),
        ('{"case_id": "c1", "metric": "bias"}', "record: give exactly one of expected_verdict"),
        (
            '{"case_id": "c1", "metric": "bias", "expected_verdict": "SAFE", "expected_score": 1.0}',
            "got expected_verdict, expected_score",
        ),
        (
            '{"case_id": "c1", "metric": "bias", "expected_verdict": "maybe"}',
            "expected_verdict 'maybe': use one of",
        ),
        (
            '{"case_id": "c1", "metric": "bias", "expected_score": 1.5}',
            "expected_score: Input should be less than or equal to 1",
        ),
        (
            '{"case_id": "c1", "metric": "bias", "expected_passed": true, "colour": "red"}',
            "colour: unknown key",
        ),
        ('{"metric": "bias", "expected_passed": true}', "case_id: Field required"),
        (
            '{"case_id": "c1", "output": "x", "labels": [{"metric": "bias"}]}',
            "labels.0: give exactly one of expected_verdict",
        ),
        (
            '{"case_id": "c1", "metric": "redteam.bias", "expected_passed": true}',
            "c1 / redteam.bias is already labelled at",
        ),
        ("[1, 2]", "record: expected a JSON object"),
    ],
)
def test_bad_label_file_names_file_line_field_and_exits_2(
    run_dir: Path, tmp_path: Path, line: str, message: str
) -> None:
    labels = tmp_path / "bad.jsonl"
    good = json.dumps({"case_id": "c1", "metric": "redteam.bias", "expected_passed": True})
    labels.write_text(f"{good}\n\n{line}\n")
    res = CliRunner().invoke(
        main, ["agreement", "--labels", str(labels), "--output-dir", str(run_dir)]
    )
    assert res.exit_code == 2, res.output
    assert f"{labels}:3: " in res.output and message in res.output, res.output
    assert not (run_dir / "agreement.json").exists()


def test_missing_label_file_and_missing_run(run_dir: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["agreement", "--labels", str(tmp_path / "none.jsonl"), "--output-dir", str(run_dir)]
    )
    assert res.exit_code == 2 and "no such file" in res.output
    labels = _labels(tmp_path / "labels.jsonl")
    res = CliRunner().invoke(
        main, ["agreement", "--labels", str(labels), "--output-dir", str(tmp_path / "no_run")]
    )
    assert res.exit_code == 2 and "no such directory" in res.output


def test_bundled_labelled_set_is_a_dataset_and_a_label_file() -> None:
    path = bundled_labels_path()
    res = CliRunner().invoke(main, ["agreement", "--bundled-path"])
    assert res.exit_code == 0 and res.output.strip() == str(path)
    scan = Dataset(path, blocks=BLOCKS).scan()
    assert not scan.errors and scan.valid >= 40 and not scan.duplicates
    labels = load_labels(path)
    assert len({lb.case_id for lb in labels}) >= 40
    per_metric = Counter((lb.key, lb.expected_passed) for lb in labels)
    for key in ("redteam.bias", "redteam.toxicity", "grounding.grounding"):
        assert per_metric[(key, True)] >= 5 and per_metric[(key, False)] >= 5, per_metric
    assert any(lb.expected_score not in (None, 0.0, 1.0) for lb in labels)  # borderline grades
    records = [json.loads(x) for x in path.read_text().splitlines()]
    assert sum("border" in r["case_id"] for r in records) >= 10
    with pytest.raises(LabelError):  # the same loader rejects a dataset without labels
        load_labels(Path(__file__).parents[1] / "nexagauge_local" / "data" / "sample.jsonl")


def test_bundled_set_end_to_end(tmp_path: Path) -> None:
    out = scripted_run(
        tmp_path / "out", tmp_path / "cache", target="redteam", dataset=bundled_labels_path()
    )
    res = CliRunner().invoke(
        main, ["agreement", "--labels", "bundled", "--output-dir", str(out), "-q"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "agreement.json").read_text())
    assert set(doc["metrics"]) == {"redteam.bias", "redteam.toxicity"}
    assert doc["metrics"]["redteam.bias"]["n"] == 31
    # grounding did not run in a redteam-only run: those labels are listed, not counted
    assert doc["unmatched_total"] == 16
    assert all(u["metric"] == "grounding.grounding" for u in doc["unmatched"])
