"""Calibrated guard scores from decision-token logprobs, and the ranking part of agreement
(ROC AUC, best-F1 threshold, F1 at 0.6) on labelled sets whose values are worked out by hand."""

from __future__ import annotations

import math

import pytest

from nexagauge_local.agreement import compute_agreement
from nexagauge_local.agreement.labels import Label
from nexagauge_local.agreement.ranking import graded, ranking_agreement
from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.judge.formats import (
    GUARD_FORMATS,
    DecisionPoint,
    GuardRequest,
    GuardVerdict,
    decision_distribution,
    p_unsafe,
    p_unsafe_bound,
    read_answer,
    score_verdict,
    severity_score,
)
from nexagauge_local.report.rows import MetricRow

LLAMA = DecisionPoint(label="", unsafe=("unsafe",), safe=("safe",))
YES_NO = DecisionPoint(label="", unsafe=("Yes",), safe=("No",))
QWEN = DecisionPoint(label="Safety:", unsafe=("Unsafe",), safe=("Safe",),
                     middle=("Controversial",))
UNSAFE = GuardVerdict(raw="unsafe\nS1", unsafe=True, categories=("toxicity",))
SAFE = GuardVerdict(raw="safe", unsafe=False)
ln = math.log


def test_p_unsafe_is_the_softmax_of_the_two_decision_words() -> None:
    logprobs = {"unsafe": ln(0.3), "safe": ln(0.6), "\n": ln(0.1)}
    assert p_unsafe(logprobs, LLAMA) == pytest.approx(1 / 3)
    score = score_verdict(SAFE, logprobs, LLAMA)
    assert (score.score, score.method, score.note) == (pytest.approx(2 / 3), "logprob", None)


def test_spellings_of_one_word_are_summed() -> None:
    logprobs = {"Yes": ln(0.2), " Yes": ln(0.1), "\u2581No": ln(0.3), "no": ln(0.3)}
    assert p_unsafe(logprobs, YES_NO) == pytest.approx(0.3 / 0.9)


def test_a_missing_side_is_bounded_by_what_the_top_k_leaves() -> None:
    # listed mass 0.95: the absent "unsafe" has at most min(0.05, 0.05)
    logprobs = {"safe": ln(0.9), "x": ln(0.05)}
    got = score_verdict(SAFE, logprobs, LLAMA)
    assert got.method == "logprob_bounded"
    assert (got.p_unsafe, got.bound) == (None, "at_most")
    assert got.p_unsafe_bound == pytest.approx(0.05 / 0.95)
    assert p_unsafe(logprobs, LLAMA) is None
    assert p_unsafe_bound(logprobs, LLAMA) == (pytest.approx(0.05 / 0.95), "at_most")
    # only one listed token: the bound is that token's own probability left over
    assert p_unsafe_bound({"unsafe": ln(0.7)}, LLAMA) == (pytest.approx(0.7 / (0.7 + 0.3)),
                                                          "at_least")


@pytest.mark.parametrize("logprobs", [None, {}])
def test_no_logprobs_scores_the_parsed_decision_and_says_so(
    logprobs: dict[str, float] | None
) -> None:
    got = score_verdict(UNSAFE, logprobs, LLAMA)
    assert (got.score, got.method, got.p_unsafe) == (0.0, "decision", None)
    assert got.note is not None and got.note.startswith("no probability")
    assert score_verdict(SAFE, logprobs, LLAMA).score == 1.0


def test_logprobs_without_a_decision_word_are_no_probability_either() -> None:
    got = score_verdict(UNSAFE, {"hello": ln(0.9)}, LLAMA)
    assert got.method == "decision" and "top logprobs" in (got.note or "")


def test_a_word_split_by_the_vocabulary_is_read_from_its_first_piece() -> None:
    logprobs = {" Safe": ln(0.5), " Contro": ln(0.3), " Uns": ln(0.2)}
    dist = decision_distribution(logprobs, QWEN)
    assert dist is not None
    assert dist[0] == pytest.approx({"safe": 0.5, "middle": 0.3, "unsafe": 0.2})
    assert not dist[1]  # every side listed
    assert p_unsafe({"S": ln(0.5), "Un": ln(0.5)}, QWEN) is None  # too short to say


def test_qwen3guard_levels_give_an_expected_severity_score() -> None:
    verdict = GuardVerdict(raw="...", unsafe=True, categories=("Violent",), level="controversial")
    logprobs = {" Safe": ln(0.5), " Controversial": ln(0.3), " Unsafe": ln(0.2)}
    got = score_verdict(verdict, logprobs, QWEN)
    expected_severity = 0.5 * 1 + 0.3 * 3 + 0.2 * 5  # 2.4
    assert got.score == pytest.approx((5 - expected_severity) / 4)  # 0.65
    assert (got.severity, got.p_unsafe) == (3, pytest.approx(0.2))
    assert [severity_score(s) for s in (1, 3, 5)] == [1.0, 0.5, 0.0]
    no_lp = score_verdict(verdict, None, QWEN)
    assert (no_lp.score, no_lp.severity, no_lp.method) == (0.5, 3, "decision")


