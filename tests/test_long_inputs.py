"""Requests longer than the judge's window: each fails alone with a clear error, or, opted in,
is judged with the middle of its longest evaluated text cut and a visible marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexagauge_local.judge.cache import JudgeCache
from nexagauge_local.judge.client import JudgeClient
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.long_inputs import (
    MARKER,
    LongInputs,
    context_error,
    truncate_middle,
)
from nexagauge_local.judge.prompts.fencing import fence, parse_sections
from nexagauge_local.judge.types import FailureKind, JudgeRequest, Messages
from nexagauge_local.nodes.geval import geval_schema
from tests.judge_fixtures import redteam_messages
from tests.test_judge_client import Factory, ScriptedBackend

GEVAL = geval_schema("scale_1_5")


def _words(messages: Messages) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return sum(len(m["content"].split()) for m in messages)


def _messages(output: str) -> Messages:
    return [
        {"role": "system", "content": "You are a strict evaluator."},
        {"role": "user", "content": "Rubric: judge coherence.\n"
         + fence("input", "What happened in 1789?") + "\n" + fence("output", output)},
    ]


def test_context_error_names_case_node_metric_and_counts() -> None:
    req = JudgeRequest(_messages("x"), GEVAL, 64, node="geval", case_id="c-7", metric="coherence")
    assert context_error(req, 100, 8192) is None
    err = context_error(req, 8150, 8192)
    assert err == (
        "context: case 'c-7', node geval, metric coherence: prompt 8150 tokens + max_tokens 64 "
        "= 8214 > the judge's max_model_len 8192; not sent to the judge "
        "(--long-inputs truncate-middle judges the text with its middle cut)"
    )


def test_truncate_middle_cuts_only_the_longest_data_section() -> None:
    output = " ".join(f"w{i}" for i in range(500))
    messages = _messages(output)
    cut, note = truncate_middle(messages, 200, _words)
    assert note is not None and _words(cut) <= 200
    assert note.field == "output" and note.prompt_tokens_before == _words(messages)
    assert note.prompt_tokens_after == _words(cut)
    sections, outside = parse_sections(cut[1]["content"])  # the fences are intact
    assert [s.field for s in sections] == ["input", "output"]
    assert sections[0].text == "What happened in 1789?"
    text = sections[1].text
    marker = MARKER.format(n=note.chars_removed)
    assert marker in text and text.startswith("w0 w1 ") and text.endswith("w498 w499")
    assert len(text) - len(marker) == note.chars_kept
    assert note.chars_kept + note.chars_removed == len(output)
    assert cut[0] == messages[0] and "Rubric: judge coherence." in outside


def test_truncate_middle_leaves_fitting_prompts_and_prompts_without_data_alone() -> None:
    messages = _messages("short answer")
    assert truncate_middle(messages, 1000, _words) == (messages, None)
    plain = [{"role": "user", "content": "word " * 50}]
    assert truncate_middle(plain, 10, _words) == (plain, None)


def _client(tmp_path: Path, policy: str, window: int = 300) -> tuple[JudgeClient, Factory]:
    factory = Factory(ScriptedBackend())
    inputs = LongInputs(policy, window, lambda: _words)  # type: ignore[arg-type]
    return JudgeClient(factory, JudgeCache(tmp_path), CostLedger(),  # type: ignore[arg-type]
                       decision=factory.decision, long_inputs=inputs), factory


def test_truncate_middle_opt_in_marks_results_and_caches_the_cut_prompt(tmp_path: Path) -> None:
    long_out = " ".join(f"w{i}" for i in range(600))
    reqs = [JudgeRequest(_messages(long_out), GEVAL, 20, node="geval", case_id="long"),
            JudgeRequest(_messages("fine"), GEVAL, 20, node="geval", case_id="ok")]
    client, _factory = _client(tmp_path, "truncate-middle")
    results = client.run("geval", reqs)
    assert results[0].error is None and results[1].error is None
    flag = results[0].extra["input_truncated"]
    assert flag["field"] == "output" and flag["prompt_tokens_after"] <= 300 - 20
    assert "input_truncated" not in results[1].extra
    again, factory2 = _client(tmp_path, "truncate-middle")
    cached = again.run("geval", reqs)
    assert factory2.built == 0 and all(r.cached for r in cached)  # the cut is deterministic
    assert cached[0].extra["input_truncated"] == flag


def test_fail_policy_sends_requests_unchanged(tmp_path: Path) -> None:
    client, _factory = _client(tmp_path, "fail", window=10)
    long_out = " ".join(f"w{i}" for i in range(600))
    results = client.run("geval", [JudgeRequest(_messages(long_out), GEVAL, 20, node="geval")])
    assert "input_truncated" not in results[0].extra  # the backend's guard decides


def test_hf_backend_fails_an_over_long_prompt_alone(tiny_backend, monkeypatch) -> None:
    monkeypatch.setattr(tiny_backend, "profile",
                        tiny_backend.profile.model_copy(update={"max_model_len": 256}))
    short = [JudgeRequest(redteam_messages(i), GEVAL, 12, node="geval", case_id=f"c{i}",
                          metric="coherence") for i in range(3)]
    long = JudgeRequest([{"role": "user", "content": "evaluate " * 400}], GEVAL, 12,
                        node="geval", case_id="huge", metric="coherence")
    handed: list[list[int]] = []
    results = tiny_backend.generate([short[0], long, short[1], short[2]],
                                    on_batch=lambda pos, res: handed.append(pos))
    assert [r.error for r in results[0:1] + results[2:]] == [None, None, None]
    err = results[1].error or ""
    assert err.startswith("context: case 'huge', node geval, metric coherence: prompt ")
    assert results[1].prompt_tokens > 256 and "max_model_len 256" in err
    assert results[1].failure is FailureKind.CONTEXT_WINDOW
    assert handed[0] == [1]  # refused at once, before any decoding


def test_context_errors_are_not_cached(tmp_path: Path, tiny_backend, monkeypatch) -> None:
    monkeypatch.setattr(tiny_backend, "profile",
                        tiny_backend.profile.model_copy(update={"max_model_len": 256}))
    factory = Factory(tiny_backend, fingerprint="tiny@test")
    client = JudgeClient(factory, JudgeCache(tmp_path), CostLedger(),  # type: ignore[arg-type]
                         decision=factory.decision)
    long = JudgeRequest([{"role": "user", "content": "evaluate " * 400}], GEVAL, 12, node="geval")
    [res] = client.run("geval", [long])
    assert res.error and res.error.startswith("context:")
    assert res.failure is FailureKind.CONTEXT_WINDOW
    assert client.cache.stats().entries == 0  # type: ignore[union-attr]


@pytest.mark.parametrize("policy", ["fail", "truncate-middle"])
def test_run_settings_accept_the_policy(policy: str) -> None:
    from nexagauge_local.settings import RunSettings

    assert RunSettings(long_inputs=policy).long_inputs == policy  # type: ignore[arg-type]


def test_judge_outcome_counts_over_context_by_kind_not_wording() -> None:
    from nexagauge_local.judge.types import JudgeResult
    from nexagauge_local.nodes.base import JudgeOutcome

    outcome = JudgeOutcome()
    outcome.add([JudgeResult.failed(FailureKind.CONTEXT_WINDOW, "too long for the window"),
                 JudgeResult.failed(FailureKind.BACKEND, "context: worded like one"),
                 JudgeResult(None, "{}", 5, 3, 0.0)])
    assert outcome.as_dict() == {"requests": 3, "failed": 2, "over_context": 1,
                                 "first_error": "too long for the window"}
