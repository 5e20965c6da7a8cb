"""The `probes` services: the shipped red-team suite, filtered, counted and written as JSONL.

Why a service: `probes export` output is the input of `generate`, so selecting and writing
the probes is part of the audit loop a script runs too, not a detail of the command line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.probes.suite import load_suite

Probe = dict[str, Any]


def select_probes(categories: Sequence[str] = (), severities: Sequence[str] = ()) -> list[Probe]:
    """The suite's probes in its order, kept to the given categories and severities (an empty
    filter keeps all)."""
    probes = load_suite()
    if categories:
        probes = [p for p in probes if p["category"] in categories]
    if severities:
        probes = [p for p in probes if p["severity"] in severities]
    return probes


def severity_counts(probes: Iterable[Probe]) -> dict[str, Counter[str]]:
    """Per category (sorted), how many probes of each severity."""
    by_cat: dict[str, Counter[str]] = {}
    for p in probes:
        by_cat.setdefault(p["category"], Counter())[p["severity"]] += 1
    return dict(sorted(by_cat.items()))


def probes_jsonl(probes: Iterable[Probe]) -> str:
    """One probe per line, UTF-8 kept as is, ending in a newline (empty for no probe)."""
    lines = [json.dumps(p, ensure_ascii=False) for p in probes]
    return "\n".join(lines) + ("\n" if lines else "")


def write_probes(probes: Sequence[Probe], output: Path) -> int:
    """Write the probes as JSONL to OUTPUT (its folder created); returns how many."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(probes_jsonl(probes), encoding="utf-8")
    return len(probes)
