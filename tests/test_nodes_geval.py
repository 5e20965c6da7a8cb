"""geval_steps and geval node logic, and the logprob-weighted score math."""

from __future__ import annotations

import math
from typing import Any

import pytest

from nexagauge_local.judge.prompts import parse_sections
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult
from nexagauge_local.nodes.geval import PROMPT_VERSION as GEVAL_VERSION
from nexagauge_local.nodes.geval.node import GevalNode, score_answer
from nexagauge_local.nodes.geval_steps import PROMPT_VERSION as STEPS_VERSION
from nexagauge_local.nodes.geval_steps.node import GevalStepsNode
from nexagauge_local.results import GevalEntry
from nexagauge_local.scoring.judge_scores import digit_distribution, weighted_rating
from nexagauge_local.scoring.mode import ScoringMode
from tests.scripted_judge import ScriptedJudge, make_ctx, make_state, payload_for, user_text

CRIT_A = "Does the output answer the input?"
CRIT_B = "Is the output polite?"


def geval_block(mode: str = "binary_yes_no", reasoning: bool = False) -> dict[str, Any]:
    return {"scoring_mode": mode, "include_reasoning": reasoning, "metrics": [
        {"name": "answers", "item_fields": ["input", "output"], "criteria": CRIT_A},
        {"name": "polite", "criteria": CRIT_B},
        {"name": "given", "item_fields": ["output", "reference"],
         "evaluation_steps": ["Compare output with reference.", "Penalise contradictions."]},
    ]}


def steps_responder(req: JudgeRequest) -> dict[str, Any]:
    text = user_text(req)
    tag = "A" if CRIT_A in text else "B"
    return {"steps": [f"{tag} step one.", f"{tag} step two."]}


def lp(**probs: float) -> dict[str, float]:
    return {k: math.log(v) for k, v in probs.items()}


# ---------------------------------------------------------------- geval_steps


def test_steps_generated_once_per_distinct_criteria_across_cases(tmp_path) -> None:
    judge = ScriptedJudge().on("geval_steps", steps_responder)
    states = [make_state(f"c{i}", output=f"SECRET OUTPUT {i}", input=f"SECRET INPUT {i}",
                         reference="R", geval=geval_block()) for i in range(10)]
    node = GevalStepsNode()
    ctx = make_ctx(tmp_path, judge)
    node.run(states, ctx)
    assert judge.calls_for("geval_steps") == 1
    reqs = judge.requests("geval_steps")
    assert len(reqs) == 2  # (CRIT_A, input+output) and (CRIT_B, output); given steps not asked
    assert {r.prompt_version for r in reqs} == {STEPS_VERSION}
    for req in reqs:
        text = user_text(req)
        assert "SECRET" not in text  # field names only, never values
        assert parse_sections(text)[0] == []  # nothing fenced: no case data at all
    assert "input, output" in user_text(reqs[0]) and "fields: output." in user_text(reqs[1])
    resolved = states[7].artifacts["geval_steps"]
    assert [(r.name, r.steps, r.source) for r in resolved] == [
        ("answers", ("A step one.", "A step two."), "generated"),
        ("polite", ("B step one.", "B step two."), "generated"),
        ("given", ("Compare output with reference.", "Penalise contradictions."), "given"),
    ]
    # a later shard reuses the answers without asking again
    more = [make_state("d", geval=geval_block())]
    node.run(more, ctx)
    assert len(judge.requests("geval_steps")) == 2
    assert more[0].artifacts["geval_steps"][0].steps == ("A step one.", "A step two.")


def test_same_criteria_different_fields_is_distinct(tmp_path) -> None:
    judge = ScriptedJudge().on("geval_steps", steps_responder)
    block = {"metrics": [{"name": "x", "criteria": CRIT_A},
                         {"name": "y", "item_fields": ["input", "output"], "criteria": CRIT_A},
                         {"name": "z", "criteria": "  Does the output   answer the input? "}]}
    GevalStepsNode().run([make_state(geval=block)], make_ctx(tmp_path, judge))
    assert len(judge.requests("geval_steps")) == 2  # z only differs in whitespace from x


def test_steps_error_surfaces_in_geval(tmp_path) -> None:
    judge = ScriptedJudge().on("geval_steps",
                               lambda req: JudgeResult(None, "", 5, 0, 0.0, error="truncated",
                                                       failure=FailureKind.TRUNCATED))
    state = make_state(input="Q", reference="R", geval=geval_block())
    ctx = make_ctx(tmp_path, judge)
    GevalStepsNode().run([state], ctx)
    GevalNode().run([state], ctx)
    metrics = state.artifacts["geval"].metrics
    assert [m.error for m in metrics] == ["evaluation steps: truncated"] * 2 + [None]
    assert len(judge.requests("geval")) == 1  # only the metric with given steps is judged


# ---------------------------------------------------------------- geval


def run_geval(tmp_path, judge: ScriptedJudge, states: list[Any]) -> None:
    ctx = make_ctx(tmp_path, judge.on("geval_steps", steps_responder))
    GevalStepsNode().run(states, ctx)
    GevalNode().run(states, ctx)


