"""The `cache` services: where the judge and embedding caches live, what they hold, clearing.

Why here and not in the CLI: which folder is "the cache" ($NEXAGAUGE_CACHE_DIR, then the
default) is a rule `calibrate`, `cache` and library callers must agree on. Both caches are
files in that one folder (judge.sqlite, embeddings.sqlite).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nexagauge_local.app.errors import CacheError
from nexagauge_local.embed import EmbeddingCache, EmbeddingCacheStats
from nexagauge_local.embed.cache import DB_NAME as EMBED_DB
from nexagauge_local.judge import JUDGE_DB, CacheStats, CacheStoreError, JudgeCache
from nexagauge_local.settings import RunSettings, default_cache_dir

__all__ = ["CacheStats", "EmbeddingCacheStats", "cache_errors", "cache_stats", "check_caches",
           "clear_cache", "clear_embedding_cache", "embedding_cache_stats", "resolve_cache_dir"]


@contextmanager
def cache_errors() -> Iterator[None]:
    """A cache that is damaged or refuses a write (sqlite_store.py) as the service failure
    the CLI prints as its one line, exit 2."""
    try:
        yield
    except CacheStoreError as exc:
        raise CacheError(str(exc)) from None


def check_caches(cache_dir: Path, *, judge: bool, embeddings: bool) -> None:
    """Open the caches a run will use that are already in `cache_dir`, so a damaged one stops
    the run before any work (CacheError) rather than when the run first reads it, which may
    be hours in. A missing one is created later, by whatever needs it; one the run does not
    use is not its concern."""
    with cache_errors():
        if judge and (cache_dir / JUDGE_DB).exists():
            JudgeCache(cache_dir)
        if embeddings and (cache_dir / EMBED_DB).exists():
            _embedding_cache(cache_dir)


def resolve_cache_dir(cache_dir: Path | None = None) -> Path:
    """The folder given, else the settings' (environment), else ~/.cache/nexagauge-local."""
    return cache_dir or RunSettings().cache_dir or default_cache_dir()


def _embedding_cache(cache_dir: Path | None) -> EmbeddingCache:
    return EmbeddingCache(resolve_cache_dir(cache_dir), RunSettings().embed_cache_max_entries)


def cache_stats(cache_dir: Path | None = None) -> CacheStats:
    """Entries, size on disk and hits per node of the judge cache."""
    with cache_errors():
        return JudgeCache(resolve_cache_dir(cache_dir)).stats()


def embedding_cache_stats(cache_dir: Path | None = None) -> EmbeddingCacheStats:
    """Vectors per model and dtype, size on disk, bound and hits of the embedding cache."""
    with cache_errors():
        return _embedding_cache(cache_dir).stats()


def clear_cache(cache_dir: Path | None = None, node: str | None = None) -> int:
    """Delete cached judge answers (all, or one node's); returns how many were deleted."""
    with cache_errors():
        return JudgeCache(resolve_cache_dir(cache_dir)).clear(node=node)


def clear_embedding_cache(cache_dir: Path | None = None) -> int:
    """Delete every cached embedding; returns how many were deleted."""
    with cache_errors():
        return _embedding_cache(cache_dir).clear()
