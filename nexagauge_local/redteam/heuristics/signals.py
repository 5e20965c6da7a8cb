"""Labelled regex signal families for the heuristic red-team layer (docs/audit.md, heuristic risk).

Why regexes: the probe layer must be free (no model call), offline, deterministic and fast enough
to run on every redteam case. It is not a semantic judge (docs/audit.md: "a cheap first signal,
not a semantic judge"); it produces auditable labels such as ``refusal.cannot_help`` that a reader can
check against the output text, and it feeds the run-level metrics next to the LLM judge.

Each :class:`Signal` has a dotted label, a family and a polarity (``safe`` or ``unsafe``). Every
family is compiled once into one alternation regex used as a cheap gate: most outputs hit no
family, and only when the gate matches are the family's individual patterns run, so each label
is reported exactly (an alternation alone would hide labels whose matches overlap). A signal's
own pattern is compiled the first time its gate opens: compiling all of them up front doubled
the regex work of a run whose outputs open few gates.

A family also implies failure modes (:func:`family_failure_modes`); :func:`detect_failure_modes`
maps matched families onto a probe's own ``failure_modes`` with a forgiving comparison (case,
``_``/``-``/space and substring insensitive), because suites spell the same mode many ways.

Patterns are written to stay decent: toxicity uses mild insults and masked words, never real
slurs spelled out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from nexagauge_local.redteam.heuristics.patterns import (
    DecisiveRule,
    Polarity,
    Spec,
    decisive_rules,
    family_failure_modes,
    family_specs,
)

_FLAGS = re.IGNORECASE | re.MULTILINE


@dataclass(frozen=True, slots=True)
class Signal:
    """One labelled pattern. ``weight`` scales an unsafe hit in the risk formula (default 1)."""

    label: str
    family: str
    polarity: Polarity
    source: str
    weight: float = 1.0

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.source)


@cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, _FLAGS)


@dataclass(frozen=True, slots=True)
class Family:
    """A family's compiled gate (alternation of all its patterns) and its signals."""

    name: str
    polarity: Polarity
    gate: re.Pattern[str]
    signals: tuple[Signal, ...]


@dataclass(frozen=True, slots=True)
class SignalMatch:
    """Labels matched in one text, split by polarity, plus the families that fired."""

    safe_labels: tuple[str, ...]
    unsafe_labels: tuple[str, ...]
    unsafe_weight: float
    families: tuple[str, ...]


def _build_family(name: str, polarity: Polarity, specs: Sequence[Spec]) -> Family:
    signals = tuple(
        Signal(label, name, polarity, src, weight)
        for label, src, weight in specs
    )
    gate = re.compile("|".join(f"(?:{src})" for _, src, _ in specs), _FLAGS)
    return Family(name, polarity, gate, signals)


@lru_cache(maxsize=1)
def signal_families() -> tuple[Family, ...]:
    """All families, compiled once per process (cached, immutable)."""
    return tuple(_build_family(n, p, s) for n, p, s in family_specs())


def all_signals() -> tuple[Signal, ...]:
    """Every signal in reporting order (for docs, listing and tests)."""
    return tuple(s for fam in signal_families() for s in fam.signals)


def match_signals(text: str) -> SignalMatch:
    """Return the distinct labels that match ``text``; each pattern counts at most once.

    Counting distinct labels (not occurrences) keeps a repeated phrase from dominating the risk.
    """
    safe: list[str] = []
    unsafe: list[str] = []
    families: list[str] = []
    weight = 0.0
    if not text:
        return SignalMatch((), (), 0.0, ())
    for fam in signal_families():
        if fam.gate.search(text) is None:
            continue
        hit = False
        for sig in fam.signals:
            if sig.pattern.search(text) is not None:
                hit = True
                if sig.polarity == "safe":
                    safe.append(sig.label)
                else:
                    unsafe.append(sig.label)
                    weight += sig.weight
        if hit:
            families.append(fam.name)
    return SignalMatch(tuple(safe), tuple(unsafe), weight, tuple(families))


@lru_cache(maxsize=1)
def _compiled_decisive() -> tuple[tuple[DecisiveRule, re.Pattern[str]], ...]:
    return tuple((rule, re.compile(rule.pattern, _FLAGS)) for rule in decisive_rules())


def match_decisive(text: str) -> tuple[DecisiveRule, ...]:
    """The decisive rules whose pattern matches ``text``; whether they apply is the caller's
    call, since it depends on the probe (see probes.scoring)."""
    if not text:
        return ()
    return tuple(rule for rule, rx in _compiled_decisive() if rx.search(text) is not None)


def _norm(mode: str) -> str:
    """Compact form for fuzzy comparison: lower case, no ``_``, ``-`` or whitespace."""
    return re.sub(r"[\s_\-]+", "", mode.lower())


def _fuzzy_equal(a: str, b: str) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 3 and short in long_


def detect_failure_modes(probe_modes: Sequence[str], families: Iterable[str]) -> list[str]:
    """Overlap between the probe's failure modes and those implied by the matched families.

    With probe modes, returns the probe's own spellings that fuzzily match an implied mode (or the
    family name). Without probe modes, returns each matched unsafe family's canonical mode, so a
    case with no probe block still feeds the failure-mode histogram.
    """
    implies = family_failure_modes()
    fams = [f for f in families if f in implies]
    if not probe_modes:
        return [implies[f][0] for f in fams]
    implied = [_norm(m) for f in fams for m in (f, *implies[f])]
    out: list[str] = []
    for mode in probe_modes:
        key = _norm(mode)
        if mode not in out and any(_fuzzy_equal(key, imp) for imp in implied):
            out.append(mode)
    return out
