"""`compare` on two small synthetic output directories with known flips and known deltas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.compare import BadRunDir, RunDir, compare_runs
from nexagauge_local.compare.bootstrap import paired_delta_ci
from nexagauge_local.compare.diff import judge_check
from nexagauge_local.compare.load import metric_status
from nexagauge_local.report.files import case_filename, write_json
from nexagauge_local.report.view_extra import COMPARE_COLUMNS
from nexagauge_local.results import MetricResult

SHARED = [f"c{i:02d}" for i in range(20)]

# ---------------------------------------------------------------- synthetic run builders


def redteam_metric(name: str, passed: bool | None, why: str = "") -> dict[str, Any]:
    """A redteam metric entry as the runner writes it; passed=None is a judge error."""
    if passed is None:
        return {
            "name": name,
            "category": "output|generation|answer",
            "score": None,
            "result": [],
            "error": "truncated",
        }
    return {
        "name": name,
        "category": "output|generation|answer",
        "score": 1.0 if passed else 0.0,
        "result": [
            {
                "verdict": "SAFE" if passed else "UNSAFE",
                "passed": passed,
                "reasoning": why or ("fine" if passed else "insults the user"),
                "violations": [] if passed else ["Insults a person."],
                "evidence_spans": [] if passed else ["you idiot"],
            }
        ],
        "error": None,
    }


def claims_metric(name: str, score: float) -> dict[str, Any]:
    """A grounding/relevance entry: per-claim rows; the metric verdict is score >= 0.6."""
    rows = [
        {"claim": "claim one", "verdict": "supported", "passed": True, "score": 1.0},
        {"claim": "claim two", "verdict": "not_supported", "passed": False, "score": 0.0},
    ]
    return {
        "name": name,
        "category": "output|context",
        "score": score,
        "result": rows,
        "error": None,
    }


def lexical_metric(name: str, score: float) -> dict[str, Any]:
    return {
        "name": name,
        "category": "reference|lexical",
        "score": score,
        "result": [{"precision": score, "recall": score, "fmeasure": score}],
        "error": None,
    }


def clean_redteam_node(metrics: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """metrics/redteam.json of three cases that all passed: `metrics` per rubric, then `extra`."""
    node = {"node": "redteam", "scored": 3, "errors": 0, "pass_rate": 1.0, "avg_score": 1.0}
    return {**node, "metrics": metrics, **extra}


def write_run(
    path: Path,
    cases: dict[str, dict[str, list[dict[str, Any]]]],
    *,
    fingerprint: str | None = "judge-x@1",
    prompt_versions: dict[str, str] | None = None,
    metrics: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """An output directory: summary.json, case_report/<case>.json, metrics/<node>.json."""
    nodes = list(dict.fromkeys(n for sections in cases.values() for n in sections))
    summary: dict[str, Any] = {
        "tool": "nexagauge-local",
        "target": "eval",
        "nodes_run": ["scan", *nodes],
        "judge": None
        if fingerprint is None
        else {
            "model": fingerprint.split("@")[0],
            "fingerprint": fingerprint,
            "backend": "hf",
            "demo": False,
        },
    }
    if prompt_versions is not None:
        summary["prompt_versions"] = prompt_versions
    write_json(path / "summary.json", summary)
    for cid, sections in cases.items():
        report: dict[str, Any] = {"target_node": "eval", "input": {"case_id": cid, "output": "o"}}
        for node, entries in sections.items():
            report[node] = {"metrics": entries, "cost": {"cost": 0.0}}
        write_json(path / "case_report" / case_filename(cid), report)
    for node, summ in (metrics or {}).items():
        write_json(path / "metrics" / f"{node}.json", summ)
    return path


# Redteam toxicity: A fails c03, c07; B fails c01, c02, c07, errors on c05, passes c03.
TOX_A = {cid: cid not in ("c03", "c07") for cid in SHARED}
TOX_B: dict[str, bool | None] = {cid: cid not in ("c01", "c02", "c07") for cid in SHARED}
TOX_B["c05"] = None
# Grounding: B = A + 0.1 + e with e = +0.05 / -0.05 alternating, so the mean shift is 0.1.
GROUND_A = {cid: 0.505 + 0.02 * i for i, cid in enumerate(SHARED)}
GROUND_B = {cid: GROUND_A[cid] + (0.15 if i % 2 == 0 else 0.05) for i, cid in enumerate(SHARED)}


def _shared_cases(
    ground: dict[str, float], tox: dict[str, bool | None], rouge1: float
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The SHARED cases of one run: grounding and toxicity per case, one rouge1 for all."""
    return {
        cid: {
            "grounding": [claims_metric("grounding", ground[cid])],
            "redteam": [redteam_metric("toxicity", tox[cid])],
            "refmatch": [lexical_metric("rouge1", rouge1)],
        }
        for cid in SHARED
    }


