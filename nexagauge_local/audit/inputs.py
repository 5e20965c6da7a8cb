"""Hash an input dataset and each record in it, as read, with its source position.

Why per record: when an input file no longer matches its manifest, the auditor needs to know
*which* cases changed (case_id and line), not just that some byte somewhere did.

What "as read" means, per format (verify re-reads the same way, so both sides agree):
- JSONL: each non-blank line without its line ending, read as UTF-8 text (BOM dropped, universal
  newlines, as records.py reads it, so line numbers agree), hashed as UTF-8; ``line`` is 1-based.
- JSON array: the canonical JSON of each element (sorted keys, no spaces); ``line`` is None,
  ``index`` is the element's position.
- CSV/TSV: the canonical JSON of the row as a {header: cell} object (raw cells); ``line`` is the reader's line
  number of the row's last physical line (as records.py reports it).
- Parquet, Arrow and dataset folders, and records in memory (a DataFrame): the canonical JSON
  of each row as the run read it; ``index`` is the row number.
A compressed file's records are those of its decompressed text; the file's own hash is of its
compressed bytes, as stored. A line that is not valid JSON is still hashed (its case_id is
None), so a broken record is tracked like any other.

Two identities, so that "the same input" can be checked whatever carried it:
- ``sha256``: the bytes read (a file as stored; a pipe's or stdin's bytes as they came; for a
  folder, combined_digest of its dataset files; for records in memory, their canonical JSONL);
- ``records_sha256``: the records' digests in order, one per line: equal for a file and its
  compressed copy, or for the file behind a pipe, which a pipe cannot be read again to show.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from nexagauge_local.audit.hashing import canonical_json, combined_digest, sha256_bytes, sha256_file
from nexagauge_local.audit.sidecar import RECORDS_NAME, SidecarRef, write_sidecar
from nexagauge_local.readers import (
    FORMATS,
    DatasetError,
    RawRecord,
    compression_of,
    detect_format,
    is_stream,
)
from nexagauge_local.readers.compressed import open_bytes
from nexagauge_local.readers.json_stream import NotAnArray, iter_array
from nexagauge_local.readers.limits import allow_long_csv_fields
from nexagauge_local.readers.streams import spool_path
from nexagauge_local.readers.tables import TABLE_FORMATS, folder_files, iter_table
from nexagauge_local.readers.text import csv_delimiter, sniff_encoding

ID_KEYS = ("case_id", "id")
MEMORY_FORMAT = "records"  # the format of records handed to evaluate() in memory
Origin = Literal["file", "folder", "stream", "memory"]
# A save_to_disk folder's files that describe its rows: part of its identity.
_FOLDER_META = ("state.json", "dataset_info.json")


class RecordDigest(BaseModel):
    """One input record: where it was, which case it became, and its hash."""

    model_config = ConfigDict(extra="forbid")

    index: int  # 0-based position among the file's records
    line: int | None  # 1-based source line (None for JSON arrays and tables)
    case_id: str | None
    sha256: str


class InputFacts(BaseModel):
    """The dataset a run read."""

    model_config = ConfigDict(extra="forbid")

    path: str  # as given on the command line (display only; verify takes --input)
    format: str  # jsonl | json | csv | parquet | arrow | records (in memory)
    size: int
    sha256: str
    records: SidecarRef  # RecordDigest lines, in file order
    # manifest/3: how the input arrived, its compression, the identity of its records
    origin: Origin = "file"
    compression: str | None = None
    records_sha256: str | None = None


def _case_id(obj: Any) -> str | None:
    if not isinstance(obj, Mapping):
        return None
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in ID_KEYS:
        value = lowered.get(key)
        if value not in (None, ""):
            return str(value)
    return None


Rows = Iterator[tuple[int | None, bytes, str | None]]


@contextmanager
def _text(path: Path, newline: str | None = None,
          encoding: str = "utf-8-sig") -> Iterator[io.TextIOWrapper]:
    # surrogateescape: a line that is not valid UTF-8 is still hashed byte for byte
    with open_bytes(path, str(path)) as raw, io.TextIOWrapper(
            raw, encoding=encoding, errors="surrogateescape", newline=newline) as fh:
        yield fh


def _array_encoding(path: Path) -> str:
    """UTF-16 or UTF-32 where a byte-order mark says so, as the run decoded it; else UTF-8.

    Why only for a JSON array: its records are hashed as parsed values, so the text must be
    decoded to be parsed at all (read as UTF-8, a UTF-16 array was no JSON). JSONL and CSV
    lines are hashed as read, and keep hashing as recorded manifests did.
    """
    try:
        encoding = sniff_encoding(path)
    except DatasetError:
        return "utf-8-sig"
    return encoding if encoding.startswith(("utf-16", "utf-32")) else "utf-8-sig"


def _iter_jsonl(path: Path) -> Rows:
    with _text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            text = line.rstrip("\r\n")
            try:
                cid = _case_id(json.loads(text))
            except (ValueError, RecursionError):  # a bad record the run listed: hashed as is
                cid = None
            yield lineno, text.encode("utf-8", errors="surrogateescape"), cid


def _iter_json(path: Path) -> Rows:
    # element by element, as the run read it: hashing must not hold a large array whole
    with _text(path, encoding=_array_encoding(path)) as fh:
        try:
            for item in iter_array(fh):
                yield None, canonical_json(item), _case_id(item)
        except NotAnArray:
            raise ValueError(f"{path.name}: a JSON input must be an array of records") from None


def _iter_csv(path: Path) -> Rows:
    delimiter = csv_delimiter(path)
    allow_long_csv_fields()  # as the run read it (readers/limits.py)
    with _text(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        for row in reader:
            # str(k): a row with more cells than headers has a None key (records.py rejects it)
            row_obj = {str(k): v for k, v in row.items()}
            yield reader.line_num, canonical_json(row_obj), _case_id(row_obj)


def _iter_rows(raws: Iterable[RawRecord]) -> Rows:
    for raw in raws:
        body = raw.data if raw.data is not None else {"unreadable": raw.error}
        yield None, canonical_json(body), _case_id(raw.data)


_READERS = {"jsonl": _iter_jsonl, "json": _iter_json, "csv": _iter_csv}


def _digests(rows: Rows) -> Iterator[RecordDigest]:
    for i, (line, body, cid) in enumerate(rows):
        yield RecordDigest(index=i, line=line, case_id=cid, sha256=sha256_bytes(body))


def iter_records(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[RecordDigest]:
    """RecordDigest for every record of the file or folder, one at a time (ids from a
    case_id/id field)."""
    p = Path(path)
    fmt = fmt if fmt in FORMATS else detect_format(p)
    if fmt in TABLE_FORMATS:
        return _digests(_iter_rows(iter_table(p, fmt, str(p))))
    return _digests(_READERS[fmt](p))


def hash_records(path: str | os.PathLike[str], fmt: str | None = None) -> list[RecordDigest]:
    """Every record's digest as a list (verify aligns two lists when an input changed)."""
    return list(iter_records(path, fmt))


