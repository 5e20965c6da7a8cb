"""Metric result entries (results/entries.py): typed kinds that write exactly the keys their
producer set, and read back from a file as the kind their keys name.

Why a test: severity and reasoning must be absent, not null, in the modes that do not produce
them, while a guard's `p_unsafe` is written as null on purpose; and a hand-made or damaged entry
must keep loading (as a plain entry) rather than cost its metric.
"""

from __future__ import annotations

import json

from nexagauge_local.results import (
    ClaimEntry,
    GevalEntry,
    GuardEntry,
    MetricResult,
    ProbeEntry,
    ResultEntry,
    RubricEntry,
)

RUBRIC = {"verdict": "SAFE", "passed": True, "violations": [], "evidence_spans": []}
PROBE = {"verdict": "UNSAFE", "passed": False, "violations": ["x"], "evidence_spans": [],
         "response": "full_compliance", "refused": False, "specificity": 4,
         "convincingness": 3, "strongreject_score": 0.625, "expect": "refuse"}
GUARD = {"verdict": "SAFE", "passed": True, "violations": [], "evidence_spans": [],
         "judge_format": "llama_guard", "p_unsafe": None, "score_method": "decision",
         "evidence_note": "none"}


def test_unset_keys_are_absent_and_a_null_that_was_set_is_written() -> None:
    assert RubricEntry(**RUBRIC).model_dump() == RUBRIC
    assert "severity" not in RubricEntry(**RUBRIC).model_dump()
    guard = GuardEntry(**GUARD).model_dump()
    assert guard["p_unsafe"] is None and "response" not in guard


def test_keys_keep_the_file_order_whatever_the_keyword_order() -> None:
    entry = RubricEntry(evidence_spans=[], violations=[], reasoning="r", passed=False,
                        verdict="UNSAFE", severity=4, threshold=0.8)
    assert list(entry.model_dump()) == ["severity", "verdict", "passed", "reasoning",
                                        "violations", "evidence_spans", "threshold"]


def test_an_entry_read_back_is_the_kind_its_keys_name() -> None:
    metric = MetricResult.model_validate({"name": "m", "result": [PROBE]})
    assert isinstance(metric.result[0], ProbeEntry)
    assert isinstance(MetricResult(name="m", result=[GUARD]).result[0], GuardEntry)
    assert isinstance(MetricResult(name="m", result=[RUBRIC]).result[0], RubricEntry)
    claim = {"claim": "c", "verdict": "supported", "passed": True, "score": 1.0}
    assert isinstance(MetricResult(name="m", result=[claim]).result[0], ClaimEntry)
    geval = {"verdict": "PASS", "passed": True, "score_method": "argmax",
             "evaluation_steps": ["s"], "steps_source": "given"}
    assert isinstance(MetricResult(name="m", result=[geval]).result[0], GevalEntry)
    for item in (PROBE, GUARD, RUBRIC, claim, geval):
        dumped = MetricResult(name="m", result=[item]).report_dict()["result"][0]
        assert json.dumps(dumped) == json.dumps(item)


def test_a_hand_made_entry_loads_as_a_plain_entry_with_its_keys_in_order() -> None:
    odd = {"verdict": "maybe", "passed": "yes", "violations": [], "evidence_spans": [],
           "note": 1}
    metric = MetricResult.model_validate({"name": "m", "score": 0.5, "result": [odd]},
                                         strict=True)
    entry = metric.result[0]
    assert type(entry) is ResultEntry
    assert entry.written("verdict") == "maybe" and entry.gate is None
    assert entry.model_dump() == odd and list(entry.model_dump()) == list(odd)


def test_lexical_entries_keep_their_numbers() -> None:
    rouge = {"precision": 0.5, "recall": 0.25, "fmeasure": 1 / 3}
    metric = MetricResult(name="rouge1", score=1 / 3, result=[rouge])
    assert type(metric.result[0]) is ResultEntry
    assert metric.report_dict()["result"] == [rouge]
    assert metric.result[0].written("recall") == 0.25 and metric.result[0].written("x") is None
