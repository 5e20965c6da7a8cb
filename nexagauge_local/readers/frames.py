"""Records held in memory: a pandas or polars DataFrame, or any iterable of mappings (a list of
dicts, a Hugging Face `datasets.Dataset`), read where they are, without a temporary file.

Why re-iterable: a run reads its input more than once (validate, run, hash for the manifest).
A DataFrame or a list is simply walked again; a one-shot iterator (a generator) is kept as a
list the first time it is read, so it costs the memory of its records (pass a list, a
DataFrame or a file for data too large for that). A row's position is its 0-based row number
(`<DataFrame>[17]`, `df.iloc[17]`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from nexagauge_local.case import SourceRef
from nexagauge_local.readers.base import RawRecord
from nexagauge_local.readers.tables import BATCH_ROWS, jsonable


def frame_kind(records: Any) -> str | None:
    """"pandas" or "polars" for a DataFrame of either or a subclass (told by what it can do,
    without importing either), else None."""
    if hasattr(records, "iloc") and hasattr(records, "to_dict"):
        return "pandas"
    if hasattr(records, "iter_slices") and hasattr(records, "to_dicts"):
        return "polars"
    return None


class MemoryRows:
    """A re-iterable stream of RawRecords over in-memory records; `name` is how messages
    name the input (`<DataFrame>`, `<records>`)."""

    def __init__(self, records: Iterable[Any], name: str | None = None) -> None:
        self.kind = frame_kind(records)
        if self.kind is None and not isinstance(records, Iterable):
            raise TypeError(f"records: expected a path, a DataFrame or an iterable of dicts, "
                            f"got {type(records).__name__}")
        if self.kind is None and iter(records) is records:  # a generator: read it once
            records = list(records)
        self._records = records
        self.name = name or ("<DataFrame>" if self.kind else "<records>")

    def __iter__(self) -> Iterator[RawRecord]:
        rows = self._dicts()
        for index, data in enumerate(rows):
            src = SourceRef(file=self.name, index=index)
            if not isinstance(data, Mapping):
                yield RawRecord(None, src, f"expected a mapping (dict), got {type(data).__name__}")
                continue
            yield RawRecord(_clean(data), src)

    def _dicts(self) -> Iterator[Any]:
        frame: Any = self._records
        if self.kind == "pandas":
            for start in range(0, len(frame), BATCH_ROWS):
                yield from frame.iloc[start:start + BATCH_ROWS].to_dict("records")
        elif self.kind == "polars":
            for part in frame.iter_slices(n_rows=BATCH_ROWS):
                yield from part.to_dicts()
        else:
            yield from frame


def _clean(data: Mapping[Any, Any]) -> dict[str, Any]:
    """One row as plain JSON values. A top-level NaN, NaT or pd.NA is pandas' "missing", so it
    becomes None, as an absent JSON key would be; numpy arrays (list columns) become lists."""
    return {str(k): None if _missing(v) else jsonable(v) for k, v in data.items()}


def _missing(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")
