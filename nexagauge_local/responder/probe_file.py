"""Read the probes `generate` should answer: a bare probe suite or dataset records with a probe.

Two shapes are accepted because audits start from either: the suite format `probes export`
writes (one probe per line: id, category, severity, failure_modes, task, input, ...) and
dataset records that already carry a `probe` block (and maybe redteam/context fields, kept as
they are). Every problem is reported with file, line and field, all at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.case import SourceRef
from nexagauge_local.lone_surrogates import lone_surrogates
from nexagauge_local.probes.suite import probe_record
from nexagauge_local.records import RecordError, iter_raw

# Fields a model's previous answer may sit in; a probe record is a question, not an answer.
_ANSWER_FIELDS = ("output", "response", "actual_output", "answer")


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


def _to_record(data: dict[str, Any]) -> tuple[dict[str, Any] | None, str, str]:
    """(record, field, error) for one raw item."""
    if isinstance(data.get("probe"), dict):
        record = {k: v for k, v in data.items() if k not in _ANSWER_FIELDS}
        block = data["probe"]
        record.setdefault("case_id", block.get("id"))
        if not record.get("input"):
            record["input"] = block.get("input")
        field_prefix = "probe."
    else:
        block = data
        record = probe_record(data)
        field_prefix = ""
    try:
        ProbeBlock.model_validate(block)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        return None, f"{field_prefix}{loc}", err["msg"]
    if not record.get("case_id"):
        return None, f"{field_prefix}id", "a probe needs an id (used as the case_id)"
    if not isinstance(record.get("input"), str) or not record["input"].strip():
        return None, "input", "a probe needs a non-empty input to send to the model"
    record["case_id"] = str(record["case_id"])
    return record, "", ""


def read_probes(path: Path) -> tuple[list[ProbeItem], list[RecordError]]:
    items: list[ProbeItem] = []
    errors: list[RecordError] = []
    seen: dict[str, SourceRef] = {}
    for raw in iter_raw(path):
        if raw.data is None:
            errors.append(RecordError(raw.source, None, raw.error or "unreadable record"))
            continue
        broken = [RecordError(raw.source, f, m) for f, m in lone_surrogates(raw.data)]
        if broken:  # the model under test would be sent other text than the file says
            errors.extend(broken)
            continue
        record, field, message = _to_record(raw.data)
        if record is None:
            errors.append(RecordError(raw.source, field, message))
            continue
        first = seen.setdefault(record["case_id"], raw.source)
        if first is not raw.source:
            errors.append(
                RecordError(
                    raw.source, "id", f"duplicate probe id {record['case_id']!r} (first at {first})"
                )
            )
            continue
        items.append(ProbeItem(record, raw.source))
    return items, errors
