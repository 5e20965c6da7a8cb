"""The compare and gate services called directly (no CLI): results, hooks, typed errors.

Why: the CLI tests (test_compare.py, test_gate.py) prove the printed behaviour; these prove
the services a script or CI job can call stand on their own: they never print or exit, report
progress through their hooks and raise RunInputError before writing anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexagauge_local.app.errors import RunInputError
from nexagauge_local.app.policy_check import gate
from nexagauge_local.app.run_comparison import CompareHooks, compare
from tests.test_compare import claims_metric, redteam_metric, write_run
from tests.test_gate import METRICS, _cases


def _run(path: Path, ground: list[float], gated: bool = False) -> Path:
    """A finished run; `gated` adds the metrics/ files the gate's rules read."""
    return write_run(path, _cases(ground, [True] * len(ground)), metrics=METRICS if gated else None)


def _recorder() -> tuple[CompareHooks, dict[str, list[object]]]:
    seen: dict[str, list[object]] = {"start": [], "read": [], "metric": []}
    hooks = CompareHooks(
        start=seen["start"].append,
        read=seen["read"].append,
        metric=lambda done, total: seen["metric"].append((done, total)),
    )
    return hooks, seen


def test_compare_writes_into_run_b_and_reports_progress(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", [0.9, 0.8, 0.7])
    b = _run(tmp_path / "b", [0.8, 0.7, 0.6])
    hooks, seen = _recorder()
    done = compare(a, b, seed=3, resamples=200, hooks=hooks)
    assert done.path == b / "compare.json"
    assert json.loads(done.path.read_text())["seed"] == 3
    assert (b / "report.html").is_file()  # a run folder: its report shows the comparison
    assert seen["start"] == [6] and sum(seen["read"]) == 6  # type: ignore[arg-type]
    n = len(done.comparison.metrics)
    assert seen["metric"][-1] == (n, n)
    row = next(r for r in done.comparison.metrics if r.node == "grounding")
    assert row.delta == pytest.approx(-0.1)


def test_compare_into_a_plain_folder_writes_no_report(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", [0.9])
    done = compare(a, a, output_dir=tmp_path / "out", resamples=100)
    assert done.path == tmp_path / "out" / "compare.json"
    assert not (tmp_path / "out" / "report.html").exists()


def test_compare_bad_runs_raise_before_writing(tmp_path: Path) -> None:
    b = _run(tmp_path / "b", [0.9])
    with pytest.raises(RunInputError, match="not a directory"):
        compare(tmp_path / "nope", b)
    broken = _run(tmp_path / "broken", [0.9, 0.8])
    next((broken / "case_report").glob("*.json")).write_text("{oops")
    with pytest.raises(RunInputError, match="not valid JSON"):
        compare(broken, b, resamples=100)
    assert not (b / "compare.json").exists()


def test_gate_passes_fails_and_writes_its_files(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", [0.9, 0.8, 0.5], gated=True)
    policy = tmp_path / "p.toml"
    policy.write_text('rules = ["grounding.mean >= 0.8"]\n')
    out, junit = tmp_path / "g.json", tmp_path / "g.xml"
    outcome = gate(run, policy, json_path=out, junit_path=junit)
    assert outcome.passed and not outcome.baseline_unread
    assert json.loads(out.read_text())["passed"] is True and junit.is_file()
    policy.write_text('rules = ["grounding.mean >= 0.9"]\n')
    assert not gate(run, policy).passed


def test_gate_reads_the_baseline_only_for_compare_rules(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", [0.9, 0.8, 0.7], gated=True)
    new = _run(tmp_path / "new", [0.8, 0.7, 0.6], gated=True)
    policy = tmp_path / "p.toml"
    policy.write_text('rules = ["grounding.mean >= 0.5"]\n')
    hooks, seen = _recorder()
    outcome = gate(new, policy, baseline=base, hooks=hooks)
    assert outcome.baseline_unread and seen["start"] == []
    policy.write_text("[compare]\nmax_regression = 0.05\n")
    outcome = gate(new, policy, baseline=base, hooks=hooks)
    assert not outcome.baseline_unread and seen["start"] == [6]
    assert not outcome.passed and outcome.report.baseline == str(base)


def test_gate_errors_are_typed_and_write_nothing(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "run",
        {"c1": {"grounding": [claims_metric("grounding", 0.9)],
                "redteam": [redteam_metric("toxicity", True)]}},
        metrics=METRICS,
    )
    policy = tmp_path / "p.toml"
    junit = tmp_path / "g.xml"
    policy.write_text('rules = [\n  "oops",\n]\n')
    with pytest.raises(RunInputError, match=r"p.toml:2: bad rule 'oops'"):
        gate(run, policy, junit_path=junit)
    policy.write_text('rules = ["geval.mean >= 0"]\n')
    with pytest.raises(RunInputError, match="no metrics for node 'geval'"):
        gate(run, policy, junit_path=junit)
    policy.write_text("[compare]\nmax_regression = 0.1\n")
    with pytest.raises(RunInputError, match="needs --baseline"):
        gate(run, policy, junit_path=junit)
    with pytest.raises(RunInputError, match="cannot read policy"):
        gate(run, tmp_path / "none.toml")
    assert not junit.exists()
