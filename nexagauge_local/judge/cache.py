"""The judge cache: SQLite in WAL mode, one row per unique judge request.

Why SQLite/WAL: a single file, readers never block the writer, and a batch of results is one
transaction, so a process killed with SIGKILL leaves either the whole batch or none of it.
Each row also carries a sha256 checksum of its payload; a row whose checksum fails (a torn
write on a filesystem that lies about fsync, a hand-edited file) is treated as a miss and
recomputed, never returned.

What is stored is the judge's raw text and token counts, not the parsed object: the hit is
re-parsed against the current schema, so a fixed parser applies to old entries too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from nexagauge_local.judge.schemas import schema_id
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.sqlite_store import open_store, reading, writing

DB_NAME = "judge.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    raw_text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    gpu_seconds REAL NOT NULL,
    created REAL NOT NULL,
    logprobs TEXT,
    checksum TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_node ON entries(node);
CREATE TABLE IF NOT EXISTS hits (node TEXT PRIMARY KEY, hits INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS judge_history (
    judge TEXT NOT NULL,
    schema TEXT NOT NULL,
    n INTEGER NOT NULL,
    output REAL NOT NULL,
    output_sq REAL NOT NULL,
    tokens REAL NOT NULL,
    seconds REAL NOT NULL,
    PRIMARY KEY (judge, schema)
);
CREATE TABLE IF NOT EXISTS judge_samples (
    judge TEXT NOT NULL,
    schema TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS judge_samples_by_schema ON judge_samples(judge, schema);
"""
# Per-answer (prompt, output, device-seconds) kept for each judge and schema, newest first: what
# `estimate` fits its device-seconds model to. Bounded, so the cache does not grow with use.
MAX_SAMPLES = 2000
_TRIM_SAMPLES = (
    "DELETE FROM judge_samples WHERE judge = ? AND schema = ? AND rowid NOT IN ("
    "SELECT rowid FROM judge_samples WHERE judge = ? AND schema = ? ORDER BY rowid DESC LIMIT ?)"
)
_ADD_HISTORY = (
    "INSERT INTO judge_history VALUES (?,?,?,?,?,?,?) ON CONFLICT(judge, schema) DO UPDATE SET "
    "n = n + excluded.n, output = output + excluded.output, "
    "output_sq = output_sq + excluded.output_sq, tokens = tokens + excluded.tokens, "
    "seconds = seconds + excluded.seconds"
)


class OutputHistory(BaseModel):
    """What a judge produced for one schema (output tokens, device-seconds): what `estimate`
    predicts from. Kept as running sums (not per answer): one row per judge and schema."""

    n: int
    mean: float
    std: float
    seconds_per_token: float | None = None  # device-seconds per prompt + output token
    # recent answers as (prompt tokens, output tokens, device-seconds), for a cost model
    samples: list[tuple[int, int, float]] = Field(default_factory=list)


class CacheEntry(BaseModel):
    """One cached judge answer (what a rerun needs to rebuild the JudgeResult)."""

    key: str
    node: str
    raw_text: str
    prompt_tokens: int
    output_tokens: int
    gpu_seconds: float
    created: float = Field(default_factory=time.time)
    logprobs: list[dict[str, float]] | None = None

    def checksum(self) -> str:
        payload = json.dumps(
            [
                self.key,
                self.node,
                self.raw_text,
                self.prompt_tokens,
                self.output_tokens,
                self.gpu_seconds,
                self.created,
                self.logprobs,
            ],
            separators=(",", ":"),
        )
        return hashlib.sha256(payload.encode()).hexdigest()


class CacheStats(BaseModel):
    path: str
    entries: int
    size_bytes: int
    entries_by_node: dict[str, int]
    hits_by_node: dict[str, int]