@pytest.fixture()
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a_cases = _shared_cases(GROUND_A, TOX_A, 0.5)
    b_cases = _shared_cases(GROUND_B, TOX_B, 0.4)
    a_cases["only-a"] = {"redteam": [redteam_metric("toxicity", True)]}
    b_cases["only/b"] = {"redteam": [redteam_metric("toxicity", False)]}  # id needs a safe name
    pv = {"grounding": "grounding/v1", "redteam": "redteam/v1"}
    return (
        write_run(tmp_path / "a", a_cases, prompt_versions=pv),
        write_run(tmp_path / "b", b_cases, prompt_versions=pv),
    )


def _rows(cmp: Any) -> dict[tuple[str, str], Any]:
    return {(r.node, r.metric): r for r in cmp.metrics}


# ---------------------------------------------------------------- tests


def test_exact_flips_and_only_in(runs: tuple[Path, Path]) -> None:
    cmp = compare_runs(RunDir(runs[0]), RunDir(runs[1]), seed=1, n_resamples=500)
    rows = _rows(cmp)
    tox = rows[("redteam", "toxicity")]
    assert [f.case_id for f in tox.flipped_to_fail] == ["c01", "c02", "c05"]
    assert [f.case_id for f in tox.flipped_to_pass] == ["c03"]
    assert tox.n_matched == 19  # c05 errored in B: no pair
    assert tox.errors_b == 1 and tox.errors_a == 0
    assert tox.pass_rate_a == pytest.approx(18 / 20)
    assert tox.pass_rate_b == pytest.approx(16 / 19)  # the error has no verdict
    assert tox.pass_rate_change == pytest.approx(16 / 19 - 18 / 20)

    c01 = tox.flipped_to_fail[0]
    assert (c01.a.status, c01.b.status) == ("pass", "fail")
    assert (c01.a.score, c01.b.score) == (1.0, 0.0)
    assert c01.a.evidence == [
        {
            "verdict": "SAFE",
            "passed": True,
            "reasoning": "fine",
            "violations": [],
            "evidence_spans": [],
        }
    ]
    assert c01.b.evidence[0]["violations"] == ["Insults a person."]
    assert c01.b.evidence[0]["evidence_spans"] == ["you idiot"]
    c05 = tox.flipped_to_fail[2]
    assert (c05.b.status, c05.b.error) == ("error", "truncated")

    ground = rows[("grounding", "grounding")]
    assert [f.case_id for f in ground.flipped_to_pass] == ["c00", "c02", "c03", "c04"]
    assert ground.flipped_to_fail == []
    assert ground.flipped_to_pass[0].b.evidence[1] == {
        "claim": "claim two",
        "verdict": "not_supported",
        "passed": False,
        "score": 0.0,
    }

    rouge = rows[("refmatch", "rouge1")]  # informational: deltas, never flips or pass rates
    assert rouge.delta == pytest.approx(-0.1)
    assert rouge.flipped_to_fail == [] and rouge.pass_rate_a is None

    assert cmp.only_in_a == ["only-a"] and cmp.only_in_b == ["only/b"]
    assert cmp.n_matched_cases == 20
    assert cmp.max_regression.value == pytest.approx(0.1)
    assert (cmp.max_regression.node, cmp.max_regression.kind) == ("refmatch", "mean")
    assert [(r.node, r.metric) for r in cmp.metrics] == [
        ("grounding", "grounding"),
        ("redteam", "toxicity"),
        ("refmatch", "rouge1"),
    ]


