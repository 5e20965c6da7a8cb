"""Readers: every format a dataset is kept in, as a stream of RawRecords with their position.

One module per format family (text.py: JSON/JSONL/CSV, with json_stream.py reading a JSON
array element by element; compressed.py: gzip, bz2, xz, zstd;
tables.py: Parquet, Arrow, dataset folders; streams.py: pipes; frames.py: in-memory records),
and here the one rule that picks among them, which the audit uses too so that `verify` and
`reproduce` read a file exactly as the run did. The format is found from content first (magic
bytes, byte-order marks, the first character), the name only where content cannot tell.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from nexagauge_local.readers.base import (
    DatasetError,
    RawRecord,
    RecordError,
    RecordsError,
    require,
)
from nexagauge_local.readers.compressed import compression_of, inner_suffix
from nexagauge_local.readers.limits import TOO_DEEP, too_deep
from nexagauge_local.readers.streams import is_stream
from nexagauge_local.readers.tables import (
    TABLE_FORMATS,
    TABLE_SUFFIXES,
    folder_files,
    iter_table,
    table_format,
)
from nexagauge_local.readers.text import (
    NOT_TEXT,
    TEXT_FORMATS,
    iter_text,
    open_text,
    sniff_encoding,
    text_format,
)

FORMATS = (*TEXT_FORMATS, *TABLE_FORMATS)
EMPTY = "the file is empty; expected a JSON array, JSONL or CSV of records"

__all__ = [
    "EMPTY",
    "FORMATS",
    "NOT_TEXT",
    "DatasetError",
    "RawRecord",
    "RecordError",
    "RecordsError",
    "check_file",
    "compression_of",
    "detect_format",
    "is_stream",
    "iter_raw",
    "open_text",
    "require",
    "sniff_encoding",
]


def check_file(path: Path, name: str | None = None) -> None:
    """Raise DatasetError unless `path` is a non-empty regular file or a dataset folder.

    A pipe is refused here: callers spool it first (streams.py), since it can be read once.
    """
    name = name or str(path)
    if path.is_dir():
        folder_files(path, name)  # a folder that is no dataset: one line saying what is wanted
        return
    if not path.exists():
        raise DatasetError(name, "no such file")
    if not path.is_file():
        raise DatasetError(name, "not a regular file")
    if path.stat().st_size == 0:
        raise DatasetError(name, EMPTY)


def detect_format(path: Path, name: str | None = None) -> str:
    """jsonl, json, csv, parquet or arrow, from the file's content (or a folder's files)."""
    name = name or str(path)
    if path.is_dir():
        return folder_files(path, name)[0]
    found = table_format(path)
    if found is not None:
        return found
    claimed = TABLE_SUFFIXES.get(inner_suffix(path))
    if claimed is not None and compression_of(path) is None:
        raise DatasetError(name, f"not a {claimed.capitalize()} file (its first bytes are not "
                                 f"{claimed.capitalize()}'s)")
    if claimed is not None:
        raise DatasetError(name, f"a compressed {claimed.capitalize()} file cannot be read as a "
                                 "stream; decompress it first (Parquet is compressed inside)")
    return text_format(path, name)


def iter_raw(path: Path, fmt: str | None = None, display: str | None = None) -> Iterator[RawRecord]:
    """Yield raw records with their source position; never raises on a bad record.

    Raises DatasetError when the input as a whole is unusable: missing, an unrelated folder,
    empty, not text, corrupt compressed data, an unreadable Parquet file, or one pretty-printed
    JSON object instead of records.
    """
    name = display or str(path)
    check_file(path, name)
    fmt = fmt or detect_format(path, name)
    rows = iter_table(path, fmt, name) if fmt in TABLE_FORMATS else iter_text(path, fmt, name)
    for raw in rows:
        if raw.data is not None and too_deep(raw.data):  # any format: Parquet nests too
            raw = RawRecord(None, raw.source, TOO_DEEP)
        yield raw
