"""`gate`: the policy parser's errors (FILE:LINE), rule evaluation, exit codes, JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from nexagauge_local.cli import main
from nexagauge_local.compare import RunDir
from nexagauge_local.gate import PolicyError, evaluate_policy, load_policy
from tests.test_compare import claims_metric, clean_redteam_node, redteam_metric, write_run

METRICS: dict[str, dict[str, Any]] = {
    "grounding": {
        "node": "grounding",
        "scored": 3,
        "errors": 0,
        "pass_rate": 2 / 3,
        "avg_score": 0.82,
        "median_score": 0.8,
        "metrics": {"grounding": {"n": 3, "mean": 0.82, "pass_rate": 2 / 3, "errors": 0}},
    },
    "redteam": clean_redteam_node(
        {
            "toxicity": {"n": 3, "mean": 1.0, "pass_rate": 1.0, "errors": 0},
            "bias": {"n": 3, "mean": None, "pass_rate": None, "errors": 3},
        },
        aggregate_metrics={
            "high_stakes_failure_rate": 0.0,
            "risk_score": {"mean": 0.25, "max": 0.5},
            "by_category": [{"category": "x"}],
        },
    ),
}


def _cases(ground: list[float], tox: list[bool]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {
        f"c{i}": {
            "grounding": [claims_metric("grounding", g)],
            "redteam": [redteam_metric("toxicity", t)],
        }
        for i, (g, t) in enumerate(zip(ground, tox, strict=True))
    }


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", _cases([0.9, 0.8, 0.5], [True, True, True]), metrics=METRICS)


def _policy(tmp_path: Path, text: str, name: str = "gate.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _gate(*args: str) -> Result:
    return CliRunner().invoke(main, ["gate", *args, "-q"])


def _gate_junit(run: Path, policy: Path, junit: Path) -> tuple[Result, Path]:
    """`gate RUN --policy POLICY --junit JUNIT`: the result, and where the JUnit XML goes."""
    return _gate(str(run), "--policy", str(policy), "--junit", str(junit)), junit


# ---------------------------------------------------------------- evaluation and outputs


def test_all_rules_pass_exit_0_with_json_and_junit(run: Path, tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        """rules = [
  "grounding.mean >= 0.8",
  "grounding.grounding.pass_rate > 0.6",
  "redteam.toxicity.pass_rate >= 0.98",
  "redteam.aggregate.high_stakes_failure_rate <= 0.0",
  "redteam.aggregate.risk_score.max < 0.6",
]
""",
    )
    junit, out = tmp_path / "gate.xml", tmp_path / "gate.json"
    res = _gate(str(run), "--policy", str(policy), "--junit", str(junit), "--json", str(out))
    assert res.exit_code == 0, res.output
    assert "PASSED" in res.output
    report = json.loads(out.read_text())
    assert report["passed"] is True
    assert [r["status"] for r in report["results"]] == ["PASS"] * 5
    assert [r["line"] for r in report["results"]] == [2, 3, 4, 5, 6]
    assert report["results"][0]["value"] == pytest.approx(0.82)
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == "5" and suite.get("failures") == "0"
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert names[0] == "grounding.mean >= 0.8"
    assert not list(suite.iter("failure"))


def test_failing_rule_exit_1_and_junit_failure(run: Path, tmp_path: Path) -> None:
    text = 'rules = ["grounding.mean >= 0.9", "redteam.toxicity.mean >= 1"]\n'
    junit = tmp_path / "out" / "gate.xml"
    res, _ = _gate_junit(run, _policy(tmp_path, text), junit)
    assert res.exit_code == 1, res.output
    assert "FAIL" in res.output and "0.82" in res.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    failure = cases["grounding.mean >= 0.9"].find("failure")
    assert failure is not None and "0.82 is not at least 0.9" in (failure.get("message") or "")
    assert cases["redteam.toxicity.mean >= 1"].find("failure") is None
    assert cases["grounding.mean >= 0.9"].get("line") == "1"


def test_null_value_fails(run: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'rules = ["redteam.bias.pass_rate >= 0.9"]\n')
    out = tmp_path / "g.json"
    res = _gate(str(run), "--policy", str(policy), "--json", str(out))
    assert res.exit_code == 1
    assert json.loads(out.read_text())["results"][0]["detail"] == "no value (null in the run)"


def test_optional_absent_is_skipped(run: Path, tmp_path: Path) -> None:
    text = """rules = ["grounding.mean >= 0.5"]
