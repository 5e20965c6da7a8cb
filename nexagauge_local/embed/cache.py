"""The embedding cache: SQLite in WAL mode beside the judge cache, one row per (model, dtype,
device kind, text).

Why the judge cache's design (judge/cache.py): a single file, readers never block the writer,
and each batch of vectors is one transaction, so a process killed with SIGKILL mid-write loses
that batch and nothing else; every row carries a sha256 over its key and vector bytes, and a
row that fails it is a miss (recomputed), never a wrong vector. Its own file (not a table of
judge.sqlite) so a long embedding write never holds the judge's write lock and its size is
reported apart.

The key names the model by the sha256 of its files, not its folder name: another copy of the
same weights hits, an edited or upgraded model misses. Hashing ~90 MB every run would cost more
than a small run's encoding, so the digest is remembered per (path, total size, newest mtime).
The dtype and device kind are in the key because bf16 or CUDA vectors differ from CPU float32
ones in the last digits, and a cached vector must be the one this run would have computed.

Bounded: past `max_entries` rows the least recently used are deleted (a hit refreshes a row).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from nexagauge_local.sqlite_store import open_store, reading, writing

DB_NAME = "embeddings.sqlite"
_BATCH = 500  # keys per IN (...) query: under SQLite's default host-parameter limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    dtype TEXT NOT NULL,
    vector BLOB NOT NULL,
    used REAL NOT NULL,
    checksum TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_used ON entries(used);
CREATE TABLE IF NOT EXISTS models (
    path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class EmbeddingCacheStats(BaseModel):
    path: str
    entries: int
    size_bytes: int
    max_entries: int
    entries_by_model: dict[str, int]  # "<model label> <dtype>" -> rows
    hits: int


def embedding_key(model: str, dtype: str, device_kind: str, text: str) -> str:
    """sha256 over everything that decides a text's vector."""
    material = f"{model}\0{dtype}\0{device_kind}\0{text}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _files(model_dir: Path) -> list[Path]:
    return sorted(p for p in model_dir.rglob("*") if p.is_file())


def hash_model_dir(model_dir: Path) -> str:
    """sha256 over the relative names and bytes of every file of the model folder."""
    digest = hashlib.sha256()
    for path in _files(model_dir):
        digest.update(path.relative_to(model_dir).as_posix().encode() + b"\0")
        with path.open("rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def _checksum(key: str, blob: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + blob).hexdigest()


class EmbeddingCache:
    """Unit vectors keyed by `embedding_key`. One short-lived connection per operation, as the
    judge cache, so the object is cheap to hold and safe in a forked worker."""

    def __init__(self, cache_dir: Path, max_entries: int = 500_000) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / DB_NAME
        self.max_entries = max_entries
        self.dir.mkdir(parents=True, exist_ok=True)
        open_store(self.path, "embedding cache", _SCHEMA)  # a damaged file: CacheDamaged, now

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return reading(self.path, "embedding cache")

    def model_identity(self, model_dir: Path) -> str:
        """The sha256 of the model folder's files, hashed once per (path, size, newest mtime).
        The folder's name is not part of it: a copy of the same weights is the same model."""
        model_dir = Path(model_dir).resolve()
        stats = [p.stat() for p in _files(model_dir)]
        sig = (str(model_dir), sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0))
        with self._reading() as con:
            row = con.execute("SELECT digest FROM models WHERE path=? AND size=? AND mtime_ns=?",
                              sig).fetchone()
            if row is None:
                row = (hash_model_dir(model_dir),)
                with con:
                    con.execute("INSERT OR REPLACE INTO models VALUES (?,?,?,?)", (*sig, row[0]))
        return str(row[0])

    def get_many(self, keys: Iterable[str], dim: int | None = None) -> dict[str, np.ndarray]:
        """Vectors (float32) for the keys present and intact; a hit refreshes the row's age."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        if not wanted:
            return found
        with self._reading() as con:
            for start in range(0, len(wanted), _BATCH):
                chunk = wanted[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                rows = con.execute(
                    f"SELECT key, vector, checksum FROM entries WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob, checksum in rows:
                    if _checksum(key, blob) != checksum or len(blob) % 4:
                        continue  # a damaged row is a miss, never a wrong vector
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if dim is None or vec.shape[0] == dim:
                        found[key] = vec
            if found:
                self._touch(con, list(found))
        return found

    @staticmethod
    def _touch(con: sqlite3.Connection, hit: list[str]) -> None:
        """Refresh the hits' age and count them. Best effort: the age only orders what the
        bound deletes, so a disk that refuses the write (full, read-only) must not fail a run
        whose vectors were read intact; the transaction is rolled back whole."""
        now = time.time()
        try:
            with con:
                for start in range(0, len(hit), _BATCH):
                    chunk = hit[start : start + _BATCH]
                    con.execute(f"UPDATE entries SET used=? WHERE key IN ({','.join('?' * len(chunk))})",
                                [now, *chunk])
                con.execute("INSERT INTO counters VALUES ('hits', ?) "
                            "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                            (len(hit),))
        except sqlite3.OperationalError:
            pass

    def put_many(self, model: str, dtype: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Write a batch in one transaction (all or nothing), then trim to `max_entries`.
        `model` and `dtype` label the rows for `stats` (the key already holds both)."""
        if not vectors:
            return
        now = time.time()
        rows = []
        for key, vec in vectors.items():
            blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
            rows.append((key, model, dtype, blob, now, _checksum(key, blob)))
        with writing(self.path, "embedding cache") as con:
            con.executemany("INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?)", rows)
            excess = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0] - self.max_entries
            if excess > 0:
                con.execute("DELETE FROM entries WHERE key IN "
                            "(SELECT key FROM entries ORDER BY used LIMIT ?)", (excess,))

    def stats(self) -> EmbeddingCacheStats:
        with self._reading() as con:
            by_model = {
                f"{model} {dtype}": n for model, dtype, n in con.execute(
                    "SELECT model, dtype, COUNT(*) FROM entries GROUP BY model, dtype")
            }
            hits = con.execute("SELECT value FROM counters WHERE name = 'hits'").fetchone()
        size = sum(p.stat().st_size for p in self.dir.glob(DB_NAME + "*") if p.is_file())
        return EmbeddingCacheStats(path=str(self.path), entries=sum(by_model.values()),
                                   size_bytes=size, max_entries=self.max_entries,
                                   entries_by_model=by_model, hits=hits[0] if hits else 0)

    def clear(self) -> int:
        """Delete every vector (and the hit counter). Returns rows deleted."""
        with self._reading() as con:
            with con:
                deleted = con.execute("DELETE FROM entries").rowcount
                con.execute("DELETE FROM counters")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute("VACUUM")
        return deleted