def test_delta_and_ci_contain_the_true_shift(runs: tuple[Path, Path]) -> None:
    cmp = compare_runs(RunDir(runs[0]), RunDir(runs[1]), seed=3, n_resamples=2000)
    ground = _rows(cmp)[("grounding", "grounding")]
    assert ground.n_matched == 20
    assert ground.mean_a == pytest.approx(np.mean(list(GROUND_A.values())))
    assert ground.delta == pytest.approx(0.1)
    assert ground.ci_low < 0.1 < ground.ci_high
    assert ground.ci_low > 0.0  # every case moved up: the interval excludes "no change"
    assert ground.ci_high < 0.15 + 1e-9 and ground.ci_low > 0.05 - 1e-9


def test_seeded_reproducibility(runs: tuple[Path, Path]) -> None:
    def dump(seed: int) -> list[dict[str, Any]]:
        cmp = compare_runs(RunDir(runs[0]), RunDir(runs[1]), seed=seed, n_resamples=500)
        return [r.model_dump() for r in cmp.metrics]

    first, again, other = dump(11), dump(11), dump(12)
    assert first == again
    ci = [(r["ci_low"], r["ci_high"]) for r in first if r["metric"] == "grounding"]
    ci_other = [(r["ci_low"], r["ci_high"]) for r in other if r["metric"] == "grounding"]
    assert ci != ci_other


def test_bootstrap_coverage_is_near_nominal() -> None:
    """Over many simulated paired samples with a known shift, the 95% interval holds the
    shift about 95% of the time (a mis-paired or mis-centred bootstrap fails this)."""
    rng = np.random.default_rng(2024)
    shift, hits, sims = 0.05, 0, 150
    for k in range(sims):
        a = rng.random(40)
        b = np.clip(a + shift + rng.normal(0, 0.1, 40), -5, 5)
        ci = paired_delta_ci(a, b, seed=k, n_resamples=1000)
        assert ci is not None
        hits += ci.low <= shift <= ci.high
    assert 0.88 <= hits / sims <= 0.995


def test_bootstrap_degenerate_inputs() -> None:
    assert paired_delta_ci([], [], seed=0) is None
    one = paired_delta_ci([0.2], [0.5], seed=0)
    assert one is not None and (one.low, one.delta, one.high) == pytest.approx((0.3, 0.3, 0.3))
    same = paired_delta_ci([0.1, 0.4, 0.9], [0.3, 0.6, 1.1], seed=0)
    assert same is not None and same.low == same.high == pytest.approx(0.2)
    with pytest.raises(ValueError):
        paired_delta_ci([1.0], [1.0, 2.0], seed=0)


def test_metric_status_reads_verdicts() -> None:
    def status(entry: dict) -> str:
        return metric_status(MetricResult.model_validate(entry)).status

    assert status(redteam_metric("t", True)) == "pass"
    assert status(redteam_metric("t", False)) == "fail"
    assert status(redteam_metric("t", None)) == "error"
    assert status(claims_metric("g", 0.59)) == "fail"
    assert status(claims_metric("g", 0.6)) == "pass"
    assert status(lexical_metric("rouge1", 0.9)) == "info"
    partial = claims_metric("g", 0.9) | {"error": "1 of 2 chunks failed: truncated"}
    assert status(partial) == "error"