def records_digest(records: Iterable[RecordDigest]) -> str:
    """The identity of a sequence of records: their digests in order, one per line."""
    h = hashlib.sha256()
    for r in records:
        h.update(f"{r.sha256}\n".encode())
    return h.hexdigest()


def input_identity(path: str | os.PathLike[str]) -> tuple[int, str]:
    """(size, sha256) of an input as stored: a file's bytes, or a dataset folder's files
    (combined_digest of its data files and the save_to_disk metadata beside them)."""
    p = Path(path)
    if not p.is_dir():
        return p.stat().st_size, sha256_file(p)
    files = folder_files(p, str(p))[1] + [p / m for m in _FOLDER_META if (p / m).is_file()]
    return sum(f.stat().st_size for f in files), combined_digest(
        {f.name: sha256_file(f) for f in files})


@contextmanager
def readable_input(path: str | os.PathLike[str]) -> Iterator[Path]:
    """`path`, or, for a pipe or FIFO (`--input <(zcat data.jsonl.gz)`), a private copy of
    its bytes: verify and reproduce read an input more than once, as a run does."""
    p = Path(path)
    if not is_stream(p):
        yield p
        return
    with tempfile.TemporaryDirectory(prefix="nexagauge-input-") as tmp:
        yield spool_path(p, Path(tmp), str(p))


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


