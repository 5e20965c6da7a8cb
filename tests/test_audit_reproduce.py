from __future__ import annotations

import json
import shutil
from pathlib import Path

from nexagauge_local.audit import compare_runs, read_manifest, rerun_plan
from nexagauge_local.audit.reproduce import case_facts
from tests.test_audit_helpers import case_report, make_output, make_run


def _pair(tmp_path):
    a = make_output(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    return a, b


def _edit(folder, case_id, fn):
    p = folder / "case_report" / f"{case_id}.json"
    data = json.loads(p.read_text())
    fn(data)
    p.write_text(json.dumps(data))


def test_identical_folders_reproduce(tmp_path):
    a, b = _pair(tmp_path)
    rep = compare_runs(a, b)
    assert rep.reproduced and rep.cases_compared == 3
    assert rep.lines()[-1].startswith("REPRODUCED")


def test_costs_and_timings_are_not_compared(tmp_path):
    a, b = _pair(tmp_path)

    def fn(d):
        d["grounding"]["cost"]["gpu_seconds"] = 99.0
        d["grounding"]["metrics"][0]["result"][0]["reasoning"] = "different words"

    _edit(b, "c1", fn)
    (b / "summary.json").write_text("{}")
    assert compare_runs(a, b).reproduced


def test_changed_score_is_flagged(tmp_path):
    a, b = _pair(tmp_path)
    _edit(b, "c1", lambda d: d["grounding"]["metrics"][0].update(score=0.9))
    rep = compare_runs(a, b)
    assert not rep.reproduced
    [d] = rep.differences
    assert (d.case_id, d.field, d.original, d.rerun) == (
        "c1",
        "grounding.faithfulness.score",
        1.0,
        0.9,
    )
    assert rep.lines()[-1].startswith("NOT REPRODUCED")
    assert compare_runs(a, b, tolerance=0.2).reproduced


def test_changed_verdict_is_flagged(tmp_path):
    a, b = _pair(tmp_path)
    _edit(b, "c2", lambda d: d["grounding"]["metrics"][0]["result"][0].update(verdict="yes"))
    _edit(b, "c2", lambda d: d["eval"].update(passed=True))
    rep = compare_runs(a, b)
    assert {(d.case_id, d.field) for d in rep.differences} == {
        ("c2", "grounding.faithfulness.result[0].verdict"),
        ("c2", "eval.passed"),
    }
    # a tolerance never excuses a verdict
    assert not compare_runs(a, b, tolerance=1.0).reproduced


def test_missing_extra_and_unreadable_cases(tmp_path):
    a, b = _pair(tmp_path)
    (b / "case_report" / "c1.json").unlink()
    (b / "case_report" / "zz.json").write_text(json.dumps(case_report("zz")))
    (b / "case_report" / "broken.json").write_text("{")
    rep = compare_runs(a, b)
    assert rep.missing_cases == ["c1"] and rep.extra_cases == ["zz"]
    assert rep.unreadable == ["b/case_report/broken.json"]
    assert not rep.reproduced


def test_case_facts_cover_errors_and_result_counts():
    r = case_report("x")
    r["grounding"]["metrics"].append({"name": "faithfulness", "score": None, "error": "truncated"})
    facts = case_facts(r)
    assert facts["grounding.faithfulness.result_count"] == 1
    assert facts["grounding.faithfulness#2.error"] == "truncated"
    assert facts["eval.score"] == 1.0


def test_rerun_plan_turns_the_cache_off(tmp_path):
    run = make_run(tmp_path)
    plan = rerun_plan(read_manifest(run["out"]), tmp_path / "new")
    assert plan.settings["no_cache"] is True
    assert plan.settings["output_dir"] == str(tmp_path / "new")
    assert plan.settings["target"] == "grounding"
    assert plan.judge_profile == "tiny" and plan.weights_sha256 and plan.input_sha256
    assert plan.input_path == str(run["input"])


def test_a_manifest_from_before_the_gpu_ids_rename_keeps_its_gpus(tmp_path: Path) -> None:
    """Manifests written before the rename to `gpu_ids` call the setting `gpus`; a reproduction
    keeps them."""
    from nexagauge_local.app.rerun_check import _settings

    old = _settings({"gpus": [1, 2], "model": "demo", "target": "redteam"}, tmp_path, None)
    assert old.gpu_ids == [1, 2] and old.target == "redteam" and old.use_cache is False
    assert _settings({"gpu_ids": [0]}, tmp_path, "hf").gpu_ids == [0]


def test_a_batch_invariant_run_is_checked_free_text_too(tmp_path: Path) -> None:
    """A batch-invariant judge's answers do not depend on what shared the engine, so its
    reproduction compares the whole answer (level "full results"); otherwise only scores and
    verdicts count, and the report says which level it checked."""
    a, b = _pair(tmp_path)
    _edit(b, "c1", lambda d: d["grounding"]["metrics"][0]["result"][0].update(
        reasoning="other words"))
    scores = compare_runs(a, b)
    assert scores.reproduced and scores.level == "scores and verdicts"
    assert "identical scores and verdicts" in scores.lines()[-1]
    full = compare_runs(a, b, full=True)
    assert not full.reproduced and full.level == "full results"
    [d] = full.differences
    assert d.field == "grounding.faithfulness.result[0].reasoning" and d.rerun == "other words"
    assert "full results" in compare_runs(a, a, full=True).lines()[-1]


def test_the_manifest_records_whether_the_judge_was_batch_invariant(tmp_path: Path) -> None:
    from nexagauge_local.audit import read_manifest as read

    run = make_run(tmp_path)
    judge = read(run["out"]).judge
    assert judge is not None and judge.batch_invariant is False
