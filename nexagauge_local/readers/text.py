"""Text datasets: JSONL, a JSON array, CSV/TSV, plain or compressed, in any of the sniffed
encodings.

Every problem is reported as `file:line: field: message` (or `file[index]` for JSON arrays) so
a user can fix a 100k-line file without guessing. Every format streams: JSONL and CSV line by
line, a JSON array element by element (json_stream.py), so memory stays flat whatever the size.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from nexagauge_local.case import SourceRef
from nexagauge_local.readers.base import DatasetError, RawRecord
from nexagauge_local.readers.compressed import compression_of, inner_suffix, open_bytes
from nexagauge_local.readers.json_stream import JsonSyntaxError, NotAnArray, iter_array, value_type
from nexagauge_local.readers.limits import TOO_DEEP, allow_long_csv_fields

# Byte-order marks and the codec that reads past them, longest first (a UTF-32 LE mark begins
# with the UTF-16 LE one). Without a mark the file must be UTF-8: guessing among legacy code
# pages would turn a wrong guess into silently garbled text, which is worse than a clear error.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
SNIFF_BYTES = 4096
NOT_TEXT = "not a text file (expected UTF-8, or UTF-16 with a byte-order mark)"
TEXT_FORMATS = ("jsonl", "json", "csv")


def head_bytes(path: Path, name: str, size: int = SNIFF_BYTES) -> bytes:
    """The first `size` bytes of the file's content (decompressed)."""
    with open_bytes(path, name) as fh:
        return fh.read(size)


def sniff_encoding(path: Path, name: str | None = None) -> str:
    """The codec for `path`: from its byte-order mark, else UTF-8; DatasetError for binary data.

    Why sniff: opening a UTF-16 or binary file as UTF-8 fails mid-read with a UnicodeDecodeError
    traceback. A NUL byte never occurs in UTF-8 text, so one in the head means binary (or UTF-16
    without a mark, which cannot be told from binary reliably).
    """
    name = name or str(path)
    head = head_bytes(path, name)
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    if b"\x00" in head:
        raise DatasetError(name, NOT_TEXT)
    return "utf-8"


@contextmanager
def open_text(path: Path, name: str | None = None, newline: str | None = None) -> Iterator[IO[str]]:
    """Open a dataset as text in its sniffed encoding, decompressed when it is compressed; a
    decoding failure anywhere in the file becomes one DatasetError instead of a traceback."""
    name = name or str(path)
    encoding = sniff_encoding(path, name)
    try:
        with open_bytes(path, name) as raw, io.TextIOWrapper(
                raw, encoding=encoding, newline=newline) as fh:
            yield fh
    except UnicodeError:
        raise DatasetError(name, NOT_TEXT) from None


def text_format(path: Path, name: str | None = None) -> str:
    """jsonl, json or csv: by the name where it says (data.csv.gz is CSV), else by content.

    Content: `[` starts a JSON array, `{` a JSONL record; a first line with commas or tabs and
    neither is a CSV header (a pipe's records have no name to go by).
    """
    suffix = inner_suffix(path)
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    with open_text(path, name) as fh:
        head = fh.read(SNIFF_BYTES).lstrip()
    if head.startswith("["):
        return "json"
    first = head.partition("\n")[0]
    if suffix != ".json" and not head.startswith("{") and ("," in first or "\t" in first):
        return "csv"
    return "jsonl"


def csv_delimiter(path: Path, name: str | None = None) -> str:
    """Tab for .tsv (compressed too), comma for .csv; otherwise the header line decides."""
    suffix = inner_suffix(path)
    if suffix in (".csv", ".tsv"):
        return "\t" if suffix == ".tsv" else ","
    with open_text(path, name) as fh:
        first = fh.readline()
    return "\t" if "\t" in first and "," not in first else ","


def is_compressed(path: Path) -> bool:
    return compression_of(path) is not None


# ---------------------------------------------------------------- readers


def iter_text(path: Path, fmt: str, name: str) -> Iterator[RawRecord]:
    if fmt == "jsonl":
        yield from _iter_jsonl(path, name)
    elif fmt == "csv":
        yield from _iter_csv(path, name)
    elif fmt == "json":
        yield from _iter_json_array(path, name)
    else:
        raise ValueError(f"unknown format {fmt!r}")