class _Tally:
    """Passes records through, keeping their records_digest and (for records in memory) the
    hash and size of their canonical JSONL, so one pass writes the sidecar and both hashes."""

    def __init__(self) -> None:
        self.records = hashlib.sha256()
        self.lines = hashlib.sha256()
        self.size = 0

    def watch(self, records: Iterator[RecordDigest]) -> Iterator[RecordDigest]:
        for r in records:
            self.records.update(f"{r.sha256}\n".encode())
            yield r

    def lines_of(self, rows: Rows) -> Rows:
        for line, body, cid in rows:
            self.lines.update(body + b"\n")
            self.size += len(body) + 1
            yield line, body, cid


def _pairs(case_ids: Mapping[int, str] | Iterable[tuple[int, str]] | None
           ) -> Iterable[tuple[int, str]]:
    return sorted(case_ids.items()) if isinstance(case_ids, Mapping) else (case_ids or ())


def hash_input(
    path: str | os.PathLike[str],
    *,
    into: str | os.PathLike[str],
    case_ids: Mapping[int, str] | Iterable[tuple[int, str]] | None = None,
    fmt: str | None = None,
    display: str | None = None,
    origin: Origin | None = None,
) -> InputFacts:
    """Hash the input file or folder, and stream its records' digests into
    ``into``/manifest.records.jsonl.

    ``case_ids`` gives a record's source position -> the case_id the runner actually gave it
    (it may differ from the raw field: `--field` mappings, or a generated id for a record
    without one), as a mapping or as (position, case_id) pairs in position order. The position
    is what records.SourceRef carries: ``line`` for JSONL and CSV, ``index`` for a JSON array
    or a table. When given, it wins over the id read from the record. ``origin`` "stream" says
    `path` holds what came down a pipe or stdin.
    """
    p = Path(path)
    fmt = fmt if fmt in FORMATS else detect_format(p)
    tally = _Tally()
    records = tally.watch(_with_run_ids(iter_records(p, fmt), _pairs(case_ids)))
    ref = write_sidecar(into, RECORDS_NAME, records)
    size, sha = input_identity(p)
    return InputFacts(
        path=display or str(path),
        format=fmt,
        size=size,
        sha256=sha,
        records=ref,
        origin=origin or ("folder" if p.is_dir() else "file"),
        compression=None if p.is_dir() else compression_of(p),
        records_sha256=tally.records.hexdigest(),
    )


def hash_rows(
    rows: Iterable[RawRecord],
    *,
    into: str | os.PathLike[str],
    display: str,
    case_ids: Mapping[int, str] | Iterable[tuple[int, str]] | None = None,
) -> InputFacts:
    """hash_input for records in memory: their sha256 is that of their canonical JSONL (one
    canonical JSON object per line), the file `reproduce` and `verify` can be given for them."""
    tally = _Tally()
    records = tally.watch(_with_run_ids(_digests(tally.lines_of(_iter_rows(rows))),
                                        _pairs(case_ids)))
    ref = write_sidecar(into, RECORDS_NAME, records)
    return InputFacts(
        path=display, format=MEMORY_FORMAT, size=tally.size, sha256=tally.lines.hexdigest(),
        records=ref, origin="memory", records_sha256=tally.records.hexdigest(),
    )


def same_input(path: str | os.PathLike[str], facts: InputFacts) -> Literal["bytes", "records"] | None:
    """Whether `path` (a file or folder, not a pipe: see readable_input) is the input `facts`
    describe: the same bytes, else the same records (a recompressed copy, the file behind the
    pipe the run read, records the run held in memory written to a file), else None."""
    if facts.origin != "memory" and input_identity(path)[1] == facts.sha256:
        return "bytes"
    if facts.records_sha256 is None:
        return None
    fmt = facts.format if facts.format in FORMATS else None
    return "records" if records_digest(iter_records(path, fmt)) == facts.records_sha256 else None
