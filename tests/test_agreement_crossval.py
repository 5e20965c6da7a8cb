"""The fitted threshold's F1 as it would be on labels it was not fitted on: stratified k-fold
out-of-fold F1 with a seeded bootstrap interval, and a warning on small label sets."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nexagauge_local.agreement.crossval import (
    MIN_LABELS,
    MIN_MINORITY,
    cross_validated,
    small_set_warning,
)
from nexagauge_local.agreement.labels import Label
from nexagauge_local.agreement.ranking import ranking_agreement
from nexagauge_local.agreement.scores import compute_agreement
from nexagauge_local.cli import main
from nexagauge_local.report.files import case_filename, write_json
from nexagauge_local.report.rows import MetricRow


def _noise(n: int, seed: int) -> tuple[list[bool], list[float]]:
    """Labels and scores that have nothing to do with each other."""
    rng = np.random.default_rng(seed)
    return [bool(x) for x in rng.random(n) < 0.5], [float(x) for x in rng.random(n)]


def test_separable_scores_keep_f1_1_out_of_fold() -> None:
    fail = [True] * 10 + [False] * 10
    scores = [0.05 * i for i in range(10)] + [0.8] * 10
    cv = cross_validated(fail, scores)
    assert cv.folds == 5 and cv.f1 == 1.0 and cv.f1_ci95 == [1.0, 1.0]
    assert cv.fold_thresholds == [0.8] * 5  # each fold's cut: its lowest passing score


def test_a_threshold_at_the_boundary_case_is_caught_out_of_fold() -> None:
    """In-sample the cut sits exactly at the lowest passing score (F1 1.0); the fold that
    holds that case out cuts above it and fails it, which only cross-validation shows."""
    fail = [True] * 10 + [False] * 10
    scores = [0.05 * i for i in range(10)] + [0.6 + 0.03 * i for i in range(10)]
    assert ranking_agreement(fail, scores).best_f1 == 1.0
    cv = cross_validated(fail, scores)
    assert cv.f1 == pytest.approx(20 / 21)  # TP 10, FP 1 (the 0.6 case), FN 0
    assert cv.f1_ci95 is not None and cv.f1_ci95[0] < cv.f1 < cv.f1_ci95[1] == 1.0


def test_in_sample_f1_is_optimistic_and_cross_validation_says_so() -> None:
    """On scores unrelated to the labels the best threshold still finds a good-looking F1 on
    the labels it was chosen on; held out, it does worse, averaged over many label sets."""
    in_sample, held_out = [], []
    for seed in range(40):
        fail, scores = _noise(40, seed)
        best = ranking_agreement(fail, scores).best_f1
        cv = cross_validated(fail, scores).f1
        assert best is not None and cv is not None
        in_sample.append(best)
        held_out.append(cv)
    assert np.mean(in_sample) - np.mean(held_out) > 0.03
    assert all(h <= b + 1e-12 for h, b in zip(held_out, in_sample, strict=True))


def test_seeded_and_the_interval_holds_the_estimate() -> None:
    fail, scores = _noise(80, 3)
    a, b = cross_validated(fail, scores), cross_validated(fail, scores)
    assert a == b and a.seed == 0 and a.resamples == 1000
    assert a.f1_ci95 is not None and a.f1 is not None
    assert a.f1_ci95[0] <= a.f1 <= a.f1_ci95[1] and a.f1_ci95[1] - a.f1_ci95[0] > 0.05
    assert cross_validated(fail, scores, seed=1) != a  # the seed is what makes it repeat


def test_folds_shrink_to_the_rarer_class_and_stop_below_two() -> None:
    three = cross_validated([True] * 3 + [False] * 17, [0.1, 0.2, 0.3] + [0.8] * 17)
    assert three.folds == 3 and three.f1 == 1.0
    one = cross_validated([True] + [False] * 19, [0.1] + [0.8] * 19)
    assert (one.folds, one.f1, one.f1_ci95) == (None, None, None) and one.warning


@pytest.mark.parametrize(("n", "n_fail", "warned"), [
    (MIN_LABELS - 1, 20, True), (MIN_LABELS, MIN_MINORITY, False),
    (MIN_LABELS, MIN_MINORITY - 1, True), (MIN_LABELS, MIN_LABELS - MIN_MINORITY + 1, True),
    (200, 100, False),
])
def test_small_set_warning_states_its_numbers(n: int, n_fail: int, warned: bool) -> None:
    said = small_set_warning(n, n_fail)
    assert (said is not None) == warned
    if said:
        assert said.startswith(f"{n} labels ({n_fail} fail, {n - n_fail} pass): fewer than "
                               f"{MIN_LABELS} labels or fewer than {MIN_MINORITY} of the rarer")


def _row(case_id: str, score: float) -> MetricRow:
    return MetricRow(case_id=case_id, node="redteam", metric="toxicity", category="safety",
                     score=score, passed=score >= 0.6, verdict=None, severity=None, rating=None,
                     error=None, reasoning=None)


def test_agreement_json_keeps_its_keys_and_adds_the_cross_validated_ones() -> None:
    fail, scores = _noise(30, 5)
    labels = [Label(case_id=f"c{i}", node="redteam", metric="toxicity",
                    expected_passed=not f, expected_score=None, source=f"l:{i}")
              for i, f in enumerate(fail)]
    doc = compute_agreement(labels, {f"c{i}": [_row(f"c{i}", s)] for i, s in enumerate(scores)},
                            "labels.jsonl")
    ranking = doc["metrics"]["redteam.toxicity"]["ranking"]
    assert {"n", "roc_auc", "best_threshold", "best_f1", "f1_at_threshold",
            "threshold"} <= set(ranking)
    assert ranking["cv_f1"] == cross_validated(fail, scores).f1
    assert ranking["cv_folds"] == 5 and len(ranking["cv_f1_ci95"]) == 2
    assert ranking["warning"].startswith("30 labels (")
    assert doc["warnings"] == [f"redteam.toxicity: {ranking['warning']}"]
    assert "in-sample" in doc["ranking_f1"] and "cv_f1" in doc["ranking_f1"]


def _graded_run(out: Path, scores: dict[str, float]) -> None:
    for cid, score in scores.items():
        metric = {"name": "toxicity", "category": "output", "score": score,
                  "result": [{"verdict": "SAFE" if score >= 0.6 else "UNSAFE",
                              "passed": score >= 0.6, "violations": [], "evidence_spans": []}],
                  "error": None}
        write_json(out / "case_report" / case_filename(cid), {
            "target_node": "redteam",
            "input": {"case_id": cid, "output": "x", "input": None, "context": None,
                      "reference": None},
            "redteam": {"metrics": [metric], "cost": {}},
        })
    write_json(out / "summary.json", {"target": "redteam", "input": "d.jsonl",
                                      "cases": {"records": len(scores), "valid": len(scores)}})


def test_the_command_prints_the_cross_validated_f1_and_the_warning(tmp_path: Path) -> None:
    fail, scores = _noise(24, 9)
    run = tmp_path / "run"
    _graded_run(run, {f"c{i}": s for i, s in enumerate(scores)})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"case_id": f"c{i}", "metric": "redteam.toxicity",
                                          "expected_passed": not f}) + "\n"
                              for i, f in enumerate(fail)))
    res = CliRunner().invoke(main, ["agreement", "--labels", str(labels),
                                    "--output-dir", str(run), "-q"])
    assert res.exit_code == 0, res.output
    ranking = json.loads((run / "agreement.json").read_text())["metrics"]["redteam.toxicity"][
        "ranking"]
    line = next(ln for ln in res.output.splitlines() if "threshold" in ln)
    assert f"threshold {ranking['best_threshold']:.3f} (fitted on all 24 labels)" in line
    assert f"cross-validated F1 {ranking['cv_f1']:.3f} [95% " in line and "(5-fold)" in line
    assert f"in-sample F1 {ranking['best_f1']:.3f}" in line
    n_fail = sum(fail)
    assert (f"warning: redteam.toxicity: 24 labels ({n_fail} fail, {24 - n_fail} pass): fewer "
            "than 50 labels") in res.output
    html = (run / "report.html").read_text()
    section = html[html.index('<section id="agreement">'):]
    section = section[: section.index("</section>")]
    assert "cross-validated F1" in section and f"{ranking['cv_f1']:.3f}" in section
    assert "<b>Warning:</b> redteam.toxicity: 24 labels" in section
