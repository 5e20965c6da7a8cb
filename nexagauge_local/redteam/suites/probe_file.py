"""Read the probes `generate` should answer, from a prompt suite in any layout.

The layouts (redteam/suites/import_suite.py): the suite format `probes export` writes, dataset records
that already carry a `probe` block (their redteam/context fields kept as they are), a public
suite's own columns (DoNotAnswer, HarmBench, XSTest, ...) and a text file of one prompt a line.
Every problem is reported with file, line and field, all at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexagauge_local.case import SourceRef
from nexagauge_local.records import RecordError
from nexagauge_local.redteam.suites.import_suite import read_suite
from nexagauge_local.redteam.suites.suite_row import SuiteDefaults


@dataclass(frozen=True)
class ProbeItem:
    record: dict[str, Any]  # case_id, input, probe, plus whatever the source record carried
    source: SourceRef

    @property
    def case_id(self) -> str:
        return str(self.record["case_id"])

    @property
    def prompt(self) -> str:
        return str(self.record["input"])


def read_probes(path: Path, fields: Mapping[str, str] | None = None,
                defaults: SuiteDefaults | None = None) -> tuple[list[ProbeItem], list[RecordError]]:
    """The probes in `path` and every problem found; `fields` is `--field LOGICAL=COLUMN`."""
    read = read_suite(path, fields, defaults)
    return [ProbeItem(p.record, p.source) for p in read.probes], read.errors
