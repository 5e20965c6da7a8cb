"""String caps (string_bounds = "clip"): which field a string belongs to and when it has reached
that field's bound, over JSON text arriving in arbitrary token pieces; the batched masking both
engines share, and the row bookkeeping of vLLM's processor (without an engine: the real-engine
tests are in test_vllm_caps.py)."""

from __future__ import annotations

import json

import pytest
import torch

from nexagauge_local.judge.string_caps import (
    StringCaps,
    StringTracker,
    close_strings_,
    padded,
    string_limits,
)
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.judge.vllm.cap_rows import CAPS_ARG, CapRows, caps_limits
from nexagauge_local.judge.vllm.engine import to_wire
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
    closing, row = caps.closing_mask(5, torch.device("cpu")), torch.tensor([0])
    logits = torch.tensor([[5.0, 1.0, float("-inf"), 9.0, 8.0]])
    close_strings_(logits, row, closing)
    assert logits[0].argmax().item() == 1  # '"' (the grammar forbids '",')
    none_allowed = torch.tensor([[5.0, float("-inf"), float("-inf"), 9.0, 8.0]])
    before = none_allowed.clone()
    close_strings_(none_allowed, row, closing)
    assert torch.equal(none_allowed, before)  # the grammar knows better
    assert json.dumps(caps.limits) == '{"violations": 160, "evidence_spans": 160}'


def test_close_strings_masks_only_the_given_rows_in_one_batched_call() -> None:
    ninf = float("-inf")
    logits = torch.tensor([[5.0, 1.0, 9.0],    # at a bound: only '"' (id 1) may follow
                           [5.0, 1.0, 9.0],    # not at a bound: untouched
                           [5.0, ninf, 9.0]])  # at a bound, but the grammar forbids '"'
    before = logits.clone()
    close_strings_(logits, torch.tensor([0, 2]), torch.tensor([False, True, False]))
    assert logits[0].argmax().item() == 1 and torch.isinf(logits[0, [0, 2]]).all()
    assert torch.equal(logits[1], before[1]) and torch.equal(logits[2], before[2])


def test_padded_fits_the_mask_to_wider_or_narrower_logits() -> None:
    closing = torch.tensor([True, False, True])
    assert padded(closing, 5).tolist() == [True, False, True, False, False]
    assert padded(closing, 2).tolist() == [True, False]


# --------------------------------------------------------- vLLM's rows (vllm/cap_rows.py)

TEXTS = ["{", '"', "reasoning", '":"', "ab", "cd", '",', "}", "x"]  # token id -> text
OPEN = [0, 1, 2, 3]  # {"reasoning":"


def test_cap_rows_follow_vllm_batch_changes_and_live_output_lists() -> None:
    rows = CapRows()
    a, b, plain = list(OPEN), list(OPEN), list(OPEN)
    rows.update([], [(0, {"reasoning": 4}, a), (1, {"reasoning": 2}, b), (2, None, plain)], [])
    assert len(rows) == 2  # a request without caps is never looked at
    assert rows.at_bound(TEXTS) == []
    b.append(4)  # "ab": row 1 reached its bound of 2
    assert rows.at_bound(TEXTS) == [1]
    a.append(4)
    a.append(-1)  # async scheduling: a placeholder is not read until it is replaced
    assert rows.at_bound(TEXTS) == [1]
    a[-1] = 5  # "abcd": row 0 at its bound of 4
    assert rows.at_bound(TEXTS) == [0, 1]
    rows.update([], [], [(1, 3, False)])  # one-way move 1 -> 3
    assert rows.at_bound(TEXTS) == [0, 3]
    rows.update([], [], [(0, 3, True)])  # swap
    assert rows.at_bound(TEXTS) == [0, 3]
    b.append(6)  # '",' closes row 0's string (it was b, swapped to 0)
    assert rows.at_bound(TEXTS) == [3]
    rows.update([3], [(0, None, [])], [])  # removed, and a row without caps took index 0
    assert len(rows) == 0 and rows.at_bound(TEXTS) == []


def test_caps_limits_reads_only_our_key_and_rejects_a_bad_value() -> None:
    assert caps_limits(None) is None and caps_limits({"other": 1}) is None
    assert caps_limits({CAPS_ARG: {"reasoning": 400}}) == {"reasoning": 400}
    with pytest.raises(ValueError, match=CAPS_ARG):
        caps_limits({CAPS_ARG: {"reasoning": "400"}})


def test_wire_requests_carry_limits_only_under_clip_with_caps() -> None:
    schema = verdict_schema("scale_1_5", True)
    req = [JudgeRequest([{"role": "user", "content": "x"}], schema, 10)]
    assert to_wire(req, [[1]], clip_strings=False)[0].string_limits is None
    assert to_wire(req, [[1]], clip_strings=True, string_caps=False)[0].string_limits is None
    [capped] = to_wire(req, [[1]], clip_strings=True)
    assert capped.string_limits == {"reasoning": 400, "violations": 160, "evidence_spans": 160}
    assert "maxLength" not in json.dumps(capped.json_schema)  # the cheap grammar