def request_key(
    fingerprint: str,
    prompt_version: str,
    messages: Sequence[Mapping[str, str]],
    schema_id: str,
    *,
    max_tokens: int,
    seed: int,
    want_logprobs: bool,
    temperature: float = 0.0,
    guard: Mapping[str, Any] | None = None,
) -> str:
    """sha256 over everything that decides the judge's answer: a change to any of them is a
    cache miss. `guard`: a guard format's prompt, grammar and decision (absent from rubric
    requests' material, so their keys are unchanged)."""
    material = json.dumps(
        ({"guard": dict(guard)} if guard is not None else {}) | {
            "fingerprint": fingerprint,
            "prompt_version": prompt_version,
            "messages": [dict(m) for m in messages],
            "schema": schema_id,
            "sampling": {
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": seed,
                "logprobs": want_logprobs,
            },
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode()).hexdigest()


def judge_request_key(fingerprint: str, request: JudgeRequest, *, seed: int) -> str:
    """The key a run files `request`'s answer under: the judge client and `estimate` (which
    must find the same answers cached) both take it from here."""
    return request_key(
        fingerprint,
        request.prompt_version,
        request.messages,
        schema_id(request.schema),
        max_tokens=request.max_tokens,
        seed=seed,
        want_logprobs=request.want_logprobs,
        guard=request.guard.key_material() if request.guard is not None else None,
    )


class JudgeCache:
    """Judge answers keyed by `request_key`. One short-lived connection per operation, so the
    object is cheap to pass around and safe to use from a forked/spawned worker."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / DB_NAME
        self.dir.mkdir(parents=True, exist_ok=True)
        open_store(self.path, "judge cache", _SCHEMA)  # a damaged file: CacheDamaged, now

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return reading(self.path, "judge cache")

    def _writing(self) -> AbstractContextManager[sqlite3.Connection]:
        return writing(self.path, "judge cache")

    def get_many(self, keys: Iterable[str]) -> dict[str, CacheEntry]:
        """Entries for the keys that are present and intact (checksum verified)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, CacheEntry] = {}
        with self._reading() as con:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = con.execute(
                    "SELECT key, node, raw_text, prompt_tokens, output_tokens, gpu_seconds, "
                    f"created, logprobs, checksum FROM entries WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                for row in rows:
                    entry = _row_to_entry(row)
                    if entry is not None:
                        found[entry.key] = entry
        return found

    def put_many(
        self, entries: Sequence[CacheEntry], *, judge: str | None = None,
        schemas: Sequence[str] = (),
    ) -> None:
        """Write a batch in one transaction (all or nothing). With `judge` and each entry's
        schema id, the same transaction adds the answers to the judge's history."""
        if not entries:
            return
        rows = [
            (
                e.key,
                e.node,
                e.raw_text,
                e.prompt_tokens,
                e.output_tokens,
                e.gpu_seconds,
                e.created,
                None if e.logprobs is None else json.dumps(e.logprobs),
                e.checksum(),
            )
            for e in entries
        ]
        with self._writing() as con:
            con.executemany("INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?,?)", rows)
            if judge is not None:
                con.executemany(_ADD_HISTORY, _history_rows(judge, entries, schemas))
                samples = [
                    (judge, sch, e.prompt_tokens, e.output_tokens, e.gpu_seconds)
                    for e, sch in zip(entries, schemas, strict=True)
                    if e.gpu_seconds > 0
                ]
                con.executemany("INSERT INTO judge_samples VALUES (?,?,?,?,?)", samples)
                for sch in {row[1] for row in samples}:
                    con.execute(_TRIM_SAMPLES, (judge, sch, judge, sch, MAX_SAMPLES))

    def output_history(self, judge: str) -> dict[str, OutputHistory]:
        """schema id -> the judge's output-token history for it ({} when none)."""
        if not self.path.exists():
            return {}
        with self._reading() as con:
            rows = con.execute(
                "SELECT schema, n, output, output_sq, tokens, seconds FROM judge_history "
                "WHERE judge = ?", (judge,)
            ).fetchall()
            samples: dict[str, list[tuple[int, int, float]]] = {}
            for schema, p, o, sec in con.execute(
                "SELECT schema, prompt_tokens, output_tokens, seconds FROM judge_samples "
                "WHERE judge = ?", (judge,)
            ):
                samples.setdefault(schema, []).append((p, o, sec))
        out: dict[str, OutputHistory] = {}
        for schema, n, total, total_sq, tokens, seconds in rows:
            mean = total / n
            out[schema] = OutputHistory(
                n=n, mean=mean, std=max(total_sq / n - mean * mean, 0.0) ** 0.5,
                seconds_per_token=seconds / tokens if tokens and seconds > 0 else None,
                samples=samples.get(schema, []),
            )
        return out

    def record_hits(self, node: str, count: int) -> None:
        if count <= 0:
            return
        with self._writing() as con:
            con.execute(
                "INSERT INTO hits(node, hits) VALUES (?, ?) "
                "ON CONFLICT(node) DO UPDATE SET hits = hits + excluded.hits",
                (node, count),
            )

    def stats(self) -> CacheStats:
        with self._reading() as con:
            by_node = dict(con.execute("SELECT node, COUNT(*) FROM entries GROUP BY node"))
            hits = dict(con.execute("SELECT node, hits FROM hits"))
        size = sum(p.stat().st_size for p in self.dir.glob(DB_NAME + "*") if p.is_file())
        return CacheStats(
            path=str(self.path),
            entries=sum(by_node.values()),
            size_bytes=size,
            entries_by_node=by_node,
            hits_by_node=hits,
        )

    def clear(self, node: str | None = None) -> int:
        """Delete all entries (and hit counters), or only one node's. Returns rows deleted."""
        with self._reading() as con:
            with con:
                if node is None:
                    deleted = con.execute("DELETE FROM entries").rowcount
                    con.execute("DELETE FROM hits")
                else:
                    deleted = con.execute("DELETE FROM entries WHERE node = ?", (node,)).rowcount
                    con.execute("DELETE FROM hits WHERE node = ?", (node,))
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if node is None:
                con.execute("VACUUM")
        return deleted


def _row_to_entry(row: Sequence[Any]) -> CacheEntry | None:
    try:
        entry = CacheEntry(
            key=row[0],
            node=row[1],
            raw_text=row[2],
            prompt_tokens=row[3],
            output_tokens=row[4],
            gpu_seconds=row[5],
            created=row[6],
            logprobs=None if row[7] is None else json.loads(row[7]),
        )
    except (ValueError, TypeError):
        return None
    return entry if entry.checksum() == row[8] else None


def _history_rows(
    judge: str, entries: Sequence[CacheEntry], schemas: Sequence[str]
) -> list[tuple[str, str, int, float, float, float, float]]:
    """One judge_history increment per schema among `entries`."""
    acc: dict[str, list[float]] = {}
    for e, schema in zip(entries, schemas, strict=True):
        a = acc.setdefault(schema, [0, 0.0, 0.0, 0.0, 0.0])
        a[0] += 1
        a[1] += e.output_tokens
        a[2] += e.output_tokens**2
        a[3] += e.prompt_tokens + e.output_tokens
        a[4] += e.gpu_seconds
    return [(judge, sch, int(a[0]), a[1], a[2], a[3], a[4]) for sch, a in acc.items()]
