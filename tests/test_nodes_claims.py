"""claims, grounding and relevance node logic against the scripted judge."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from nexagauge_local.judge.prompts import parse_sections
from nexagauge_local.judge.types import JudgeRequest, JudgeResult
from nexagauge_local.nodes.claim_check import NO_CLAIMS
from nexagauge_local.nodes.claims import PROMPT_VERSION as CLAIMS_VERSION
from nexagauge_local.nodes.claims.node import META, ClaimsNode
from nexagauge_local.nodes.grounding import PROMPT_VERSION as GROUNDING_VERSION
from nexagauge_local.nodes.grounding import GroundingNode
from nexagauge_local.nodes.judging import NO_JUDGE
from nexagauge_local.nodes.relevance import PROMPT_VERSION as RELEVANCE_VERSION
from nexagauge_local.nodes.relevance import RelevanceNode
from nexagauge_local.scoring.judge_scores import dedupe_claims, normalise_claim
from tests.scripted_judge import ScriptedJudge, make_ctx, make_state, payload_for, user_text


def sections(req: JudgeRequest) -> dict[str, str]:
    found, _ = parse_sections(user_text(req))
    return {s.field: s.text for s in found}


def with_claims(state: Any, claims: list[str]) -> Any:
    state.artifacts["claims"] = claims
    return state


def verdicts(*items: dict[str, Any]):
    return lambda req: {"verdicts": list(items)}


# ---------------------------------------------------------------- claims


def test_claims_one_call_per_shard_and_dedupe(tmp_path) -> None:
    canned = {
        "Paris is the capital of France.": ["Paris is the capital of France.",
                                            "Paris is in Europe."],
        "It has 2 million people.": ["paris is in europe", "Paris has 2 million people."],
        "The sky is blue.": ["The sky is blue."],
        "Nothing here.": [],
    }

    def respond(req: JudgeRequest) -> dict[str, Any]:
        return {"claims": canned[sections(req)["output_chunk"]]}

    judge = ScriptedJudge().on("claims", respond)
    a = make_state("a", chunks=["Paris is the capital of France.", "It has 2 million people."])
    b = make_state("b", chunks=["The sky is blue.", "Nothing here."])
    ClaimsNode().run([a, b], make_ctx(tmp_path, judge))
    assert judge.calls_for("claims") == 1
    reqs = judge.requests("claims")
    assert len(reqs) == 4 and {r.prompt_version for r in reqs} == {CLAIMS_VERSION}
    assert a.artifacts["claims"] == ["Paris is the capital of France.", "Paris is in Europe.",
                                     "Paris has 2 million people."]
    assert b.artifacts["claims"] == ["The sky is blue."]
    # the previous chunk travels along only to resolve "It"
    assert sections(reqs[1]) == {"output_before": "Paris is the capital of France.",
                                 "output_chunk": "It has 2 million people."}
    assert "output_before" not in sections(reqs[0])
    schema = json.loads(json.dumps(reqs[0].schema.model_json_schema()))
    assert schema["properties"]["claims"]["maxItems"] == 5


def test_dedupe_normalises_case_space_and_end_punctuation() -> None:
    assert normalise_claim("  The  Sky is BLUE. ") == "the sky is blue"
    assert dedupe_claims(["A b.", "a  B", "", "   ", "C"]) == ["A b.", "C"]


def test_chunk_errors_are_recorded(tmp_path) -> None:
    def respond(req: JudgeRequest) -> dict[str, Any] | JudgeResult:
        if "bad" in sections(req)["output_chunk"]:
            return JudgeResult(None, '{"claims":["x', 3, 500, 0.1, error="truncated")
        return {"claims": ["Good claim."]}

    state = make_state(chunks=["good chunk", "bad chunk"])
    ClaimsNode().run([state], make_ctx(tmp_path, ScriptedJudge().on("claims", respond)))
    meta = state.artifacts[META]
    assert state.artifacts["claims"] == ["Good claim."]
    assert (meta.chunks, meta.failed_chunks, meta.errors) == (2, 1, ["truncated"])
    assert meta.cost.input_tokens == 100 + 3


def test_no_judge_claims_then_grounding_reports_why(tmp_path) -> None:
    state = make_state(chunks=["Some text."], context="ctx")
    ctx = make_ctx(tmp_path, None)
    ClaimsNode().run([state], ctx)
    GroundingNode().run([state], ctx)
    m = state.artifacts["grounding"].metrics[0]
    assert m.score is None and m.passed is None
    assert m.error.startswith("no claims extracted") and NO_JUDGE in m.error


# ---------------------------------------------------------------- grounding / relevance


def test_grounding_binary_scores_and_labels(tmp_path) -> None:
    judge = ScriptedJudge().on("grounding", verdicts({"verdict": "yes"}, {"verdict": "no"},
                                                     {"verdict": "yes"}))
    state = with_claims(make_state(context="CTX"), ["c1", "c2", "c3"])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert m.name == "grounding" and m.error is None
    assert m.score == pytest.approx(2 / 3) and m.passed is True
    assert [(r["claim"], r["verdict"], r["score"]) for r in m.result] == [
        ("c1", "supported", 1.0), ("c2", "not_supported", 0.0), ("c3", "supported", 1.0)]
    assert all(set(r) == {"claim", "verdict", "passed", "score"} for r in m.result)
    req = judge.requests("grounding")[0]
    assert req.prompt_version == GROUNDING_VERSION
    assert sections(req) == {"context": "CTX", "claims": "1. c1\n2. c2\n3. c3"}


def test_grounding_scale_with_reasoning(tmp_path) -> None:
    judge = ScriptedJudge().on("grounding", verdicts(
        {"reasoning": "r1", "score": 5}, {"reasoning": "r2", "score": 3},
        {"reasoning": "r3", "score": 1}))
    state = with_claims(make_state(context="CTX", grounding={"scoring_mode": "scale_1_5",
                                                              "include_reasoning": True}),
                        ["a", "b", "c"])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert m.score == pytest.approx((1.0 + 0.5 + 0.0) / 3) and m.passed is False
    assert [(r["rating"], r["score"], r["verdict"], r["reasoning"]) for r in m.result] == [
        (5, 1.0, "supported", "r1"), (3, 0.5, "not_supported", "r2"),
        (1, 0.0, "not_supported", "r3")]


@pytest.mark.parametrize("rating", [1, 2, 3, 4, 5])
def test_scale_normalisation(tmp_path, rating: int) -> None:
    judge = ScriptedJudge().on("relevance", verdicts({"score": rating}))
    state = with_claims(make_state(input="Q?", relevance={"scoring_mode": "scale_1_5"}), ["a"])
    RelevanceNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["relevance"].metrics[0]
    assert m.score == (rating - 1) / 4
    assert m.passed is (m.score >= 0.6)


def test_schema_enforces_exactly_n_verdicts(tmp_path) -> None:
    judge = ScriptedJudge()
    states = [with_claims(make_state(f"c{n}", context="CTX"), [f"claim {i}" for i in range(n)])
              for n in (1, 3, 4)]
    GroundingNode().run(states, make_ctx(tmp_path, judge))
    for req, n in zip(judge.requests("grounding"), (1, 3, 4), strict=True):
        js = req.schema.model_json_schema()
        assert js["properties"]["verdicts"]["minItems"] == n == js["properties"]["verdicts"][
            "maxItems"]
        item = payload_for(req.schema)["verdicts"][0]
        with pytest.raises(ValidationError):
            req.schema.model_validate({"verdicts": [item] * (n + 1)})
        if n > 1:
            with pytest.raises(ValidationError):
                req.schema.model_validate({"verdicts": [item] * (n - 1)})
    for state in states:
        assert len(state.artifacts["grounding"].metrics[0].result) == len(state.artifacts["claims"])


def test_relevance_uses_input_and_one_call_for_all_cases(tmp_path) -> None:
    judge = ScriptedJudge().on("relevance", lambda req: payload_for(req.schema, verdict="no"))
    states = [with_claims(make_state(f"c{i}", input=f"Q{i}", context="CTX"), ["x", "y"])
              for i in range(5)]
    empty = with_claims(make_state("empty", input="Q"), [])
    RelevanceNode().run([*states, empty], make_ctx(tmp_path, judge))
    assert judge.calls_for("relevance") == 1
    reqs = judge.requests("relevance")
    assert len(reqs) == 5  # the case without claims is not sent
    assert {r.prompt_version for r in reqs} == {RELEVANCE_VERSION}
    assert sections(reqs[2]) == {"input": "Q2", "claims": "1. x\n2. y"}
    m = states[0].artifacts["relevance"].metrics[0]
    assert (m.name, m.score, m.passed) == ("relevance", 0.0, False)
    assert [r["verdict"] for r in m.result] == ["not_relevant", "not_relevant"]
    assert states[0].artifacts["relevance"].cost.input_tokens == 100.0


def test_no_claims_gives_null_score_and_error(tmp_path) -> None:
    judge = ScriptedJudge()
    state = with_claims(make_state(context="CTX"), [])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert (m.score, m.passed, m.result) == (None, None, [])
    assert m.error == NO_CLAIMS and m.error.startswith("no claims extracted")
    assert judge.requests("grounding") == []


def test_verdict_error_and_partial_extraction(tmp_path) -> None:
    judge = ScriptedJudge().on(
        "grounding", lambda req: JudgeResult(None, "", 10, 0, 0.0, error="invalid: verdicts"))
    state = with_claims(make_state(context="CTX"), ["a"])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert (m.score, m.error) == (None, "invalid: verdicts")

    # claims lost in extraction: score over what exists, and the error says it is partial
    judge2 = ScriptedJudge().on("claims", lambda req: (
        {"claims": ["ok"]} if sections(req)["output_chunk"] == "one"
        else JudgeResult(None, "", 1, 1, 0.0, error="truncated")))
    state2 = make_state(chunks=["one", "two"], context="CTX")
    ctx2 = make_ctx(tmp_path, judge2)
    ClaimsNode().run([state2], ctx2)
    GroundingNode().run([state2], ctx2)
    m2 = state2.artifacts["grounding"].metrics[0]
    assert m2.score == 1.0 and "1 of 2 chunks" in m2.error


def test_progress_counts_each_case_once(tmp_path) -> None:
    seen: list[tuple[str, int]] = []
    ctx = make_ctx(tmp_path, ScriptedJudge())
    ctx.advance = lambda node, n: seen.append((node, n))
    states = [make_state("a", chunks=["x", "y", "z"]), make_state("b", chunks=["w"]),
              make_state("c", chunks=[])]
    ClaimsNode().run(states, ctx)
    assert {n for n, _ in seen} == {"claims"} and sum(k for _, k in seen) == 3
