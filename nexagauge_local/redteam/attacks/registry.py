"""Naming strategies on the command line: the available set, and picking from it.

Why built per call rather than a module-level table: the available set depends on the run (the
user's template files, the many-shot and best-of-n sizes), and a table filled at import time
would be shared, mutable state between runs in one process (the API, the tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from nexagauge_local.redteam.attacks.augment import BestOfN
from nexagauge_local.redteam.attacks.encoding_strategy import encoding_strategies
from nexagauge_local.redteam.attacks.strategy import FAMILIES, StaticStrategy
from nexagauge_local.redteam.attacks.template_file import load_template_files
from nexagauge_local.redteam.attacks.templates import template_strategies

ALL = "all"


class UnknownStrategyError(ValueError):
    """A strategy name that is neither ``all``, a family nor an available strategy."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        self.name, self.valid = name, tuple(valid)
        super().__init__(f"unknown attack strategy {name!r}; valid: {', '.join(self.valid)}")


def static_strategies(
    template_files: Sequence[Path] = (), n_shots: int = 8, best_of: int = 8
) -> Mapping[str, StaticStrategy]:
    """Every static strategy by name, in listing order: encodings, templates, augmentation,
    then the templates of ``template_files``. Raises TemplateFileError for a bad file."""
    strategies: list[StaticStrategy] = [
        *encoding_strategies(),
        *template_strategies(n_shots),
        BestOfN(best_of),
        *load_template_files(template_files),
    ]
    return MappingProxyType({s.name: s for s in strategies})


def resolve(names: Sequence[str], available: Mapping[str, StaticStrategy]) -> list[StaticStrategy]:
    """The strategies the names select, in the order named, each once: ``all``, a family
    (``encoding``, ``template``, ``augmentation``) or an exact name."""
    chosen: dict[str, StaticStrategy] = {}
    for name in names:
        if name == ALL:
            picked = list(available.values())
        elif name in FAMILIES:
            picked = [s for s in available.values() if s.family == name]
        elif name in available:
            picked = [available[name]]
        else:
            raise UnknownStrategyError(name, [ALL, *FAMILIES, *available])
        for strategy in picked:
            chosen.setdefault(strategy.name, strategy)
    return list(chosen.values())
