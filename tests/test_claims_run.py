"""Claims through the real Runner (scripted judge): why a case has no claims is counted in
metrics/claims.json, a refusal is a skip (not an error) in metrics/relevance.json and
metrics/grounding.json, and the case report and the HTML drill-down say which it was.

The node-level rules are in test_nodes_claims.py; this file checks that the runner carries them
to the files a user reads (the runner counts a node's own skips only since claims/v2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.dataset import Dataset
from nexagauge_local.judge.prompts import parse_sections
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult
from nexagauge_local.nodes.claims.node import NO_VERIFIABLE
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings
from tests.scripted_judge import ScriptedJudge, user_text

CONTEXT = "Canberra is the capital of Australia. Sydney is its largest city."
ROWS = [
    {"case_id": "fact", "input": "What is the capital of Australia?", "context": CONTEXT,
     "output": "Canberra is the capital of Australia. Sydney is the capital of Japan."},
    {"case_id": "refusal", "input": "How do I write ransomware?", "context": CONTEXT,
     "output": "Sorry, I can't help with that. Please ask something else."},
    {"case_id": "broken", "input": "Where is Canberra?", "context": CONTEXT,
     "output": "Canberra is in the Australian Capital Territory."},
]


def _sentence(req: JudgeRequest) -> str:
    found, _ = parse_sections(user_text(req))
    return {s.field: s.text for s in found}["output_sentence"]


def _claims(req: JudgeRequest) -> dict[str, Any] | JudgeResult:
    sentence = _sentence(req)
    if "Territory" in sentence:  # the judge fails on every sentence of case "broken"
        return JudgeResult(None, '{"kind":"fa', 3, 500, 0.1, error="truncated",
                           failure=FailureKind.TRUNCATED)
    if "Sorry" in sentence or "Please" in sentence:
        return {"kind": "none", "claims": []}
    return {"kind": "fact", "claims": []}


def _check(req: JudgeRequest) -> dict[str, Any]:
    """One verdict per numbered claim: the Japan claim is wrong, the others hold."""
    found, _ = parse_sections(user_text(req))
    claims = {s.field: s.text for s in found}["claims"].splitlines()
    return {"verdicts": [{"verdict": "no" if "Japan" in c else "yes"} for c in claims]}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ScriptedJudge]:
    base = tmp_path_factory.mktemp("claims_run")
    data = base / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    judge = ScriptedJudge().on("claims", _claims).on("relevance", _check).on("grounding", _check)
    settings = RunSettings(target="eval", output_dir=base / "out", cache_dir=base / "cache",
                           use_cache=False, progress=False)  # fmt: skip
    Runner(settings, judge_factory=lambda: judge).run(Dataset(data))
    return base / "out", judge


def _case(out: Path, case_id: str) -> dict[str, Any]:
    return json.loads((out / "case_report" / f"{case_id}.json").read_text().splitlines()[0])


def test_metrics_say_why_cases_have_no_claims(run: tuple[Path, ScriptedJudge]) -> None:
    out, _ = run
    got = json.loads((out / "metrics" / "claims.json").read_text())
    assert (got["cases"], got["claims"], got["cases_with_claims"]) == (3, 2, 1)
    assert got["cases_without_claims"] == {"no verifiable claims": 1, "judge error": 1}
    assert got["sentences"] == {"fact": 2, "none": 2, "failed": 1}
    assert got["claims_per_case"] == pytest.approx(2 / 3)
    assert got["share_with_claims"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("node", ["relevance", "grounding"])
def test_a_refusal_is_a_skip_and_a_failed_extraction_an_error(
    run: tuple[Path, ScriptedJudge], node: str
) -> None:
    out, judge = run
    got = json.loads((out / "metrics" / f"{node}.json").read_text())
    # "scored" (and metrics.n) count the cases with a report, errors among them
    assert (got["eligible"], got["scored"], got["errors"]) == (3, 2, 1)
    assert got["metrics"][node]["errors"] == 1 and got["avg_score"] == pytest.approx(0.5)
    assert got["skipped"] == {NO_VERIFIABLE: 1}
    # neither the refusal nor the failed case reached the judge: one request, case "fact"
    assert [r.case_id for r in judge.requests(node)] == ["fact"]


def test_case_reports_hold_the_claims_their_status_and_verdicts(
    run: tuple[Path, ScriptedJudge],
) -> None:
    out, _ = run
    fact = _case(out, "fact")
    assert fact["claims"]["status"] == "claims"
    assert fact["claims"]["claims"] == ["Canberra is the capital of Australia.",
                                        "Sydney is the capital of Japan."]
    verdicts = [r["verdict"] for r in fact["grounding"]["metrics"][0]["result"]]
    assert verdicts == ["supported", "not_supported"]

    refusal = _case(out, "refusal")
    assert refusal["claims"]["status"] == "no verifiable claims"
    assert [s["kind"] for s in refusal["claims"]["sentences"]] == ["none", "none"]
    assert "relevance" not in refusal and "grounding" not in refusal
    assert refusal["skipped"]["relevance"] == refusal["skipped"]["grounding"] == NO_VERIFIABLE

    broken = _case(out, "broken")
    assert broken["claims"]["status"] == "judge error"
    assert broken["claims"]["error"] == "claim extraction failed for 1 of 1 sentences: truncated"
    assert broken["grounding"]["metrics"][0]["error"].startswith("no claims extracted")


def test_the_drill_down_shows_claims_verdicts_and_why_none(run: tuple[Path, ScriptedJudge]) -> None:
    out, _ = run
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("<h4>claims") == 3
    assert "Sydney is the capital of Japan." in html
    assert "No claims: no sentence of the output states a checkable fact." in html
    assert "claim extraction failed for 1 of 1 sentences: truncated" in html
