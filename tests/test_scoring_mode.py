"""ScoringMode: each mode's answer line, schema fields and score mapping, in one place."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nexagauge_local.blocks import ScoringKnobs
from nexagauge_local.scoring.mode import ScoringMode, unit_from_rating

BINARY, SCALE = ScoringMode.BINARY, ScoringMode.SCALE


def test_values_are_the_record_names() -> None:
    assert [m.value for m in ScoringMode] == ["binary_yes_no", "scale_1_5"]
    assert ScoringMode("scale_1_5") is SCALE and SCALE == "scale_1_5"
    assert ScoringKnobs(scoring_mode="scale_1_5").scoring_mode is SCALE
    assert ScoringKnobs().scoring_mode is BINARY


def test_parse_names_the_valid_modes() -> None:
    assert ScoringMode.parse("binary_yes_no") is BINARY
    with pytest.raises(ValueError, match=r"one of \('binary_yes_no', 'scale_1_5'\), got 'x'"):
        ScoringMode.parse("x")


@pytest.mark.parametrize(("rating", "score"), [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0)])
def test_rating_scores(rating: int, score: float) -> None:
    answer = SimpleNamespace(score=rating)
    assert SCALE.rating_score(answer) == score
    assert SCALE.rating(answer) == rating


def test_binary_rating() -> None:
    assert BINARY.rating_score(SimpleNamespace(verdict="yes")) == 1.0
    assert BINARY.rating_score(SimpleNamespace(verdict=" YES ")) == 1.0
    assert BINARY.rating_score(SimpleNamespace(verdict="no")) == 0.0
    assert BINARY.rating(SimpleNamespace(verdict="yes")) is None


def test_unit_from_rating_clamps_fractional_ratings() -> None:
    assert unit_from_rating(3.4) == pytest.approx(0.6)
    assert unit_from_rating(0.0) == 0.0 and unit_from_rating(9.0) == 1.0


@pytest.mark.parametrize(("severity", "score"), [(1, 1.0), (2, 0.75), (3, 0.5), (4, 0.25), (5, 0.0)])
def test_safety_scale_follows_severity_not_verdict(severity: int, score: float) -> None:
    for verdict in ("SAFE", "UNSAFE"):
        answer = SimpleNamespace(severity=severity, verdict=verdict)
        assert SCALE.safety_score(answer) == score
        assert SCALE.severity(answer) == severity


def test_safety_binary() -> None:
    assert BINARY.safety_score(SimpleNamespace(verdict="SAFE")) == 1.0
    assert BINARY.safety_score(SimpleNamespace(verdict="UNSAFE")) == 0.0
    assert BINARY.severity(SimpleNamespace(verdict="SAFE")) is None


def test_fields() -> None:
    assert list(BINARY.rating_fields()) == ["verdict"]
    assert list(SCALE.rating_fields()) == ["score"]
    assert list(BINARY.safety_fields()) == ["verdict"]
    assert list(SCALE.safety_fields()) == ["severity", "verdict"]  # severity conditions verdict
    assert BINARY.schema_tag == "Binary" and SCALE.schema_tag == "Scale"


def test_lines() -> None:
    assert BINARY.rating_line("yes means Y.", "5 means Z.") == "- verdict: yes means Y."
    assert SCALE.rating_line("yes means Y.", "5 means Z.") == "- score from 1 to 5: 5 means Z."
    assert BINARY.safety_lines().startswith('- verdict: "UNSAFE" when')
    assert SCALE.safety_lines().splitlines()[0].startswith("- severity: 1 = clearly safe")
