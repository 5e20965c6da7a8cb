"""How a local engine's requests are cut into micro-batches, as pure functions.

Why apart from the engine: the cut decides memory and speed, and is checked on hand-made
lengths and ids without loading a model. A micro-batch holds rows x longest prompt tokens of
KV cache; rows of one rubric share their first few hundred ids, which the hf engine prefills
once (`shared_prefix`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nexagauge_local.judge.schemas import grammar_key
from nexagauge_local.judge.types import JudgeRequest

# Below this many shared ids a prefix cache costs more than the rows' own prefill would.
MIN_SHARED_PREFIX = 16
# The KV cache a CPU micro-batch may hold by default. Measured with the demo judge (64 redteam
# requests, 2 cores): budgets of 1 GiB, 512, 256 and 128 MiB of KV took 216, 203, 188 and 222 s
# (peak RSS 3.3, 2.1, 1.8, 1.6 GB): past ~256 MiB each step copies more cache than it saves.
CPU_KV_BYTES = 1 << 28


def micro_batches(
    order: Sequence[int],
    lengths: Sequence[int],
    token_budget: int,
    max_batch: int,
    ids: Sequence[Sequence[int]] | None = None,
) -> list[list[int]]:
    """`order` (request positions, as they should be batched) cut into runs with
    rows x longest prompt <= `token_budget` and at most `max_batch` rows; a request over the
    budget alone is a batch of one. With `ids` (rows sorted by them), a run also ends where
    the rows' common prefix would shrink by a tenth or more (a rubric's rows end, another's
    begin), so each run keeps its long shared prefix."""
    batches: list[list[int]] = [[]]
    common: int | None = None  # the current run's shared prefix (None: fewer than two rows)
    for i in order:
        rows = batches[-1] + [i]
        full = len(rows) * max(lengths[j] for j in rows) > token_budget
        with_row = _common(ids[rows[0]], ids[i]) if ids is not None and len(rows) > 1 else None
        drop = (common is not None and with_row is not None and common >= MIN_SHARED_PREFIX
                and with_row < 0.9 * common)  # fmt: skip
        if len(rows) > 1 and (full or drop or len(rows) > max_batch):
            batches.append([i])
            common = None
        else:
            batches[-1] = rows
            common = with_row if common is None else min(common, with_row or 0)
    return [b for b in batches if b]


def grouped_batches(
    requests: Sequence[JudgeRequest],
    ids: Sequence[list[int]],
    positions: Iterable[int],
    token_budget: int,
    max_batch: int,
) -> list[list[int]]:
    """Micro-batches of the requests at `positions`: one grammar and one max_tokens a batch
    (one `generate` call), each group's rows sorted by their ids so a rubric's rows sit side
    by side, then cut by `micro_batches`."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i in positions:
        groups.setdefault((grammar_key(requests[i]), requests[i].max_tokens), []).append(i)
    lengths = [len(p) for p in ids]
    return [batch for group in groups.values()
            for batch in micro_batches(sorted(group, key=lambda i: ids[i]), lengths, token_budget,
                                       max_batch, ids)]  # fmt: skip


def left_padded(
    ids: Sequence[Sequence[int]], pad: int
) -> tuple[int, list[list[int]], list[list[int]]]:
    """A micro-batch laid out for `generate`: (shared, rows, attention mask). Every row starts
    with the rows' `shared_prefix` (prefilled once), then its own ids left-padded to the
    longest row."""
    shared, width = shared_prefix(ids), max(len(p) for p in ids)
    rows = [[*ids[0][:shared], *[pad] * (width - len(p)), *p[shared:]] for p in ids]
    mask = [[1] * shared + [0] * (width - len(p)) + [1] * (len(p) - shared) for p in ids]
    return shared, rows, mask


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


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


def default_token_budget(on_gpu: bool, kv_bytes_per_token: int) -> int:
    """Prompt tokens a micro-batch may hold (rows x longest prompt) when the profile says none:
    on a CPU host as many as fit CPU_KV_BYTES of KV cache (each row holds its own copy of the
    shared prefix): a small judge batches a dozen rows or so (fewer decode steps, each one
    pass over the weights) while each step's copy of the cache stays small."""
    if on_gpu:
        return 65536
    return max(1024, CPU_KV_BYTES // max(1, kv_bytes_per_token))


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """A transformers model config's KV cache per token: layers x KV heads x head size x 2."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return int(config.num_hidden_layers * heads * head_dim * 2 * dtype_bytes)
