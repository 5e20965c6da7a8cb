"""A folder of computed results keyed by a hash of everything they were computed from.

Why: a re-score of an unchanged dataset answers every judgement from the cache, and then the
run-level extras dominate its time: the red-team observability block (scikit-learn's import
alone is ~1.8 s on 2 busy cores) and the report's charts (matplotlib's import and layout,
~1.7 s). Both are pure functions of small inputs, so the result is kept under the run's cache
folder and the next run with the same inputs reads it back instead of importing anything.

A key must name *every* input of the computation, the code that computes it included
(`source_digest`) and the version of any library it calls (`dist_version`); a wrong key gives
a stale result, so callers build keys from the exact arguments, never from a summary of them.
A missing, unreadable or corrupt entry is only a miss. The folder is bounded: past
`max_entries` files, the least recently used are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

MAX_ENTRIES = 512


def memo_key(*parts: Any) -> str:
    """sha256 of the parts as canonical JSON (sorted keys, no spaces): equal inputs, one key."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=True, default=_plain)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """Canonical form of the values JSON has no name for (tuples are lists already)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"memo_key cannot name a {type(value).__name__}")


@cache
def source_digest(path: str) -> str:
    """sha256 of a source file: part of a key, so an edit to the code that computes a memoised
    result is a miss, not a stale hit."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@cache
def dist_version(name: str) -> str:
    """The installed version of a distribution (package metadata only, nothing imported)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


class ResultMemo:
    """Text results in `folder/<key><suffix>`, written atomically."""

    def __init__(self, folder: str | os.PathLike[str], suffix: str = ".txt",
                 max_entries: int = MAX_ENTRIES) -> None:
        self.folder = Path(folder)
        self.suffix = suffix
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}{self.suffix}"

    def get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            text = path.read_text(encoding="utf-8")
            os.utime(path)  # recently used: pruned last
        except (OSError, UnicodeDecodeError):
            self.misses += 1
            return None
        self.hits += 1
        return text

    def put(self, key: str, text: str) -> None:
        """Store a result; a folder that cannot be written only costs recomputing next time."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".memo.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, self._path(key))
            self._prune()
        except OSError:
            return

    def _prune(self) -> None:
        entries = [p for p in self.folder.glob(f"*{self.suffix}") if not p.name.startswith(".")]
        if len(entries) <= self.max_entries:
            return
        entries.sort(key=lambda p: p.stat().st_mtime_ns)
        for old in entries[: len(entries) - self.max_entries]:
            old.unlink(missing_ok=True)

    def get_json(self, key: str) -> Any | None:
        text = self.get(key)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def put_json(self, key: str, value: Any) -> None:
        """Keys keep their order: a result read back is written out as the computed one was."""
        self.put(key, json.dumps(value, allow_nan=True))
