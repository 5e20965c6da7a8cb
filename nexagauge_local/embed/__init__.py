"""Sentence embeddings (all-MiniLM-L6-v2 from a PyPI package) and their on-disk cache.

`encoder` turns texts into unit vectors, loading the model only when a text is not cached;
`cache` keeps vectors across runs beside the judge cache, so re-scoring with another threshold
or gate never runs the model again. Importing this package loads no torch.
"""

from nexagauge_local.embed.cache import (
    EmbeddingCache,
    EmbeddingCacheStats,
    embedding_key,
    hash_model_dir,
)
from nexagauge_local.embed.encoder import (
    Embedder,
    bundled_model_path,
    cpu_has_native_bf16,
    resolve_embed_dtype,
)

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "EmbeddingCacheStats",
    "bundled_model_path",
    "cpu_has_native_bf16",
    "embedding_key",
    "hash_model_dir",
    "resolve_embed_dtype",
]
