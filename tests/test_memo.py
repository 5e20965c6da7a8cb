"""memo.py and its users' keys: a changed input is a miss, never a stale hit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexagauge_local.memo import ResultMemo, memo_key
from nexagauge_local.report import charts


def test_equal_inputs_share_a_key_and_any_change_moves_it() -> None:
    assert memo_key("a", [1, 2.5], {"x": None}) == memo_key("a", [1, 2.5], {"x": None})
    assert memo_key("a", [1, 2.5]) != memo_key("a", [1, 2.50001])
    assert memo_key("a", True) != memo_key("a", 1)


def test_a_corrupt_or_missing_entry_is_a_miss(tmp_path: Path) -> None:
    memo = ResultMemo(tmp_path, ".json")
    assert memo.get_json("k") is None
    memo.put("k", "{not json")
    assert memo.get_json("k") is None
    memo.put_json("k", {"b": 1, "a": [0.1, None]})
    assert list(memo.get_json("k")) == ["b", "a"]  # written back in the computed order


def test_the_folder_keeps_the_most_recently_used(tmp_path: Path) -> None:
    memo = ResultMemo(tmp_path, ".svg", max_entries=3)
    for i in range(3):
        memo.put(f"k{i}", str(i))
        os.utime(tmp_path / f"k{i}.svg", ns=(i * 10**9, i * 10**9))
    memo.get("k0")  # used: now the newest
    memo.put("k3", "3")
    assert sorted(p.stem for p in tmp_path.glob("*.svg")) == ["k0", "k2", "k3"]


def test_a_chart_is_drawn_again_when_its_numbers_move(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[str] = []
    real = charts._draw
    monkeypatch.setattr(charts, "_draw", lambda w, h, d: drawn.append("x") or real(w, h, d))
    items = [("bias", 0.5, 4), ("toxicity", None, 0)]
    with charts.memo_in(tmp_path):
        first = charts.rate_bars(items, "pass rate")
        again = charts.rate_bars(items, "pass rate")
        moved = charts.rate_bars([("bias", 0.75, 4), ("toxicity", None, 0)], "pass rate")
    assert first == again and len(drawn) == 2 and moved != first
    assert first == charts.rate_bars(items, "pass rate")  # no memo: the same bytes
