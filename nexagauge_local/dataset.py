"""A dataset, read in two passes: validate everything first, then stream cases to run.

The first pass lets `--on-error fail` stop before any work with every bad line listed; the
second streams cases in shards. Only case ids and digests are kept between passes, so a
100k-record JSONL (or Parquet file) never sits in memory as cases. The records come from a
file or folder on disk (readers/), a pipe spooled to disk, or records held in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from nexagauge_local.blocks import BlockDefaults, BlockModels
from nexagauge_local.case import Case, SourceRef
from nexagauge_local.records import (
    DatasetError,
    RawRecord,
    RecordError,
    content_digest,
    has_own_id,
    iter_raw,
    mapped_columns_found,
    normalise,
)


@dataclass(frozen=True)
class Duplicate:
    """An exact repeat of an earlier record (same case_id, same content): run once, noted."""

    case_id: str
    source: SourceRef
    first: SourceRef

    def as_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "at": str(self.source), "first_seen": str(self.first)}


@dataclass
class ScanResult:
    records: int = 0
    valid: int = 0
    errors: list[RecordError] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)


class SeenIds:
    """case_id -> (content digest, position) for every case so far, in about 24 bytes a case.

    Why not a dict of id string -> packed int: that was about 140 bytes a case (140 MB at a
    million records, held through the whole case loop, in each of the two passes). Here an id
    is its 63-bit hash: recent ids sit in a small dict, and every _COMPACT of them become a
    sorted run (id hash, content digest, position) searched by bisection.

    Runs merge like a binary counter up to _MAX_RUN ids, so every merge allocates a size that
    an earlier merge at that level freed, and runs of _MAX_RUN are kept as they are: a lookup
    searches at most log2(_MAX_RUN / _COMPACT) + N / _MAX_RUN runs (7 at a million ids), and
    the largest merge holds a bounded 6 MB of temporaries at any N. Merging everything into
    one array at each compaction (the first version) asked glibc for a larger block every
    time; the freed smaller ones stayed as holes in the heap, and the case loop grew by about
    0.2 KB a case on top of the index itself.

    A false "id already used" needs two ids of one dataset to collide in 63 bits, a false
    "same content" two records in the digest's first 60 bits (2^-60). The position is the
    record's line or array index; the file is the same for every record of a dataset.
    """

    _POS_BITS = 39  # positions up to 5.5e11 lines
    _NO_POS = (1 << _POS_BITS) - 1
    _COMPACT = 1 << 16  # ids kept in the dict before they become a sorted run
    _MAX_RUN = 1 << 18  # runs this long are not merged further

    def __init__(self, block_keys: tuple[str, ...] = ()) -> None:
        import numpy as np  # lazy: `--help` and the estimate path never read a dataset

        self._np = np
        self._block_keys = block_keys  # the registry's keys, part of every content digest
        self._recent: dict[int, tuple[int, int]] = {}
        # level -> (sorted id hashes, (n, 2) digest and packed position) or None
        self._levels: list[tuple[Any, Any] | None] = []
        self._full: list[tuple[Any, Any]] = []  # runs of _MAX_RUN ids

    @staticmethod
    def _key(case_id: str) -> int:
        digest = hashlib.blake2b(case_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 1  # 63 bits: fits a signed int64

    def _digest60(self, case: Case) -> int:
        return int(content_digest(case, self._block_keys)[:15], 16)

    def _get(self, case_id: str) -> tuple[int, int] | None:
        key = self._key(case_id)
        hit = self._recent.get(key)
        if hit is not None:
            return hit
        for run in (*self._full, *self._levels):
            if run is None:
                continue
            keys, values = run
            i = int(self._np.searchsorted(keys, key))
            if i < len(keys) and int(keys[i]) == key:
                return int(values[i, 0]), int(values[i, 1])
        return None

    def __contains__(self, case_id: str) -> bool:
        return self._get(case_id) is not None

    def __len__(self) -> int:
        runs = (*self._full, *self._levels)
        return len(self._recent) + sum(len(run[0]) for run in runs if run is not None)

    def same_content(self, case: Case) -> bool:
        found = self._get(case.case_id)
        return found is not None and found[0] == self._digest60(case)

    def add(self, case: Case, source: SourceRef) -> None:
        """Remember a case; the caller has checked that its id is not seen yet."""
        kind, pos = (0, source.line) if source.line is not None else (1, source.index)
        if pos is None or not 0 <= pos < self._NO_POS:
            pos = self._NO_POS
        self._recent[self._key(case.case_id)] = (self._digest60(case), kind << self._POS_BITS | pos)
        if len(self._recent) >= self._COMPACT:
            self._compact()

    def _compact(self) -> None:
        np, n = self._np, len(self._recent)
        keys = np.fromiter(self._recent, np.int64, count=n)
        values = np.array(list(self._recent.values()), dtype=np.int64).reshape(n, 2)
        self._recent = {}
        order = np.argsort(keys)
        run = (keys[order], values[order])
        for level, held in enumerate(self._levels):  # carry up, as a binary counter does
            if held is None:
                self._levels[level] = run
                return
            self._levels[level] = None
            run = self._merge(held, run)
            del held
            if len(run[0]) >= self._MAX_RUN:
                self._full.append(run)
                return
        self._levels.append(run)

    def _merge(self, a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
        """Two sorted runs as one, written straight into the result: each of b's rows lands at
        its rank in a plus its own index (ids are unique), a's rows fill the rest. No
        concatenated copy and no argsort, so the temporaries are one int per b row and one
        byte per result row."""
        np = self._np
        (a_keys, a_values), (b_keys, b_values) = a, b
        total = len(a_keys) + len(b_keys)
        at = np.searchsorted(a_keys, b_keys)
        at += np.arange(len(b_keys), dtype=at.dtype)
        from_b = np.zeros(total, dtype=bool)
        from_b[at] = True
        keys = np.empty(total, dtype=np.int64)
        values = np.empty((total, 2), dtype=np.int64)
        keys[at], values[at] = b_keys, b_values
        keys[~from_b], values[~from_b] = a_keys, a_values
        return keys, values

    def first(self, case_id: str, file: str) -> SourceRef:
        found = self._get(case_id)
        packed = self._NO_POS if found is None else found[1]
        pos = packed & self._NO_POS
        if pos == self._NO_POS:
            return SourceRef(file=file)
        if packed >> self._POS_BITS & 1:
            return SourceRef(file=file, index=pos)
        return SourceRef(file=file, line=pos)


class NoBlockRegistry(RuntimeError):
    """A dataset was read before anyone said which node blocks a record may carry."""


@dataclass
class Dataset:
    path: Path
    field_map: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None
    display: str | None = None
    fmt: str | None = None
    # The node blocks a record may carry (record key -> model), from the graph that will run
    # the cases: `GRAPH.blocks`. None until bound; the Runner binds its graph's registry, so
    # only a caller that reads the dataset itself must pass one.
    blocks: BlockModels | None = None
    # Records held in memory (readers/frames.py: a DataFrame, a list of dicts), read in place
    # of `path`; None for data on disk.
    rows: Iterable[RawRecord] | None = None
    # How the input arrived, which the manifest records: a file or dataset folder (read again
    # by verify and reproduce), a stream (a pipe or stdin, spooled to `path` for the run) or
    # records in memory (`rows`).
    origin: Literal["file", "stream", "memory"] = "file"
    # Blocks for the records that lack one (a run configuration's [defaults]: app/run_config.py);
    # every reader of the dataset (run, estimate, prompts) sees the blocks in effect.
    defaults: BlockDefaults | None = None
    # A slice of the input's records, as nexa-gauge's --start/--end: 0-based, start inclusive,
    # end exclusive; `limit` then counts from `start` (rows [start:end][:limit]). Records keep
    # their own line or row numbers, so every message names the file's position.
    start: int = 0
    end: int | None = None

    @property
    def name(self) -> str:
        return self.display or str(self.path)

    @property
    def reads(self) -> tuple[Path, ...]:
        """The paths the run reads (none for records in memory)."""
        return () if self.rows is not None else (self.path,)

    @property
    def stop(self) -> int | None:
        """The position past the last record read: `end`, cut to `start + limit`."""
        bounds = [b for b in (self.end, None if self.limit is None else self.start + self.limit)
                  if b is not None]
        return min(bounds) if bounds else None

    def selected(self) -> Iterator[tuple[bool, RawRecord]]:
        """Every record up to `stop`, with whether it lies in the slice (at or past `start`)."""
        stop = self.stop
        for n, raw in enumerate(self.raw()):
            if stop is not None and n >= stop:
                return
            yield n >= self.start, raw

    def raw(self) -> Iterator[RawRecord]:
        """Every record as read, with its position; DatasetError when the input is unusable."""
        if self.rows is not None:
            return iter(self.rows)
        return iter_raw(self.path, self.fmt, self.name)

    def with_blocks(self, blocks: BlockModels) -> Dataset:
        """This dataset read with `blocks` (a copy; a subclass keeps its own fields)."""
        return replace(self, blocks=blocks)

    def _blocks(self) -> BlockModels:
        if self.blocks is None:
            raise NoBlockRegistry(
                "Dataset has no block registry: pass blocks=GRAPH.blocks (nexagauge_local.graph)"
            )
        return self.blocks

    def items(self) -> Iterator[Case | RecordError | Duplicate]:
        """Every record in order as a Case, a RecordError, or a Duplicate of an earlier case.

        Raises DatasetError when the file itself is unusable (see records.iter_raw).
        """
        blocks = self._blocks()
        seen = SeenIds(tuple(blocks))
        for inside, raw in self.selected():
            if not inside:
                _remember_generated(raw, self.field_map, blocks, seen)
                continue
            result = normalise(raw, self.field_map, blocks=blocks)
            if isinstance(result, list):
                yield from result
                continue
            if self.defaults is not None:
                result = result.model_copy(update={"blocks": self.defaults.merged(result.blocks)})
            if not has_own_id(raw, self.field_map):
                result = _distinct_generated_id(result, seen)
            yield self._dedupe(result, raw, seen)

    @staticmethod
    def _dedupe(case: Case, raw: RawRecord, seen: SeenIds) -> Case | RecordError | Duplicate:
        if case.case_id not in seen:
            seen.add(case, raw.source)
            return case
        first = seen.first(case.case_id, raw.source.file)
        if seen.same_content(case):
            return Duplicate(case.case_id, raw.source, first)
        return RecordError(
            raw.source,
            "case_id",
            f"{case.case_id!r} already used at {first} with different content",
        )

    def scan(self) -> ScanResult:
        """The validation pass; raises DatasetError for problems no `--on-error skip` can skip."""
        out = ScanResult()
        last: SourceRef | None = None
        for item in self.items():
            if isinstance(item, Case):
                out.valid += 1
                out.records += 1
            elif isinstance(item, Duplicate):
                out.duplicates.append(item)
                out.records += 1
            else:
                out.errors.append(item)
                if item.source != last:
                    out.records += 1
                last = item.source
        if out.records == 0 and self.start:
            total = sum(1 for _ in self.raw())
            raise DatasetError(self.name, f"--start {self.start}: the input has {total} "
                                          "record(s), none at or past it")
        if out.records == 0:
            raise DatasetError(self.name, "contains no records")
        self._check_mapped_columns()
        return out

    def _check_mapped_columns(self) -> None:
        """A `--field LOGICAL=COLUMN` naming a column no record has is a typo, not a fallback.

        Why: without this check the record's own alias (e.g. its `output`) is used silently, and
        the run scores the wrong text with exit 0.
        """
        if not self.field_map:
            return
        found: set[str] = set()
        for inside, raw in self.selected():
            if inside and raw.data is not None:
                found |= mapped_columns_found(raw.data, self.field_map)
            if len(found) == len(set(self.field_map.values())):
                return
        missing = {k: v for k, v in self.field_map.items() if v not in found}
        pairs = ", ".join(f"{k}={v}" for k, v in missing.items())
        columns = " or ".join(repr(v) for v in dict.fromkeys(missing.values()))
        raise DatasetError(self.name, f"--field {pairs}: no record has a column {columns}")

    def cases(self) -> Iterator[Case]:
        for item in self.items():
            if isinstance(item, Case):
                yield item


def _remember_generated(raw: RawRecord, field_map: Mapping[str, str], blocks: BlockModels,
                        seen: SeenIds) -> None:
    """A record before `--start` whose case id is generated: noted as the full file would note
    it, so a generated id in the slice gets the same `-2` suffix (or is the same duplicate) as
    in a run over the whole file. Records that name their own id cost nothing here."""
    if raw.data is None or has_own_id(raw, field_map):
        return
    result = normalise(raw, field_map, blocks=blocks)
    if isinstance(result, Case):
        case = _distinct_generated_id(result, seen)
        if case.case_id not in seen:
            seen.add(case, raw.source)


def _distinct_generated_id(case: Case, seen: SeenIds) -> Case:
    """A generated id shared by records with the same texts but different node blocks gets a
    `-2`, `-3` ... suffix in file order.

    Why: generated ids hash the texts only (so a record keeps its id when only its blocks
    change between two configurations); within one file such records are distinct cases, not
    conflicting ids. Exact repeats keep the id they repeat and are reported as duplicates.
    """
    base, k = case.case_id, 1
    candidate = case
    while candidate.case_id in seen and not seen.same_content(candidate):
        k += 1
        candidate = case.model_copy(update={"case_id": f"{base}-{k}"})
    return candidate


def shards(cases: Iterator[Case], size: int) -> Iterator[list[Case]]:
    shard: list[Case] = []
    for case in cases:
        shard.append(case)
        if len(shard) >= size:
            yield shard
            shard = []
    if shard:
        yield shard
