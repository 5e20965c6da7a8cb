"""Hash an input dataset file and each record in it, as read, with its source position.

Why per record: when an input file no longer matches its manifest, the auditor needs to know
*which* cases changed (case_id and line), not just that some byte somewhere did.

What "as read" means, per format (verify re-reads the same way, so both sides agree):
- JSONL: each non-blank line without its line ending, read as UTF-8 text (BOM dropped, universal
  newlines, as records.py reads it, so line numbers agree), hashed as UTF-8; ``line`` is 1-based.
- JSON array: the canonical JSON of each element (sorted keys, no spaces); ``line`` is None,
  ``index`` is the element's position.
- CSV/TSV: the canonical JSON of the row as a {header: cell} object (raw cells); ``line`` is the reader's line
  number of the row's last physical line (as records.py reports it).
A line that is not valid JSON is still hashed (its case_id is None), so a broken record is
tracked like any other.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from nexagauge_local.audit.hashing import canonical_json, sha256_bytes, sha256_file
from nexagauge_local.audit.sidecar import RECORDS_NAME, SidecarRef, write_sidecar
from nexagauge_local.records import detect_format  # one rule: verify reads as the run read

ID_KEYS = ("case_id", "id")


class RecordDigest(BaseModel):
    """One input record: where it was, which case it became, and its hash."""

    model_config = ConfigDict(extra="forbid")

    index: int  # 0-based position among the file's records
    line: int | None  # 1-based source line (None for JSON arrays)
    case_id: str | None
    sha256: str


class InputFacts(BaseModel):
    """The dataset file a run read."""

    model_config = ConfigDict(extra="forbid")

    path: str  # as given on the command line (display only; verify takes --input)
    format: str  # jsonl | json | csv
    size: int
    sha256: str
    records: SidecarRef  # RecordDigest lines, in file order


def _case_id(obj: Any) -> str | None:
    if not isinstance(obj, Mapping):
        return None
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in ID_KEYS:
        value = lowered.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def _iter_jsonl(path: Path) -> Iterator[tuple[int | None, bytes, str | None]]:
    # surrogateescape: a line that is not valid UTF-8 is still hashed byte for byte
    with path.open("r", encoding="utf-8-sig", errors="surrogateescape") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            text = line.rstrip("\r\n")
            try:
                cid = _case_id(json.loads(text))
            except ValueError:
                cid = None
            yield lineno, text.encode("utf-8", errors="surrogateescape"), cid


def _iter_json(path: Path) -> Iterator[tuple[int | None, bytes, str | None]]:
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if not isinstance(data, list):
        raise ValueError(f"{path.name}: a JSON input must be an array of records")  # noqa: TRY004
    for item in data:
        yield None, canonical_json(item), _case_id(item)


def _iter_csv(path: Path) -> Iterator[tuple[int | None, bytes, str | None]]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with path.open("r", encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        for row in reader:
            # str(k): a row with more cells than headers has a None key (records.py rejects it)
            row_obj = {str(k): v for k, v in row.items()}
            yield reader.line_num, canonical_json(row_obj), _case_id(row_obj)


_READERS = {"jsonl": _iter_jsonl, "json": _iter_json, "csv": _iter_csv}


def iter_records(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[RecordDigest]:
    """RecordDigest for every record of the file, one at a time (ids from a case_id/id field)."""
    p = Path(path)
    reader = _READERS[fmt or detect_format(p)]
    for i, (line, body, cid) in enumerate(reader(p)):
        yield RecordDigest(index=i, line=line, case_id=cid, sha256=sha256_bytes(body))


def hash_records(path: str | os.PathLike[str], fmt: str | None = None) -> list[RecordDigest]:
    """Every record's digest as a list (verify aligns two lists when an input changed)."""
    return list(iter_records(path, fmt))


def _position(r: RecordDigest) -> int:
    return r.line if r.line is not None else r.index


def _with_run_ids(
    records: Iterator[RecordDigest], case_ids: Iterable[tuple[int, str]]
) -> Iterator[RecordDigest]:
    """Each record with the case id the run gave it: a walk of two position-ordered streams
    side by side, so no map of a million positions is held."""
    ids = iter(case_ids)
    pending = next(ids, None)
    for r in records:
        pos, run_id = _position(r), None
        while pending is not None and pending[0] <= pos:
            if pending[0] == pos:
                run_id = pending[1]  # the last one for a position wins, as a dict would
            pending = next(ids, None)
        yield r if run_id is None else r.model_copy(update={"case_id": run_id})


def hash_input(
    path: str | os.PathLike[str],
    *,
    into: str | os.PathLike[str],
    case_ids: Mapping[int, str] | Iterable[tuple[int, str]] | None = None,
    fmt: str | None = None,
    display: str | None = None,
) -> InputFacts:
    """Hash the input file, and stream its records' digests into ``into``/manifest.records.jsonl.

    ``case_ids`` gives a record's source position -> the case_id the runner actually gave it
    (it may differ from the raw field: `--field` mappings, or a generated id for a record
    without one), as a mapping or as (position, case_id) pairs in position order. The position
    is what records.SourceRef carries: ``line`` for JSONL and CSV, ``index`` for a JSON array.
    When given, it wins over the id read from the record.
    """
    p = Path(path)
    fmt = fmt or detect_format(p)
    pairs = sorted(case_ids.items()) if isinstance(case_ids, Mapping) else (case_ids or ())
    records = _with_run_ids(iter_records(p, fmt), pairs)
    return InputFacts(
        path=display or str(path),
        format=fmt,
        size=p.stat().st_size,
        sha256=sha256_file(p),
        records=write_sidecar(into, RECORDS_NAME, records),
    )
