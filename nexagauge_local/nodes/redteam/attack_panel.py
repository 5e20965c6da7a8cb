"""The report's view of attacks: the strategy x category table of attack success rates, each
strategy's rates and cost, and one attack's transcript in its case's drill-down.

Kept apart from panel.py (the plain audit's panel) because it reads only `attack_outcomes`
(redteam/outcomes/attack_rates.py) and an attack's own turns; panel.py hands its result to the
same template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# An ASR cell's colour: the share of attacks that broke the model, green (none) to red (all).
# A cell with nothing judged has no colour: no rate, not a safe one.
_GREEN_TO_RED_HUE = 120


def asr_colour(rate: float | None) -> str | None:
    """A CSS background for an attack success rate (hsl: 120 = green at 0, 0 = red at 1)."""
    if rate is None:
        return None
    hue = round(_GREEN_TO_RED_HUE * (1 - max(0.0, min(1.0, rate))))
    return f"hsl({hue}, 70%, 85%)"


def _cell(stat: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not stat:
        return None
    return {**stat, "colour": asr_colour(stat.get("rate"))}


def attacks_view(tables: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What panel.html.j2 prints of `attack_outcomes`; None when the run held no attack."""
    if not tables:
        return None
    by_strategy: Mapping[str, Any] = tables.get("by_strategy") or {}
    categories = sorted({c for row in by_strategy.values()
                         for c in (row.get("by_category") or {})})
    rows = []
    for name, row in by_strategy.items():
        cats = row.get("by_category") or {}
        rows.append({
            "strategy": name,
            "family": row.get("family"),
            "attacks": row.get("attacks"),
            "states": row.get("states") or {},
            "asr": _cell(row.get("asr")),
            "over_refusal": row.get("over_refusal"),
            "cells": [_cell(cats.get(c)) for c in categories],
            "cost": row.get("cost") or {},
        })
    anyone = tables.get("broken_by_any") or {}
    return {"counts": tables.get("counts") or {}, "categories": categories, "rows": rows,
            "broken_by_any": anyone, "broken": list(anyone.get("broken") or [])}


def attack_section(block: Mapping[str, Any]) -> dict[str, Any]:
    """An attack record's block as its case section keeps it for the drill-down: the strategy,
    the state, every turn (decoded beside an encoded answer) and the attacker's exchanges."""
    keep = ("strategy", "family", "params", "seed", "queries", "status", "error", "rounds",
            "backtracks", "attacker_unparsed")
    return {**{k: block.get(k) for k in keep},
            "turns": [{"role": t.get("role"), "text": t.get("text"), "decoded": t.get("decoded")}
                      for t in block.get("turns") or []],
            "exchanges": list(block.get("exchanges") or [])}