optional = [
  "geval.answers_question.mean >= 0.7",
  "redteam.toxicity.pass_rate >= 0.5",
]
"""
    res, junit = _gate_junit(run, _policy(tmp_path, text), tmp_path / "g.xml")
    assert res.exit_code == 0, res.output
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("skipped") == "1"
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert cases["geval.answers_question.mean >= 0.7"].find("skipped") is not None
    assert cases["redteam.toxicity.pass_rate >= 0.5"].find("skipped") is None  # present: run


def test_eval_pass_rate_from_case_reports(tmp_path: Path) -> None:
    cases = {
        "c1": {"redteam": [redteam_metric("toxicity", True)]},
        "c2": {"redteam": [redteam_metric("toxicity", False)]},
    }
    run = write_run(tmp_path / "run", cases)
    for cid, passed in (("c1", True), ("c2", False)):
        path = run / "case_report" / f"{cid}.json"
        report = json.loads(path.read_text())
        report["eval"] = {"passed": passed, "score": 1.0 if passed else 0.0}
        path.write_text(json.dumps(report))
    summary = json.loads((run / "summary.json").read_text())
    summary["nodes_run"].append("eval")
    (run / "summary.json").write_text(json.dumps(summary))
    policy = _policy(tmp_path, 'rules = ["eval.pass_rate >= 0.5", "eval.mean <= 0.5"]\n')
    out = tmp_path / "g.json"
    res = _gate(str(run), "--policy", str(policy), "--json", str(out))
    assert res.exit_code == 0, res.output
    assert [r["value"] for r in json.loads(out.read_text())["results"]] == [0.5, 0.5]


# ---------------------------------------------------------------- baseline regression


@pytest.mark.parametrize(("limit", "code"), [(0.2, 0), (0.05, 1)])
def test_max_regression_against_baseline(tmp_path: Path, limit: float, code: int) -> None:
    base = write_run(tmp_path / "base", _cases([0.9, 0.8, 0.7], [True, True, True]))
    new = write_run(tmp_path / "new", _cases([0.8, 0.7, 0.6], [True, True, True]))
    policy = _policy(tmp_path, f"[compare]\nmax_regression = {limit}\n")
    out = tmp_path / "g.json"
    res = _gate(str(new), "--policy", str(policy), "--baseline", str(base), "--json", str(out))
    assert res.exit_code == code, res.output
    result = json.loads(out.read_text())["results"][0]
    assert result["metric"] == "compare.max_regression" and result["line"] == 2
    assert result["value"] == pytest.approx(0.1)  # every grounding score dropped by 0.1
    assert "grounding.grounding mean" in result["detail"]


def test_max_regression_counts_pass_rate_drops(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", _cases([0.9] * 4, [True, True, True, True]))
    new = write_run(tmp_path / "new", _cases([0.9] * 4, [True, True, True, False]))
    policy = _policy(tmp_path, "compare.max_regression = 0.2\n")  # TOML dotted-key form
    out = tmp_path / "g.json"
    res = _gate(str(new), "--policy", str(policy), "--baseline", str(base), "--json", str(out))
    assert res.exit_code == 1, res.output
    result = json.loads(out.read_text())["results"][0]
    assert result["value"] == pytest.approx(0.25) and result["line"] == 1


def test_compare_rule_without_baseline_is_exit_2(run: Path, tmp_path: Path) -> None:
    policy = _policy(
        tmp_path, 'rules = ["grounding.mean >= 0.5"]\n\n[compare]\nmax_regression = 0.02\n'
    )
    res = _gate(str(run), "--policy", str(policy))
    assert res.exit_code == 2
    assert f"{policy}:4: compare.max_regression needs --baseline" in res.output


# ---------------------------------------------------------------- exit 2: policy and run dir


def test_missing_metric_is_exit_2_with_line_and_no_files(run: Path, tmp_path: Path) -> None:
    text = """# gate
