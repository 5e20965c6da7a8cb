"""How the CPU decode groups prompts into micro-batches: pure functions, testable without a
model.

Why batches cross prefix families: a decode step costs about 25 ms on 2 cores before any row's
own work (the weights are read once per step, whatever the rows), so the run's decode time is
mostly its step count: the sum over batches of each batch's longest answer. With each family's
prefix held once (hf/cascade.py) a batch of 27 rows fits where 4 did, and families need not
be split apart: on the peer sample's redteam prompts 7 batches became 2.

Why families stay in order (not all rows sorted by length): a prefix is computed when its
family's first row enters a batch and freed after its last row's batch, so at most the
families of one or two batches are held, however many the node has (every custom policy can
be its own family).
"""

from __future__ import annotations

Row = tuple[int, int]  # (request index, family index)


def shared_batches(
    families: list[list[int]],
    prefix_lengths: list[int],
    lengths: list[int],
    budget: int,
    max_batch: int,
) -> list[list[Row]]:
    """Cut the families' rows, in order, into batches whose KV cache holds at most `budget`
    tokens: each family's prefix once plus rows x the longest own suffix. A row that alone
    exceeds the budget still gets a batch of its own (the model's context bounds it)."""
    batches: list[list[Row]] = []
    current: list[Row] = []
    held: dict[int, int] = {}  # family -> prefix tokens, in the current batch
    longest = 0
    for f, family in enumerate(families):
        for i in family:
            suffix = lengths[i] - prefix_lengths[f]
            grown = max(longest, suffix)
            prefixes = sum(held.values()) + (0 if f in held else prefix_lengths[f])
            if current and (prefixes + (len(current) + 1) * grown > budget
                            or len(current) >= max_batch):  # fmt: skip
                batches.append(current)
                current, held, grown = [], {}, suffix
            current.append((i, f))
            held[f] = prefix_lengths[f]
            longest = grown
    if current:
        batches.append(current)
    return batches


def last_use(batches: list[list[Row]]) -> dict[int, int]:
    """Family index -> the last batch that needs its prefix."""
    return {f: b for b, batch in enumerate(batches) for _, f in batch}


def default_token_budget(on_gpu: bool, dtype: str) -> int:
    """Tokens a micro-batch may hold, when the profile says none.

    On CPU the budget is KV-cache tokens (hf/batches.py: each family prefix once + rows x the
    longest own suffix), what the decode's memory scales with. Peer sample redteam, demo judge,
    2 cores (docs/benchmarks.md): bfloat16 peaks at 1.33 GB at 24576 (31.3 s) and 1.43 GB at
    32768 (29.5 s); float32 (CPUs without native bf16; its KV is twice the size) peaks at
    1.38 GB at 2048 (69.3 s), 1.43 GB at 3072 (59.7 s), 1.64 GB at 8192 (50.8 s). Both
    defaults keep the 1.5 GB target with room for longer answers. On a GPU it is prompt tokens
    (rows x longest prompt)."""
    if on_gpu:
        return 65536
    return 3072 if dtype == "float32" else 24576