def test_geval_binary_one_call_and_fields(tmp_path) -> None:
    def respond(req: JudgeRequest) -> dict[str, Any]:
        return payload_for(req.schema, verdict="no" if "'polite'" in user_text(req) else "yes")

    judge = ScriptedJudge().on("geval", respond)
    states = [make_state(f"c{i}", output=f"O{i}", input=f"I{i}", context="C", reference="R",
                         geval=geval_block()) for i in range(3)]
    run_geval(tmp_path, judge, states)
    assert judge.calls_for("geval") == 1
    reqs = judge.requests("geval")
    assert len(reqs) == 9 and {r.prompt_version for r in reqs} == {GEVAL_VERSION}
    assert not any(r.want_logprobs for r in reqs)
    secs = [{s.field: s.text for s in parse_sections(user_text(r))[0]} for r in reqs[:3]]
    assert secs == [{"input": "I0", "output": "O0"}, {"output": "O0"},
                    {"output": "O0", "reference": "R"}]
    assert "1. A step one." in user_text(reqs[0])
    metrics = states[0].artifacts["geval"].metrics
    assert [(m.name, m.score, m.passed) for m in metrics] == [
        ("answers", 1.0, True), ("polite", 0.0, False), ("given", 1.0, True)]
    entry = metrics[0].result[0]
    assert isinstance(entry, GevalEntry)
    assert entry.score_method == "argmax" and entry.verdict == "PASS"
    assert entry.evaluation_steps == ["A step one.", "A step two."]
    assert metrics[2].result[0].steps_source == "given"
    assert metrics[0].category == "input|output"
    assert states[0].artifacts["geval"].cost.input_tokens == 300.0


@pytest.mark.parametrize("rating", [1, 2, 3, 4, 5])
def test_geval_scale_argmax_without_logprobs(tmp_path, rating: int) -> None:
    judge = ScriptedJudge().on("geval", lambda req: payload_for(req.schema, score=rating,
                                                                reasoning="why"))
    state = make_state(input="Q", reference="R", geval=geval_block("scale_1_5", True))
    run_geval(tmp_path, judge, [state])
    assert all(r.want_logprobs for r in judge.requests("geval"))
    m = state.artifacts["geval"].metrics[0]
    assert m.score == (rating - 1) / 4
    e = m.result[0]
    assert isinstance(e, GevalEntry)
    assert (e.score_method, e.rating, e.reasoning) == ("argmax", rating, "why")
    assert e.passed is (m.score >= 0.6)


def test_geval_scale_logprob_weighted(tmp_path) -> None:
    # '{"score":' then a digit step where 4 has p=0.6 and 5 p=0.3; the rest is not a digit
    steps = [lp(**{'{"': 0.99}), lp(score=0.99), lp(**{'":': 0.99}),
             {"4": math.log(0.6), "5": math.log(0.3), "x": math.log(0.1)}, lp(**{"}": 0.99})]

    def respond(req: JudgeRequest) -> JudgeResult:
        parsed = req.schema.model_validate({"score": 4})
        return JudgeResult(parsed, '{"score":4}', 50, 5, 0.1, token_logprobs=steps)

    state = make_state(input="Q", reference="R", geval=geval_block("scale_1_5"))
    run_geval(tmp_path, ScriptedJudge().on("geval", respond), [state])
    m = state.artifacts["geval"].metrics[0]
    expected_rating = (4 * 0.6 + 5 * 0.3) / 0.9
    assert m.result[0].score_method == "logprob_weighted"
    assert m.result[0].weighted_rating == pytest.approx(expected_rating)
    assert m.result[0].rating == 4
    assert m.score == pytest.approx((expected_rating - 1) / 4)
    assert sum((m.result[0].digit_probabilities or {}).values()) == pytest.approx(1.0)


# ---------------------------------------------------------------- logprob math (pure)


def test_digit_distribution_renormalises_over_allowed_digits() -> None:
    steps = [lp(**{'{"score":': 0.9}), {"2": math.log(0.2), "3": math.log(0.2),
                                        "9": math.log(0.5), "a": math.log(0.1)}]
    dist = digit_distribution(steps)
    assert dist == pytest.approx({1: 0.0, 2: 0.5, 3: 0.5, 4: 0.0, 5: 0.0})
    assert weighted_rating(dist) == pytest.approx(2.5)


def test_digit_found_after_reasoning_with_digits_and_merged_tokens() -> None:
    steps = [lp(**{'{"reasoning":"': 0.9}), lp(**{"rated 5 of 5": 0.9}), lp(**{'","score"': 0.9}),
             {":3": math.log(0.5), ":4": math.log(0.25), ":": math.log(0.25)},
             {"}": 0.0}]
    dist = digit_distribution(steps)
    assert dist is not None
    assert dist[3] == pytest.approx(2 / 3) and dist[4] == pytest.approx(1 / 3)


def test_digit_token_merged_with_closing_brace() -> None:
    steps = [lp(**{'{"score":': 0.9}), {"5}": math.log(0.7), "4}": math.log(0.3)}]
    assert weighted_rating(digit_distribution(steps)) == pytest.approx(4.7)


def test_fallback_when_key_not_rebuilt() -> None:
    # top alternatives that are not the constrained choice: locate the last bare digit step
    steps = [{" ": -0.1}, {"2": math.log(0.5), "1": math.log(0.5)}, {"}": -0.1}]
    assert weighted_rating(digit_distribution(steps)) == pytest.approx(1.5)


def test_no_distribution_means_argmax() -> None:
    assert digit_distribution(None) is None
    assert digit_distribution([{"{": 0.0}, {"}": 0.0}]) is None

    class Parsed:
        score = 3

    score, detail = score_answer(Parsed(), [{"{": 0.0}], ScoringMode.SCALE)
    assert score == 0.5
    assert detail.model_dump(exclude_unset=True) == {"rating": 3, "score_method": "argmax"}
