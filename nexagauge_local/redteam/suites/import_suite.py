"""Read a prompt suite as users have it: any file the project reads, or one prompt a line.

Why one reader for every layout: `generate` and `probes import` must agree on what a file
means, and a public suite (DoNotAnswer JSONL, HarmBench CSV, XSTest, a text file of prompts)
should be answered as it ships, not after a conversion script. The records readers (readers/)
bring the formats (JSON, JSONL, CSV/TSV, Parquet, Arrow, compressed); suite_row.py maps each
row's columns onto a probe block; records that already carry a `probe` block are read as they
always were. Every problem is one `FILE:LINE: field: message`, all of them at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.case import SourceRef
from nexagauge_local.lone_surrogates import lone_surrogates
from nexagauge_local.readers.compressed import inner_suffix
from nexagauge_local.records import (
    RawRecord,
    RecordError,
    check_file,
    detect_format,
    iter_raw,
    mapped_columns_found,
    open_text,
)
from nexagauge_local.redteam.suites.suite_row import (
    ANSWER_FIELDS,
    RowReader,
    SuiteDefaults,
    probe_id_of,
)

TEXT_SUFFIX = ".txt"
_SHOWN_COLUMNS = 20  # a wide table's column list is cut here in messages


@dataclass(frozen=True)
class SuiteProbe:
    record: dict[str, Any]  # case_id, input, probe, plus whatever a probe-block record carried
    source: SourceRef


@dataclass
class SuiteRead:
    """The good probes in file order and every problem found."""

    probes: list[SuiteProbe] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)


def is_prompt_list(path: Path, name: str) -> bool:
    """A text file of one prompt a line: named .txt (compressed too), or content that is
    neither JSON nor a table (a JSONL guess whose first line does not start a JSON value)."""
    if path.is_dir():
        return False
    if inner_suffix(path) == TEXT_SUFFIX:
        return True
    if inner_suffix(path) in (".jsonl", ".ndjson", ".json") or detect_format(path, name) != "jsonl":
        return False
    with open_text(path, name) as fh:
        first = next((line.strip() for line in fh if line.strip()), "")
    return not first.startswith(("{", "["))


def iter_prompt_lines(path: Path, name: str) -> Iterator[RawRecord]:
    """One record per prompt line; blank lines and `#` comments are skipped."""
    with open_text(path, name) as fh:
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if text and not text.startswith("#"):
                yield RawRecord({"prompt": text}, SourceRef(file=name, line=lineno))


def probe_block_record(data: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    """A dataset record carrying a `probe` block, kept as it is (its own fields and node
    blocks too) less any previous answer; its case_id and input fall back to the block's."""
    record = {k: v for k, v in data.items() if k not in ANSWER_FIELDS}
    block = data["probe"]
    record.setdefault("case_id", block.get("id"))
    if not record.get("input"):
        record["input"] = block.get("input")
    try:
        ProbeBlock.model_validate(block)
    except ValidationError as exc:
        err = exc.errors()[0]
        return None, [("probe." + ".".join(str(p) for p in err["loc"]), err["msg"])]
    if not record.get("case_id"):
        return None, [("probe.id", "a probe needs an id (used as the case_id)")]
    if not isinstance(record.get("input"), str) or not record["input"].strip():
        return None, [("input", "a probe needs a non-empty input to send to the model")]
    record["case_id"] = str(record["case_id"])
    return record, []


