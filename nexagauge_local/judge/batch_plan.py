"""How a local engine's requests are cut into micro-batches, as pure functions.

Why apart from the engine: the cut decides memory and speed, and is checked on hand-made
lengths and ids without loading a model. A micro-batch holds rows x longest prompt tokens of
KV cache; rows of one rubric share their first few hundred ids, which the hf engine prefills
once (`shared_prefix`).
"""

from __future__ import annotations

from collections.abc import Sequence

# Below this many shared ids a prefix cache costs more than the rows' own prefill would.
MIN_SHARED_PREFIX = 16


def micro_batches(
    order: Sequence[int], lengths: Sequence[int], token_budget: int, max_batch: int
) -> list[list[int]]:
    """`order` (request positions, as they should be batched) cut into runs with
    rows x longest prompt <= `token_budget` and at most `max_batch` rows; a request over the
    budget alone is a batch of one."""
    batches: list[list[int]] = [[]]
    for i in order:
        rows = batches[-1] + [i]
        full = len(rows) * max(lengths[j] for j in rows) > token_budget
        if len(rows) > 1 and (full or len(rows) > max_batch):
            batches.append([i])
        else:
            batches[-1] = rows
    return [b for b in batches if b]


def shared_prefix(ids: Sequence[Sequence[int]]) -> int:
    """How many first ids every row has in common, short of each row's last id (`generate`
    needs at least one id of each row after the cached part); 0 for a single row or below
    MIN_SHARED_PREFIX."""
    if len(ids) < 2:
        return 0
    limit = min(len(p) for p in ids) - 1
    first = ids[0]
    n = 0
    while n < limit and all(p[n] == first[n] for p in ids):
        n += 1
    return n if n >= MIN_SHARED_PREFIX else 0


def default_token_budget(on_gpu: bool, dtype: str) -> int:
    """Prompt tokens a micro-batch may hold (rows x longest prompt) when the profile says none;
    float32's KV cache is twice bfloat16's."""
    return 65536 if on_gpu else 4096 if dtype == "float32" else 8192
