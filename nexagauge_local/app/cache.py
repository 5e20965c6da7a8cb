"""The `cache` services: where the judge cache lives, what it holds, and clearing it.

Why here and not in the CLI: which folder is "the cache" ($NEXAGAUGE_CACHE_DIR, then the
default) is a rule `calibrate`, `cache` and library callers must agree on.
"""

from __future__ import annotations

from pathlib import Path

from nexagauge_local.judge import CacheStats, JudgeCache
from nexagauge_local.settings import RunSettings, default_cache_dir

__all__ = ["CacheStats", "cache_stats", "clear_cache", "resolve_cache_dir"]


def resolve_cache_dir(cache_dir: Path | None = None) -> Path:
    """The folder given, else the settings' (environment), else ~/.cache/nexagauge-local."""
    return cache_dir or RunSettings().cache_dir or default_cache_dir()


def cache_stats(cache_dir: Path | None = None) -> CacheStats:
    """Entries, size on disk and hits per node of the judge cache."""
    return JudgeCache(resolve_cache_dir(cache_dir)).stats()


def clear_cache(cache_dir: Path | None = None, node: str | None = None) -> int:
    """Delete cached judge answers (all, or one node's); returns how many were deleted."""
    return JudgeCache(resolve_cache_dir(cache_dir)).clear(node=node)
