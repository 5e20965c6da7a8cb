"""A dataset on disk, read in two passes: validate everything first, then stream cases to run.

The first pass lets `--on-error fail` stop before any work with every bad line listed; the
second streams cases in shards. Only case ids and digests are kept between passes, so a
100k-record JSONL never sits in memory as cases.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexagauge_local.case import Case, SourceRef
from nexagauge_local.records import RecordError, content_digest, iter_raw, normalise


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


@dataclass
class Dataset:
    path: Path
    field_map: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None
    display: str | None = None
    fmt: str | None = None

    @property
    def name(self) -> str:
        return self.display or str(self.path)

    def items(self) -> Iterator[Case | RecordError | Duplicate]:
        """Every record in order as a Case, a RecordError, or a Duplicate of an earlier case."""
        seen: dict[str, tuple[str, SourceRef]] = {}
        for n, raw in enumerate(iter_raw(self.path, self.fmt, self.name)):
            if self.limit is not None and n >= self.limit:
                return
            result = normalise(raw, self.field_map)
            if isinstance(result, list):
                yield from result
                continue
            digest = content_digest(result)
            prior = seen.get(result.case_id)
            if prior is None:
                seen[result.case_id] = (digest, raw.source)
                yield result
            elif prior[0] == digest:
                yield Duplicate(result.case_id, raw.source, prior[1])
            else:
                yield RecordError(
                    raw.source,
                    "case_id",
                    f"{result.case_id!r} already used at {prior[1]} with different content",
                )

    def scan(self) -> ScanResult:
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
        return out

    def cases(self) -> Iterator[Case]:
        for item in self.items():
            if isinstance(item, Case):
                yield item


def shards(cases: Iterator[Case], size: int) -> Iterator[list[Case]]:
    shard: list[Case] = []
    for case in cases:
        shard.append(case)
        if len(shard) >= size:
            yield shard
            shard = []
    if shard:
        yield shard
