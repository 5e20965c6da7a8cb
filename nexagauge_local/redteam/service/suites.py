"""The `probes` services: the shipped red-team suite, filtered, counted and written as JSONL,
and a user's own prompt suite imported into the same format.

Why a service: `probes export` and `probes import` output is the input of `generate`, so
selecting, importing and writing probes is part of the audit loop a script runs too, not a
detail of the command line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.app.errors import InputError, OutputDirError, ProbeFileError
from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.records import RecordError
from nexagauge_local.redteam.suites.bundled import load_suite
from nexagauge_local.redteam.suites.import_suite import read_suite
from nexagauge_local.redteam.suites.suite_row import SuiteDefaults, parse_suite_fields

Probe = dict[str, Any]


class ProbeImportError(ProbeFileError):
    """A suite to import has bad rows; one RecordError per problem, nothing was written."""

    def __init__(self, path: Path, errors: list[RecordError]) -> None:
        super().__init__(path, errors)
        self.args = (f"{len(errors)} problem(s) in {path}; nothing was written.",)


def select_probes(categories: Sequence[str] = (), severities: Sequence[str] = ()) -> list[Probe]:
    """The suite's probes in its order, kept to the given categories and severities (an empty
    filter keeps all)."""
    probes = load_suite()
    if categories:
        probes = [p for p in probes if p["category"] in categories]
    if severities:
        probes = [p for p in probes if p["severity"] in severities]
    return probes


def suite_fields(pairs: Sequence[str]) -> dict[str, str]:
    """`--field LOGICAL=COLUMN` pairs of a prompt suite; a malformed one is an InputError."""
    try:
        return parse_suite_fields(pairs)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def import_probes(path: Path, fields: Sequence[str] = (),
                  defaults: SuiteDefaults | None = None) -> list[Probe]:
    """The probes of a prompt suite in any layout (docs/audit.md "Prompt suites as you have
    them"), in the format `probes export` writes; any bad row raises ProbeImportError."""
    read = read_suite(path, suite_fields(fields), defaults)
    if read.errors:
        raise ProbeImportError(path, read.errors)
    probes: list[Probe] = []
    for item in read.probes:  # a record's case_id and input are its probe's id and input
        block = {**item.record["probe"], "id": item.record["case_id"],
                 "input": item.record["input"]}
        probes.append(ProbeBlock.model_validate(block).model_dump())
    return probes


def severity_counts(probes: Iterable[Probe]) -> dict[str, Counter[str]]:
    """Per category (sorted), how many probes of each severity."""
    by_cat: dict[str, Counter[str]] = {}
    for p in probes:
        by_cat.setdefault(p["category"], Counter())[p["severity"]] += 1
    return dict(sorted(by_cat.items()))


def expect_counts(probes: Iterable[Probe]) -> dict[str, Counter[str]]:
    """Per category (sorted), how many probes are to be refused and how many answered."""
    by_cat: dict[str, Counter[str]] = {}
    for p in probes:
        by_cat.setdefault(p["category"], Counter())[p.get("expect", "refuse")] += 1
    return dict(sorted(by_cat.items()))


def probes_jsonl(probes: Iterable[Probe]) -> str:
    """One probe per line, UTF-8 kept as is, ending in a newline (empty for no probe)."""
    lines = [json.dumps(p, ensure_ascii=False) for p in probes]
    return "\n".join(lines) + ("\n" if lines else "")


def write_probes(probes: Sequence[Probe], output: Path) -> int:
    """Write the probes as JSONL to OUTPUT (its folder created); returns how many. A place
    that cannot be written is an OutputDirError naming it, not a traceback."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(probes_jsonl(probes), encoding="utf-8")
    except OSError as exc:
        raise OutputDirError(f"--output {output}: cannot write it ({exc.strerror or exc})"
                             ) from None
    return len(probes)
