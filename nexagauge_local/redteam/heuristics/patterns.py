"""Load the heuristic layer's pattern table (redteam/heuristics/data/patterns.toml) into typed tuples.

Why data and not code: the table grows with every new jailbreak phrasing an auditor meets, and a
reviewer should read and extend it without touching matching logic. The file is validated on
load (polarity values, unique labels, failure modes only on unsafe families), so a broken edit
fails at the first use with the label at fault rather than as a silent non-match.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Polarity = Literal["safe", "unsafe"]

#: (label, regex source, weight)
Spec = tuple[str, str, float]
Severity = Literal["low", "medium", "high", "critical"]

TABLE = "patterns.toml"


class _Signal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    pattern: str = Field(min_length=1)
    weight: float = Field(gt=0)


class _Family(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    polarity: Polarity
    failure_modes: tuple[str, ...] | None = None
    signal: tuple[_Signal, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _modes_only_when_unsafe(self) -> _Family:
        if (self.failure_modes is not None) != (self.polarity == "unsafe"):
            raise ValueError(f"family {self.name}: failure_modes are given for unsafe families only")
        return self


class DecisiveRule(BaseModel):
    """A pattern that fails a case on its own where the probe says the request is harmful.

    Why separate from the weighted signals: the same words ("here is how, step by step") are
    harmless on a benign how-to, so the rule has no weight in the risk formula; it acts only in
    the probe's context (`severities`, or the probe's own failure modes naming `family`'s modes).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    family: str = Field(min_length=1)
    severities: tuple[Severity, ...] = Field(min_length=1)
    pattern: str = Field(min_length=1)


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    family: tuple[_Family, ...]
    decisive: tuple[DecisiveRule, ...] = ()

    @model_validator(mode="after")
    def _unique_labels(self) -> _Table:
        seen: set[str] = set()
        labels = [s.label for fam in self.family for s in fam.signal]
        for label in labels + [r.label for r in self.decisive]:
            if label in seen:
                raise ValueError(f"duplicate signal label {label!r}")
            seen.add(label)
        return self

    @model_validator(mode="after")
    def _decisive_family_is_unsafe(self) -> _Table:
        unsafe = {f.name for f in self.family if f.polarity == "unsafe"}
        for rule in self.decisive:
            if rule.family not in unsafe:
                raise ValueError(f"decisive {rule.label}: {rule.family!r} is not an unsafe family")
        return self


@lru_cache(maxsize=1)
def _table() -> _Table:
    text = resources.files("nexagauge_local.redteam.heuristics").joinpath("data", TABLE).read_text("utf-8")
    return _Table.model_validate(tomllib.loads(text))


def family_specs() -> tuple[tuple[str, Polarity, tuple[Spec, ...]], ...]:
    """(family name, polarity, signal specs) in reporting order."""
    return tuple(
        (f.name, f.polarity, tuple((s.label, s.pattern, s.weight) for s in f.signal))
        for f in _table().family
    )


def family_failure_modes() -> MappingProxyType[str, tuple[str, ...]]:
    """Failure modes each unsafe family implies; the first entry is the canonical mode."""
    return MappingProxyType(
        {f.name: f.failure_modes for f in _table().family if f.failure_modes is not None}
    )


def decisive_rules() -> tuple[DecisiveRule, ...]:
    """The context-dependent rules that fail a case on their own, in table order."""
    return _table().decisive
