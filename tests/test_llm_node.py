"""The LLM-node contract (nodes/llm_node.py): what the framework owns for every LLM node.

Why here and not only through the real nodes: the slicing of one flat result list back into
cases with different numbers of requests (and cases that ask nothing, or get no section) is
where a node used to go wrong one off; it is checked once, on a node small enough to read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nexagauge_local.judge import JudgeRequest, JudgeResult, StrictSchema
from nexagauge_local.judge.prompts.base import messages
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.judging import NO_JUDGE
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from tests.scripted_judge import ScriptedJudge, make_ctx, make_state


class Word(StrictSchema):
    word: str


def ask(state: CaseState, i: int) -> Ask[int]:
    return Ask(JudgeRequest(messages=messages(f"{state.case.case_id} #{i}"), schema=Word,
                            max_tokens=20, node="counter", prompt_version="counter/v1",
                            case_id=state.case.case_id, metric=f"m{i}"), i)


class Counter(LLMNode[int, list[tuple[int, str]]]):
    """Asks as many questions as the case id's last digit; case ids ending in 0 get no section."""

    name = "counter"

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[int]] | None:
        n = int(state.case.case_id[-1])
        return None if n == 0 else [ask(state, i) for i in range(n - 1)]

    def score_case(self, state: CaseState, answers: Answers[int]) -> list[tuple[int, str]]:
        return [(i, res.error or res.raw_text) for i, res in answers.pairs]


def echo(req: JudgeRequest) -> dict[str, Any]:
    return {"word": req.messages[-1]["content"]}


def test_one_call_and_every_case_gets_its_own_answers(tmp_path: Path) -> None:
    judge = ScriptedJudge().on("counter", echo)
    ctx = make_ctx(tmp_path, judge)
    advanced: list[int] = []
    ctx.advance = lambda node, n: advanced.append(n)
    states = [make_state(c) for c in ("a3", "b1", "c0", "d4")]
    Counter().run(states, ctx)

    assert judge.calls_for("counter") == 1  # every case's requests in ONE call, in case order
    assert [r.metric for r in judge.requests("counter")] == ["m0", "m1", "m0", "m1", "m2"]
    assert states[0].artifacts["counter"] == [(0, '{"word":"a3 #0"}'), (1, '{"word":"a3 #1"}')]
    assert states[1].artifacts["counter"] == []  # asked nothing, still has a section
    assert "counter" not in states[2].artifacts  # no section
    assert [i for i, _ in states[3].artifacts["counter"]] == [0, 1, 2]
    assert sum(advanced) == 4  # the bar reaches every case
    assert ctx.prompt_versions == {"counter": "counter/v1"}
    assert ctx.judge_outcomes["counter"].requests == 5


def test_each_case_is_charged_its_own_requests(tmp_path: Path) -> None:
    states = [make_state(c) for c in ("a3", "b2")]

    class Costed(Counter):
        def score_case(self, state: CaseState, answers: Answers[int]) -> Any:
            return answers.cost

    Costed().run(states, make_ctx(tmp_path, ScriptedJudge(output_tokens=10)))
    assert [s.artifacts["counter"].output_tokens for s in states] == [20.0, 10.0]


def test_no_judge_is_a_failed_answer_per_request(tmp_path: Path) -> None:
    state = make_state("a2")
    ctx = make_ctx(tmp_path, None)
    Counter().run([state], ctx)
    assert state.artifacts["counter"] == [(0, NO_JUDGE)]
    assert ctx.judge_outcomes["counter"].all_failed


def test_truncated_inputs_are_recorded_per_case(tmp_path: Path) -> None:
    def cut(req: JudgeRequest) -> JudgeResult:
        res = JudgeResult(parsed=Word(word="x"), raw_text="x", prompt_tokens=1, output_tokens=1,
                          gpu_seconds=0.0)
        res.extra["input_truncated"] = {"field": "output"}
        return res

    ctx = make_ctx(tmp_path, ScriptedJudge().on("counter", cut))
    Counter().run([make_state("a2"), make_state("b1"), make_state("c3")], ctx)
    assert ctx.truncated_inputs == {
        "a2": [{"node": "counter", "metric": "m0", "field": "output"}],
        "c3": [{"node": "counter", "metric": "m0", "field": "output"},
               {"node": "counter", "metric": "m1", "field": "output"}],
    }
    assert ctx.judge_outcomes["counter"].truncated == 3


def test_a_shard_that_asks_nothing_records_nothing(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, ScriptedJudge())
    Counter().run([make_state("a1"), make_state("b0")], ctx)
    assert ctx.judge_outcomes == {} and ctx.prompt_versions == {}
