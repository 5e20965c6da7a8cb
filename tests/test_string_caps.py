"""The decode loop's string caps (string_bounds = "clip"): which field a string belongs to and
when it has reached that field's bound, over JSON text arriving in arbitrary token pieces."""

from __future__ import annotations

import json

import pytest
import torch

from nexagauge_local.judge.hf.string_caps import StringCaps, StringTracker, string_limits
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.redteam import verdict_schema


def test_limits_come_from_string_and_list_of_string_properties() -> None:
    js = verdict_schema("scale_1_5", True).model_json_schema()
    assert string_limits(js) == {"reasoning": 400, "violations": 160, "evidence_spans": 160}
    nested = string_limits(claim_verdicts_schema(3, "binary_yes_no", True).model_json_schema())
    assert nested and all(v > 0 for v in nested.values())  # limits inside list items found


def _states(text: str, limits: dict[str, int], piece: int) -> list[tuple[bool, int | None]]:
    """(at_limit, limit) after each piece of `text` cut every `piece` characters."""
    t, out = StringTracker(limits), []
    for i in range(0, len(text), piece):
        t.feed(text[i : i + piece])
        out.append((t.at_limit, t.limit if t.in_string else None))
    return out


@pytest.mark.parametrize("piece", [1, 3, 7])
def test_tracker_reaches_the_limit_only_in_bounded_value_strings(piece: int) -> None:
    limits = {"reasoning": 5, "violations": 3}
    t = StringTracker(limits)
    t.feed('{"reasoning":"abcd')
    assert t.in_string and t.limit == 5 and not t.at_limit
    t.feed("e")
    assert t.at_limit  # 5 characters: only a closing token may follow
    t.feed('","verdict":"UNSAFE","violations":["ab')
    assert t.limit == 3 and not t.at_limit  # list items take the list's bound
    t.feed('c')
    assert t.at_limit
    t.feed('","x\\"')  # an escaped quote does not close the string
    assert t.in_string and t.chars == 3 and t.at_limit
    # keys are never capped, whatever their length, in any piece size
    text = '{"a_very_long_key_name":"x","reasoning":"' + "y" * 9 + '"}'
    states = _states(text, limits, piece)
    assert not any(at for at, lim in states if lim is None)
    assert any(at for at, _ in states)


def test_restrict_keeps_only_closing_tokens_the_grammar_allows() -> None:
    caps = StringCaps(verdict_schema().model_json_schema(), ["a", '"', '",', "b", ' "'])
    logits = torch.tensor([5.0, 1.0, float("-inf"), 9.0, 8.0])
    assert caps.restrict(logits).argmax().item() == 1  # '"' (the grammar forbids '",')
    none_allowed = torch.tensor([5.0, float("-inf"), float("-inf"), 9.0, 8.0])
    assert torch.equal(caps.restrict(none_allowed), none_allowed)  # the grammar knows better
    assert json.dumps(caps.limits) == '{"violations": 160, "evidence_spans": 160}'