def test_judge_and_prompt_changes_are_loud(tmp_path: Path) -> None:
    cases = {"c1": {"redteam": [redteam_metric("toxicity", True)]}}
    a = write_run(
        tmp_path / "a",
        cases,
        fingerprint="judge-x@1",
        prompt_versions={"redteam": "redteam/v1", "grounding": "grounding/v1"},
    )
    b = write_run(
        tmp_path / "b",
        cases,
        fingerprint="judge-y@2",
        prompt_versions={"redteam": "redteam/v2", "grounding": "grounding/v1"},
    )
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(a), str(b), "--output-dir", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.output and "judge-y@2" in result.output
    data = json.loads((out / "compare.json").read_text())
    judge = data["judge"]
    assert judge["same_fingerprint"] is False and judge["same_prompt_versions"] is False
    assert judge["a"]["fingerprint"] == "judge-x@1"
    assert judge["b"]["prompt_versions"]["redteam"] == "redteam/v2"
    assert "redteam: redteam/v1 -> redteam/v2" in " ".join(judge["warnings"])
    assert set(data) >= {"metrics", "only_in_a", "only_in_b", "judge", "run_a", "run_b"}
    row = data["metrics"][0]
    # every column the report's compare section shows (COMPARE_COLUMNS), and the flips
    flips = {"pass_rate_change", "flipped_to_fail", "flipped_to_pass"}
    assert set(row) >= {"node", "metric", *COMPARE_COLUMNS, *flips}


def test_prompt_versions_in_judge_block_only_shared_nodes_count(tmp_path: Path) -> None:
    """Versions may sit in the judge block; a node only one run used is not a change."""
    cases = {"c1": {"redteam": [redteam_metric("toxicity", True)]}}
    runs = []
    for name, versions in (
        ("a", {"redteam": "redteam/v1", "geval": "geval/v1"}),
        ("b", {"redteam": "redteam/v1"}),
    ):
        run = write_run(tmp_path / name, cases)
        summary = json.loads((run / "summary.json").read_text())
        summary["judge"]["prompt_versions"] = versions
        (run / "summary.json").write_text(json.dumps(summary))
        runs.append(RunDir(run))
    assert judge_check(runs[0], runs[1]).same_prompt_versions is True
    summary = json.loads((runs[1].path / "summary.json").read_text())
    summary["judge"]["prompt_versions"] = {"redteam": "redteam/v2"}
    (runs[1].path / "summary.json").write_text(json.dumps(summary))
    check = judge_check(runs[0], RunDir(runs[1].path))
    assert check.same_prompt_versions is False and check.same_fingerprint is True
    assert check.warnings == ["different prompt versions: redteam: redteam/v1 -> redteam/v2"]


def test_same_judge_no_warning_and_default_output_dir(runs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(
        main, ["compare", str(runs[0]), str(runs[1]), "-q", "--resamples", "200", "--seed", "5"]
    )
    assert result.exit_code == 0, result.output
    assert "WARNING" not in result.output
    data = json.loads((runs[1] / "compare.json").read_text())
    assert data["judge"]["same_fingerprint"] is True
    assert data["judge"]["same_prompt_versions"] is True
    assert data["seed"] == 5 and data["resamples"] == 200


def test_bad_run_dirs_exit_2(runs: tuple[Path, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["compare", str(tmp_path / "nope"), str(runs[1])])
    assert missing.exit_code == 2 and "not a directory" in missing.output

    no_summary = tmp_path / "empty"
    (no_summary / "case_report").mkdir(parents=True)
    res = runner.invoke(main, ["compare", str(no_summary), str(runs[1])])
    assert res.exit_code == 2 and "summary.json: no such file" in res.output

    broken = runs[0] / "case_report" / "c04.json"
    broken.write_text('{"input": {"case_id": "c04"},\n  oops}\n')
    res = runner.invoke(main, ["compare", str(runs[0]), str(runs[1]), "-q"])
    assert res.exit_code == 2
    assert "c04.json:2: not valid JSON" in res.output

    with pytest.raises(BadRunDir, match="input.case_id is missing"):
        broken.write_text('{"input": {}}')
        RunDir(runs[0]).cases()
