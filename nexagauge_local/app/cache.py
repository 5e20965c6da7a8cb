"""The `cache` services: where the judge and embedding caches live, what they hold, clearing.

Why here and not in the CLI: which folder is "the cache" ($NEXAGAUGE_CACHE_DIR, then the
default) is a rule `calibrate`, `cache` and library callers must agree on. Both caches are
files in that one folder (judge.sqlite, embeddings.sqlite).
"""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.embed import EmbeddingCache, EmbeddingCacheStats
from nexagauge_local.judge import CacheStats, JudgeCache
from nexagauge_local.settings import RunSettings, default_cache_dir

__all__ = ["CacheStats", "EmbeddingCacheStats", "cache_stats", "clear_cache",
           "clear_embedding_cache", "embedding_cache_stats", "resolve_cache_dir"]


def resolve_cache_dir(cache_dir: Path | None = None) -> Path:
    """The folder given, else the settings' (environment), else ~/.cache/nexagauge-local."""
    return cache_dir or RunSettings().cache_dir or default_cache_dir()


def _embedding_cache(cache_dir: Path | None) -> EmbeddingCache:
    return EmbeddingCache(resolve_cache_dir(cache_dir), RunSettings().embed_cache_max_entries)


def cache_stats(cache_dir: Path | None = None) -> CacheStats:
    """Entries, size on disk and hits per node of the judge cache."""
    return JudgeCache(resolve_cache_dir(cache_dir)).stats()


def embedding_cache_stats(cache_dir: Path | None = None) -> EmbeddingCacheStats:
    """Vectors per model and dtype, size on disk, bound and hits of the embedding cache."""
    return _embedding_cache(cache_dir).stats()


def clear_cache(cache_dir: Path | None = None, node: str | None = None) -> int:
    """Delete cached judge answers (all, or one node's); returns how many were deleted."""
    return JudgeCache(resolve_cache_dir(cache_dir)).clear(node=node)


def clear_embedding_cache(cache_dir: Path | None = None) -> int:
    """Delete every cached embedding; returns how many were deleted."""
    return _embedding_cache(cache_dir).clear()