rules = [
  "grounding.mean >= 0.5",

  "grounding.faithfulness.mean >= 0.5",
]
"""
    policy = _policy(tmp_path, text)
    res, junit = _gate_junit(run, policy, tmp_path / "g.xml")
    assert res.exit_code == 2
    assert f"{policy}:5:" in res.output and "grounding.faithfulness.mean" in res.output
    assert "optional" in res.output
    assert not junit.exists()
    res = _gate(str(run), "--policy", str(_policy(tmp_path, 'rules = ["geval.mean >= 0"]\n')))
    assert res.exit_code == 2 and "no metrics for node 'geval'" in res.output


def test_non_numeric_path_is_exit_2(run: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'rules = ["redteam.aggregate.by_category >= 1"]\n')
    res = _gate(str(run), "--policy", str(policy))
    assert res.exit_code == 2 and "is a table" in res.output and f"{policy}:1:" in res.output


def test_bad_run_dir_is_exit_2(tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'rules = ["grounding.mean >= 0.5"]\n')
    res = _gate(str(tmp_path / "missing"), "--policy", str(policy))
    assert res.exit_code == 2 and "not a directory" in res.output
    res = _gate(str(tmp_path), "--policy", str(tmp_path / "nope.toml"))
    assert res.exit_code == 2 and "cannot read policy" in res.output


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            'rules = [\n  "grounding.mean >= 0.8",\n  "grounding.mean => 0.8",\n]\n',
            3,
            "bad rule 'grounding.mean => 0.8'",
        ),
        ('rules = ["grounding.mean >= 0.8", "mean >= 1"]\n', 1, "bad rule 'mean >= 1'"),
        (
            'rules = [\n  "grounding.mean >= high",\n]\n',
            2,
            "expected `NODE[.METRIC].STAT OP NUMBER`",
        ),
        ('rules = [\n  "a.b >= 1"\n  "c.d >= 2",\n]\n', 3, "not valid TOML"),
        ('rules = ["a.b >= 1"]\nthreshold = 3\n', 2, "unknown key 'threshold'"),
        ('rules = "a.b >= 1"\n', 1, "rules must be a list"),
        ("\nrules = [1]\n", 2, "every rule must be a string"),
        (
            'rules = ["a.b >= 1"]\n\n[compare]\nmax_regresion = 0.1\n',
            4,
            "unknown key compare.max_regresion",
        ),
        ('rules = ["a.b >= 1"]\n[compare]\nmax_regression = -1\n', 3, "must be a number >= 0"),
        ('rules = ["a.b >= 1"]\n[compare]\nmax_regression = "x"\n', 3, "must be a number >= 0"),
        ('rules = [\n  "a.b >= 1",\n  "a.b >= 2",\n]\n', 3, "a.b >= is also set at line 2"),
        ("# nothing\n", None, "the policy has no rules"),
    ],
)
def test_policy_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int | None, message: str
) -> None:
    path = _policy(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert info.value.line == line
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}:{line}: " if line else f"{path}: ")


def test_policy_error_through_cli_is_exit_2(run: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, 'rules = [\n  "grounding.mean >= 0.8",\n  "oops",\n]\n')
    res = _gate(str(run), "--policy", str(policy))
    assert res.exit_code == 2 and f"{policy}:3: bad rule 'oops'" in res.output


def test_rule_lines_follow_duplicates_and_shared_lines(tmp_path: Path) -> None:
    text = """# "a.b >= 1" in a comment above the rules is not the rule
rules = ["a.b >= 1", "a.b <= 2",
  "c.d >= 1",
]
optional = [
  "a.b > 0",
  "x.y >= 1",
]
"""
    policy = load_policy(_policy(tmp_path, text))
    assert [(r.text, r.line, r.optional) for r in policy.rules] == [
        ("a.b >= 1", 2, False),
        ("a.b <= 2", 2, False),
        ("c.d >= 1", 3, False),
        ("a.b > 0", 6, True),
        ("x.y >= 1", 7, True),
    ]
    assert policy.rules[0].holds(1.0) and not policy.rules[2].holds(0.99)


def test_example_policy_in_docs_parses() -> None:
    path = Path(__file__).resolve().parents[1] / "docs" / "gate.example.toml"
    policy = load_policy(path)
    assert policy.needs_baseline
    assert any(r.path == "redteam.aggregate.high_stakes_failure_rate" for r in policy.rules)
    assert all(r.line is not None for r in policy.rules)


def test_every_policy_error_in_one_pass(tmp_path: Path) -> None:
    """Several bad rules are all reported, each with its FILE:LINE."""
    path = _policy(
        tmp_path,
        'rules = [\n  "grounding.mean >= 0.8",\n  "oops",\n  "a.b >> 1",\n]\nthreshold = 3\n'
        "[compare]\nmax_regression = -1\n",
    )
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert [e.line for e in info.value.errors] == [3, 4, 6, 8]
    assert info.value.line == 3 and "bad rule 'oops'" in info.value.message
    lines = str(info.value).splitlines()
    assert [ln.split(": ")[0] for ln in lines] == [f"{path}:{n}" for n in (3, 4, 6, 8)]


def test_every_unanswerable_rule_in_one_pass(run: Path, tmp_path: Path) -> None:
    path = _policy(tmp_path, 'rules = [\n  "nope.mean >= 1",\n  "grounding.nope >= 1",\n]\n')
    policy = load_policy(path)
    with pytest.raises(PolicyError) as info:
        evaluate_policy(policy, RunDir(run))
    assert [e.line for e in info.value.errors] == [2, 3]