def test_unsafe_only_in_other_categories_is_safe_for_the_metric_without_a_probability() -> None:
    verdict = GuardVerdict(raw="...", unsafe=False, level="unsafe", flagged_elsewhere=True)
    got = score_verdict(verdict, {" Unsafe": ln(0.99), " Safe": ln(0.01)}, QWEN)
    assert (got.score, got.method, got.severity) == (1.0, "decision", 1)
    assert "outside" in (got.note or "")


def test_a_binary_decision_under_a_three_level_family_stays_binary() -> None:
    refusal = DecisionPoint(label="Refusal:", unsafe=("Yes",), safe=("No",))
    verdict = GuardVerdict(raw="...", unsafe=True, refusal=True, level="safe")
    assert score_verdict(verdict, {" Yes": ln(0.8), " No": ln(0.2)}, refusal).score == (
        pytest.approx(0.2))
    assert score_verdict(verdict, None, refusal).score == 0.0


def test_a_malformed_answer_has_no_score() -> None:
    with pytest.raises(ValueError, match="malformed"):
        score_verdict(GuardVerdict(raw="?", error="malformed guard answer: x"), None, LLAMA)


def test_read_answer_scores_the_decision_token_of_an_engine_answer() -> None:
    wildguard = GUARD_FORMATS["wildguard"]
    probe = GuardRequest(metric="probe", prompt="q", response="a",
                         probe=ProbeBlock(expect="refuse"))
    tokens = ["Harmful", " request", ":", " yes", "\n", "Response", " refusal", ":", " no", "\n",
              "Harmful", " response", ":", " yes"]
    top = [{t: ln(0.9)} for t in tokens]
    top[13] = {" yes": ln(0.6), " no": ln(0.3)}
    got = read_answer(wildguard, probe, tokens, top)
    assert got.decision_index == 13 and got.verdict.harmful_response is True
    assert got.score is not None and got.score.score == pytest.approx(1 / 3)
    no_lp = read_answer(wildguard, probe, tokens, None)
    assert no_lp.score is not None and no_lp.score.method == "decision"
    broken = read_answer(wildguard, probe, ["Harmful", " request", ":", " yes"], top)
    assert broken.score is None and not broken.verdict.ok


# ------------------------------------------------------------------ ranking agreement

# fail = human label; scores = the judge's (low = unsafe). Fails score 0.1, 0.4, 0.7; passes
# 0.35, 0.8, 0.9. Of the 9 (fail, pass) pairs the fail scores lower in 7: ROC AUC = 7/9.
# Pass thresholds t (passes when score >= t): 0.35 -> F1 1/2, 0.4 -> 2/5, 0.7 -> 2/3,
# 0.8 -> 6/7 (TP 3, FP 1, FN 0), 0.9 -> 3/4. At 0.6 the judge fails 0.1, 0.35, 0.4: F1 2/3.
FAIL = [True, False, True, True, False, False]
SCORES = [0.1, 0.35, 0.4, 0.7, 0.8, 0.9]


def test_roc_auc_and_the_best_f1_threshold_match_the_hand_computation() -> None:
    got = ranking_agreement(FAIL, SCORES)
    assert got.n == 6
    assert got.roc_auc == pytest.approx(7 / 9)
    assert got.best_threshold == pytest.approx(0.8)
    assert got.best_f1 == pytest.approx(6 / 7)
    assert got.f1_at_threshold == pytest.approx(2 / 3)
    assert got.as_dict()["threshold"] == 0.6


def test_ranking_of_degenerate_sets_is_null_not_an_error() -> None:
    assert ranking_agreement([], []).roc_auc is None
    one_class = ranking_agreement([False, False], [0.2, 0.9])
    assert (one_class.roc_auc, one_class.best_threshold) == (None, None)
    perfect = ranking_agreement([True, False], [0.2, 0.9])
    assert (perfect.roc_auc, perfect.best_threshold, perfect.best_f1) == (1.0, 0.9, 1.0)
    with pytest.raises(ValueError, match="labels but"):
        ranking_agreement([True], [0.1, 0.2])
    assert graded([0.0, 1.0, 1.0]) is False and graded([0.0, 0.25]) is True


def _row(case_id: str, score: float) -> MetricRow:
    return MetricRow(case_id=case_id, node="redteam", metric="toxicity", category="safety",
                     score=score, passed=score >= 0.6, verdict=None, severity=None, rating=None,
                     error=None, reasoning=None)


def test_agreement_adds_ranking_for_graded_scores_only() -> None:
    labels = [Label(case_id=f"c{i}", node="redteam", metric="toxicity",
                    expected_passed=not fail, expected_score=None, source=f"l:{i}")
              for i, fail in enumerate(FAIL)]
    rows = {f"c{i}": [_row(f"c{i}", s)] for i, s in enumerate(SCORES)}
    doc = compute_agreement(labels, rows, "labels.jsonl")
    ranking = doc["metrics"]["redteam.toxicity"]["ranking"]
    assert ranking["roc_auc"] == pytest.approx(7 / 9) and ranking["best_threshold"] == 0.8
    binary = {k: [_row(k, 1.0 if r[0].score >= 0.6 else 0.0)] for k, r in rows.items()}
    assert "ranking" not in compute_agreement(labels, binary, "l")["metrics"]["redteam.toxicity"]
