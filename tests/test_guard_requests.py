"""A guard request through the judge's plain parts: its answer check, its cache key and the
decision-token logprobs the engines keep (the engines themselves: tests/test_guard_engines.py)."""

from __future__ import annotations

from nexagauge_local.judge.cache import request_key
from nexagauge_local.judge.schemas import GuardAnswer, parse_request_answer
from nexagauge_local.judge.types import FailureKind, GuardAsk, JudgeRequest, decision_step

ASK = GuardAsk(format="wildguard", regex=r"Harmful request: (yes|no)\nHarmful response: (yes|no)",
               text="<s>prompt", decision_label="Harmful response:")


def _request(guard: GuardAsk | None = ASK) -> JudgeRequest:
    return JudgeRequest([{"role": "user", "content": "x"}], GuardAnswer, 24,
                        want_logprobs=True, guard=guard)


def test_an_answer_matching_the_format_parses_and_others_are_invalid_or_truncated() -> None:
    ok = parse_request_answer(_request(), "Harmful request: no\nHarmful response: yes")
    assert isinstance(ok.parsed, GuardAnswer) and ok.error is None
    bad = parse_request_answer(_request(), "Harmful request: maybe", hit_max_tokens=False)
    assert bad.failure is FailureKind.INVALID_OUTPUT and "wildguard" in (bad.error or "")
    cut = parse_request_answer(_request(), "Harmful request: no\nHarm", hit_max_tokens=True)
    assert cut.failure is FailureKind.TRUNCATED


def test_the_guard_prompt_and_grammar_are_part_of_the_key_and_rubric_keys_are_unchanged() -> None:
    def key(guard: GuardAsk | None) -> str:
        return request_key("judge@1", "v1", [{"role": "user", "content": "x"}], "s",
                           max_tokens=24, seed=0, want_logprobs=True,
                           guard=guard.key_material() if guard else None)

    other = GuardAsk(format="wildguard", regex=ASK.regex, text="<s>other prompt",
                     decision_label=ASK.decision_label)
    assert len({key(None), key(ASK), key(other)}) == 3
    assert key(None) == request_key("judge@1", "v1", [{"role": "user", "content": "x"}], "s",
                                    max_tokens=24, seed=0, want_logprobs=True)


def test_the_decision_step_is_the_token_after_the_label() -> None:
    pieces = ["Harmful", " request", ":", " no", "\n", "Harmful", " response", ":", " yes"]
    steps = [{p: -0.1, "x": -3.0} for p in pieces]
    steps[8] = {" yes": -0.2, " no": -1.8, " maybe": -4.0}
    assert decision_step(pieces, steps, "Harmful response:", 2) == [{" yes": -0.2, " no": -1.8}]
    assert decision_step(pieces, steps, "Refusal:", 2) == []  # label not in the answer
    assert decision_step(pieces, steps[:5], "Harmful response:", 2) == []  # no step there
    assert decision_step(["Yes"], [{"Yes": -0.1, "No": -2.4}], "", 20) == [
        {"Yes": -0.1, "No": -2.4}]


def test_messages_only_when_the_weights_template_reads_every_extra() -> None:
    ask = GuardAsk(format="shieldgemma", regex="(Yes|No)", text="t",
                   template_kwargs=(("guideline", "No hate"),))
    assert ask.uses_messages("{{ guideline }} {% for m in messages %}{% endfor %}")
    assert not ask.uses_messages("{% for m in messages %}{% endfor %}")
    assert not ask.uses_messages(None)
    fixed = GuardAsk(format="wildguard", regex="x", text="t", uses_chat_template=False)
    assert not fixed.uses_messages("{{ anything }}")