def _iter_jsonl(path: Path, name: str) -> Iterator[RawRecord]:
    first = True
    with open_text(path, name) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            src = SourceRef(file=name, line=lineno)
            try:
                data = json.loads(line)
            except RecursionError:  # json's own limit, past MAX_NESTING: the same bad record
                first = False
                yield RawRecord(None, src, TOO_DEEP)
                continue
            except json.JSONDecodeError:
                if first and _is_whole_json_array(path, name):
                    yield from _iter_json_array(path, name)
                    return
                first = False
                yield RawRecord(None, src, "invalid JSON")
                continue
            first = False
            if not isinstance(data, dict):
                yield RawRecord(None, src, f"expected a JSON object, got {type(data).__name__}")
                continue
            yield RawRecord(data, src)


def _is_whole_json_array(path: Path, name: str) -> bool:
    """Called when the first JSONL line does not parse: is the file one pretty-printed value?

    Why: a pretty-printed object spreads over many lines and would be reported as "invalid JSON"
    on every one of them, hiding the real mistake (the file is one object, not a list of
    records); that is a DatasetError. A pretty-printed array is a dataset, just misnamed: True.
    Anything that does not parse whole is a file of broken lines, reported one by one: False.
    The check streams (an array is read element by element) and stops at the first syntax error.
    """
    with open_text(path, name) as fh:
        try:
            kind = value_type(fh)
        except JsonSyntaxError:
            return False
    if kind is list:
        return True
    what = "a single JSON object" if kind is dict else f"a JSON {kind.__name__}"
    raise DatasetError(
        name, f"expected a JSON array of records or JSONL (one object per line), got {what}"
    )


def _iter_json_array(path: Path, name: str) -> Iterator[RawRecord]:
    """The array's elements as records named `name[index]`, read one at a time.

    Text that stops being JSON part-way is a DatasetError (exit 2 under `--on-error skip` too):
    nothing after it can be read, so skipping it would run a silently shorter dataset, as a
    corrupt compressed file would.
    """
    count = 0
    with open_text(path, name) as fh:
        try:
            for count, data in enumerate(iter_array(fh), start=1):
                yield _array_record(data, SourceRef(file=name, index=count - 1))
        except NotAnArray:
            yield RawRecord(None, SourceRef(file=name), "expected a JSON array of records")
            return
        except JsonSyntaxError as exc:
            where = "after the array" if exc.msg == "Extra data" else f"in record [{count}]"
            raise DatasetError(name, f"invalid JSON ({exc.msg}) {where}", line=exc.lineno
                               ) from None
        except RecursionError:
            # json cannot step over such an element, so what follows it cannot be read either
            raise DatasetError(name, f"record [{count}] is {TOO_DEEP}, too deep for the JSON "
                                     "parser to read past; fix or remove it") from None
    if count == 0:
        raise DatasetError(name, "the JSON array is empty; there are no records")


def _array_record(data: Any, src: SourceRef) -> RawRecord:
    if not isinstance(data, dict):
        return RawRecord(None, src, f"expected a JSON object, got {type(data).__name__}")
    return RawRecord(data, src)


def _iter_csv(path: Path, name: str) -> Iterator[RawRecord]:
    delimiter = csv_delimiter(path, name)
    allow_long_csv_fields()
    with open_text(path, name, newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        try:
            yield from _csv_rows(reader, name)
        except csv.Error as exc:  # a cell over CSV_FIELD_LIMIT, a NUL: the reader cannot go on
            raise DatasetError(name, f"not readable as CSV past this line ({exc})",
                               line=reader.line_num + 1) from None


def _csv_rows(reader: csv.DictReader[str], name: str) -> Iterator[RawRecord]:
    for row in reader:
        # line_num is the last physical line read, so multi-line cells still point at the row end.
        src = SourceRef(file=name, line=reader.line_num)
        if None in row:
            yield RawRecord(None, src, "more cells than header columns")
            continue
        data: dict[str, Any] = {}
        for key, value in row.items():
            if not key:
                continue
            try:
                data[key] = _csv_cell(value)
            except RecursionError:  # JSON in the cell past json's own nesting limit
                yield RawRecord(None, src, f"{key}: {TOO_DEEP}")
                break
        else:
            yield RawRecord(data, src)


def _csv_cell(value: str | None) -> Any:
    """CSV cells are strings; node blocks and context lists arrive as JSON inside a cell."""
    if value is None or value == "":
        return None
    stripped = value.strip()
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return value
    return value