class _SuiteScan:
    """What one pass over a file gathers: probes, errors, and the columns seen for messages."""

    def __init__(self, name: str, reader: RowReader) -> None:
        self.name = name
        self.reader = reader
        self.read = SuiteRead()
        self.columns: dict[str, None] = {}  # of rows read through the column names, in order
        self.mapped_found: set[str] = set()
        self.table_rows = 0
        self.prompt_rows = 0
        self.no_prompt: list[RecordError] = []  # errors of rows lacking any prompt column
        self.seen: dict[str, SourceRef] = {}

    def add(self, raw: RawRecord) -> None:
        if raw.data is None:
            self.read.errors.append(RecordError(raw.source, None, raw.error or "unreadable record"))
            return
        broken = [RecordError(raw.source, f, m) for f, m in lone_surrogates(raw.data)]
        if broken:  # the model under test would be sent other text than the file says
            self.read.errors.extend(broken)
            return
        if isinstance(raw.data.get("probe"), dict):
            record, problems = probe_block_record(raw.data)
            if record is None:
                self.read.errors.extend(RecordError(raw.source, f, m) for f, m in problems)
            elif self._unique(record["case_id"], record["input"], raw.source):
                self.read.probes.append(SuiteProbe(record, raw.source))
            return
        self._table_row(raw.data, raw.source)

    def _table_row(self, data: dict[str, Any], source: SourceRef) -> None:
        self.table_rows += 1
        self.columns.update(dict.fromkeys(str(k) for k in data))
        self.mapped_found |= mapped_columns_found(data, self.reader.fields)
        has_prompt = self.reader.prompt_column(data) is not None
        self.prompt_rows += has_prompt
        row = self.reader.probe(data)
        errors = [RecordError(source, f, m) for f, m in row.errors]
        (self.read.errors if has_prompt else self.no_prompt).extend(errors)
        unique = row.id is None or self._unique(row.id, (row.block or {}).get("input"), source)
        if row.block is not None and unique:
            block = row.block
            self.read.probes.append(SuiteProbe(
                {"case_id": block["id"], "input": block["input"], "probe": block}, source))

    def _unique(self, case_id: str, prompt: str | None, source: SourceRef) -> bool:
        """Whether `case_id` is new; a repeat is reported naming the line that had it first."""
        first = self.seen.setdefault(case_id, source)
        if first is source:
            return True
        same = " (the same prompt)" if prompt and case_id == probe_id_of(prompt) else ""
        self.read.errors.append(RecordError(
            source, "id", f"duplicate probe id {case_id!r}{same} (first at {first})"))
        return False

    def finish(self) -> SuiteRead:
        """The file-level problems first: no prompt column at all, a --field column that no
        row has, no probe at all; else the per-row ones."""
        whole = SourceRef(file=self.name)
        columns = list(self.columns)
        shown = ", ".join(columns[:_SHOWN_COLUMNS]) + (" ..." if len(columns) > _SHOWN_COLUMNS else "")
        file_errors: list[RecordError] = []
        missing = {k: v for k, v in self.reader.fields.items() if v not in self.mapped_found}
        if self.table_rows and not self.prompt_rows and "input" not in missing:
            names = ", ".join(self.reader.names("input"))
            file_errors.append(RecordError(
                whole, None, f"no prompt column (looked for: {names}; name yours with --field "
                             f"input=COLUMN); its columns are: {shown}"))
        if missing and self.table_rows:
            pairs = ", ".join(f"{k}={v}" for k, v in missing.items())
            file_errors.append(RecordError(
                whole, "--field", f"{pairs}: no row has such a column; its columns are: {shown}"))
        elif self.reader.fields and not self.table_rows and self.read.probes:
            file_errors.append(RecordError(
                whole, "--field", "every record carries a `probe` block, which is read as it "
                                  "is; leave --field out"))
        if file_errors:
            return SuiteRead([], file_errors + self.read.errors)
        self.read.errors.extend(self.no_prompt)
        self.read.errors.sort(key=lambda e: (e.source.line or 0, e.source.index or 0))
        if not self.read.probes and not self.read.errors:
            self.read.errors.append(RecordError(whole, None, "no probes in the file"))
        return self.read


def read_suite(path: Path, fields: Mapping[str, str] | None = None,
               defaults: SuiteDefaults | None = None, display: str | None = None) -> SuiteRead:
    """Every probe in `path`, whatever its layout (module doc). A file that cannot be read at
    all (missing, empty, not text, corrupt) raises DatasetError, as every reader does."""
    name = display or str(path)
    check_file(path, name)
    reader = RowReader(fields or {}, defaults or SuiteDefaults())
    scan = _SuiteScan(name, reader)
    if is_prompt_list(path, name):
        if reader.fields:
            return SuiteRead([], [RecordError(
                SourceRef(file=name), "--field", "a text file of one prompt a line has no "
                                                 "columns to map; leave --field out")])
        rows: Iterator[RawRecord] = iter_prompt_lines(path, name)
    else:
        rows = iter_raw(path, display=name)
    for raw in rows:
        scan.add(raw)
    return scan.finish()

