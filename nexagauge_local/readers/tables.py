"""Columnar datasets: Parquet, Arrow IPC (file or stream) and folders of them, such as a
Hugging Face `save_to_disk` folder or a Hub snapshot's Parquet shards, read with pyarrow alone.

Why batch by batch: a published evaluation set is often one Parquet file of millions of rows
in one row group. pyarrow reads it here with a buffered column reader and in batches of
BATCH_ROWS, so only a batch of rows (and a megabyte of column pages) is ever decoded; Arrow
files are read through a plain file, not a memory map, so no page of them stays resident.

A row's position is its 0-based row number in the whole dataset (all files of a folder
counted in order), written `data.parquet[17]`, the number `pandas.read_parquet(...).iloc[17]`
and `datasets.load_from_disk(...)[17]` give. A file pyarrow cannot decode is one DatasetError
line naming the file (and the row group, for Parquet).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nexagauge_local.case import SourceRef
from nexagauge_local.readers.base import DatasetError, RawRecord, one_line, require

BATCH_ROWS = 1024
_READ_BUFFER = 1 << 20  # bytes of column pages read at a time
_ARROW_FILE = b"ARROW1"
_ARROW_STREAM = b"\xff\xff\xff\xff"  # the IPC continuation marker every stream message has
TABLE_FORMATS = ("parquet", "arrow")
TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow",
                  ".feather": "arrow", ".ipc": "arrow"}
PARQUET_HINT = "parquet"  # the extra that brings pyarrow


def table_format(path: Path) -> str | None:
    """parquet or arrow when the file's first bytes say so; None for anything else."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith((_ARROW_FILE, _ARROW_STREAM)):
        return "arrow"
    return None


def _pyarrow(name: str, what: str) -> Any:
    require("pyarrow", name, what, PARQUET_HINT)
    import pyarrow as pa

    return pa


# ---------------------------------------------------------------- folders


def folder_files(path: Path, name: str) -> tuple[str, list[Path]]:
    """(format, files in reading order) of a dataset folder; DatasetError for any other folder.

    A `save_to_disk` folder lists its Arrow files in state.json (their order is the dataset's
    row order); otherwise the folder's Parquet or Arrow files are read in name order, as Hub
    shards (`train-00000-of-00004.parquet`) are numbered.
    """
    if (path / "dataset_dict.json").is_file():
        splits = _json(path / "dataset_dict.json", name).get("splits") or []
        first = splits[0] if splits else "train"
        raise DatasetError(
            name, f"is a Hugging Face DatasetDict folder (splits: {', '.join(map(str, splits))}); "
                  f"pass one split's folder, e.g. --input {Path(name) / str(first)}")
    state = path / "state.json"
    if state.is_file():
        return "arrow", _state_files(path, state, name)
    found = {fmt: sorted(p for p in path.iterdir() if p.is_file() and TABLE_SUFFIXES.get(
        p.suffix.lower()) == fmt) for fmt in TABLE_FORMATS}
    kinds = [fmt for fmt, files in found.items() if files]
    if len(kinds) == 1:
        _one_split(found[kinds[0]], name)
        return kinds[0], found[kinds[0]]
    if kinds:
        raise DatasetError(name, "holds both Parquet and Arrow files; pass one file, or a "
                                 "folder of one kind")
    raise DatasetError(
        name, "is a directory; --input takes a dataset file (JSON, JSONL, CSV, Parquet or "
              "Arrow, compressed or not) or a folder of Parquet or Arrow files (a Hugging Face "
              "save_to_disk folder)")


_SPLITS = {"train", "validation", "valid", "val", "test", "dev", "eval"}
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")


def _one_split(files: list[Path], name: str) -> None:
    """DatasetError when the files are several splits of one dataset (the `datasets` cache
    keeps `squad-train.arrow` beside `squad-validation.arrow`): read together they would mix
    training and test rows. Shards of one split (`train-00000-of-00004`) and names that say no
    split (Spark's `part-00000-...`) are one dataset."""
    splits = {_SHARD.sub("", f.name.split(".")[0]).rsplit("-", 1)[-1].lower() for f in files}
    named = sorted(splits & _SPLITS)
    if len(named) > 1:
        raise DatasetError(name, f"holds the files of several splits ({', '.join(named)}); "
                                 "pass one split's file (or a folder holding only its shards)")


def _json(path: Path, name: str) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(name, f"{path.name}: not readable JSON ({one_line(exc)})") from None
    if not isinstance(value, dict):
        raise DatasetError(name, f"{path.name}: expected a JSON object")
    return value


def _state_files(folder: Path, state: Path, name: str) -> list[Path]:
    data = _json(state, name)
    if data.get("_indices_data_files"):
        raise DatasetError(name, "state.json names an indices file (a selection saved by an "
                                 "old `datasets`); save it again after ds.flatten_indices()")
    entries = data.get("_data_files")
    if not isinstance(entries, list) or not entries:
        raise DatasetError(name, "state.json lists no _data_files; is this a save_to_disk folder?")
    files = []
    for entry in entries:
        file = folder / str(entry.get("filename") if isinstance(entry, dict) else entry)
        if not file.is_file():
            raise DatasetError(name, f"state.json names {file.name}, which is not in the folder")
        files.append(file)
    return files


# ---------------------------------------------------------------- rows


def iter_table(path: Path, fmt: str, name: str) -> Iterator[RawRecord]:
    """Every row of a Parquet/Arrow file or folder as a RawRecord at its row number."""
    files = folder_files(path, name)[1] if path.is_dir() else [path]
    row = 0
    for file in files:
        for rows in _batches(file, fmt, name, path.is_dir()):
            for data in rows:
                yield RawRecord(data, SourceRef(file=name, index=row))
                row += 1


def _batches(file: Path, fmt: str, name: str, in_folder: bool) -> Iterator[list[dict[str, Any]]]:
    where = f"{name}/{file.name}" if in_folder else name
    if fmt == "parquet":
        yield from _parquet_batches(file, where)
    else:
        yield from _arrow_batches(file, where)


def _parquet_batches(file: Path, where: str) -> Iterator[list[dict[str, Any]]]:
    pa = _pyarrow(where, "Parquet")
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(file, buffer_size=_READ_BUFFER, pre_buffer=False)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(where, f"not a readable Parquet file ({one_line(exc)})") from None
    try:
        for group in range(pf.metadata.num_row_groups):
            try:
                # one thread: a few text columns gain nothing from more, and each decoding
                # thread's malloc arena kept ~8 MB more at 100,000 rows
                for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[group],
                                             use_threads=False):
                    yield rows_of(batch)
            except (pa.ArrowException, OSError) as exc:
                raise DatasetError(
                    where, f"row group {group} cannot be read ({one_line(exc)})") from None
    finally:
        pf.close()  # a folder of many shards holds one open file at a time


def _arrow_batches(file: Path, where: str) -> Iterator[list[dict[str, Any]]]:
    pa = _pyarrow(where, "Arrow")
    try:
        with pa.OSFile(str(file)) as source:
            if table_format(file) is None:
                raise DatasetError(where, "not an Arrow IPC file or stream")
            if source.read(6) == _ARROW_FILE:
                source.seek(0)
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            else:
                source.seek(0)
                batches = iter(pa.ipc.open_stream(source))
            for batch in batches:
                for start in range(0, max(batch.num_rows, 1), BATCH_ROWS):
                    yield rows_of(batch.slice(start, BATCH_ROWS))
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(where, f"not a readable Arrow file ({one_line(exc)})") from None


def rows_of(batch: Any) -> list[dict[str, Any]]:
    """A record batch as JSON-ready dicts: only batches with a non-JSON column (timestamps,
    decimals, binary) pay for the walk that converts their values."""
    rows: list[dict[str, Any]] = batch.to_pylist()
    if all(_json_native(f.type) for f in batch.schema):
        return rows
    return [jsonable(r) for r in rows]


def _json_native(t: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_string(t) or pt.is_large_string(t) or pt.is_integer(t) or pt.is_boolean(t) \
            or pt.is_null(t) or pt.is_floating(t) or getattr(pt, "is_string_view", bool)(t):
        return True
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        return _json_native(t.value_type)
    if pt.is_struct(t):
        return all(_json_native(t.field(i).type) for i in range(t.num_fields))
    if pt.is_dictionary(t):
        return _json_native(t.value_type)
    return False


def jsonable(value: Any) -> Any:
    """A value as JSON can hold it: dates as ISO text, decimals as text (no float rounding),
    bytes as UTF-8 text (base64 when not text), Arrow map entries as an object.

    Why: a record's values end in case reports and in the audit's record hashes, both JSON;
    converting once here means every later step sees the same value.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): jsonable(v) for k, v in value}  # an Arrow map<k, v>
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, dt.timedelta)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode("ascii")
    if hasattr(value, "tolist") and callable(value.tolist):  # a numpy array or scalar
        return jsonable(value.tolist())
    return value
