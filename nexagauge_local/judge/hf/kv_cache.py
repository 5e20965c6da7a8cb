"""Each decoding row's own keys and values, next to family prefixes held once.

Why not transformers' DynamicCache: it appends by `torch.cat`, copying the whole cache of every
layer at every decode step (a quarter of a 17-row step on 2 CPU cores), it would hold a shared
prefix once per row, and it pads every row to the batch's longest prompt (a 28-token suffix
next to a 654-token one holds and reads 654 slots at every step). This cache keeps only what is
the row's own (its prompt suffix, then its answer), in length buckets: rows of similar suffix
length share a left-padded buffer that grows by `CHUNK` slots at a time, so padding stays
within a bucket. `shared_prefix_attention` writes into it and reads from it.

Rows of different prefix families (and schemas) decode in one batch (fewer, fuller decode
steps: on 2 cores a step costs about 25 ms of weight reads before any row's work): each row
names its family's `SharedPrefix`, and the attention runs the prefix part once per family
present.

`SharedPrefix` (one family's prefix keys and values) lives here too: the cache names one per row.

Two phases, driven by hf/decode.py:
- `prefill_row(i)`: the next forward is row i's suffix alone (batch 1); its keys land in row
  i's slots, right-aligned in its bucket so the bucket's rows end on one column;
- `begin_step()`: the next forward is one new token for every row; each bucket takes a slot.
Batch rows must come sorted by suffix length (`length_buckets` cuts contiguous runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

CHUNK = 64  # slots added when a buffer is full: one copy per 64 decode steps, not one per step


@dataclass(frozen=True)
class SharedPrefix:
    """One family's prefix: its token count and each layer's (keys, values), batch 1."""

    length: int
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]


def length_buckets(lengths: list[int], slack: float = 1.5, extra: int = 32) -> list[int]:
    """Sizes of contiguous runs of ascending `lengths` whose longest is at most `slack` x the
    run's shortest + `extra`: padding stays under about a third of a bucket's slots, while a
    handful of buckets keeps the per-bucket attention calls few."""
    sizes: list[int] = []
    first = None
    for n in lengths:
        if first is None or n > slack * first + extra:
            sizes.append(0)
            first = n
        sizes[-1] += 1
    return sizes


class _Bucket:
    """Consecutive batch rows sharing one left-padded buffer per layer."""

    def __init__(self, lengths: list[int], layers: int, kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: Any) -> None:
        self.width = max(lengths)
        shape = (len(lengths), kv_heads, self.width + CHUNK, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.valid = torch.zeros(shape[0], shape[2], dtype=torch.bool, device=device)
        for i, n in enumerate(lengths):
            self.valid[i, self.width - n : self.width] = True
        self.filled = self.width
        self.mask: torch.Tensor | None = None

    @property
    def rows(self) -> int:
        return self.valid.shape[0]

    def begin_step(self) -> None:
        if self.filled == self.valid.shape[1]:
            self.keys = [_wider(k) for k in self.keys]
            self.values = [_wider(v) for v in self.values]
            self.valid = torch.cat([self.valid, self.valid.new_zeros((self.rows, CHUNK))], 1)
        self.valid[:, self.filled] = True
        self.filled += 1
        valid = self.valid[:, : self.filled]
        mask = torch.zeros(valid.shape, dtype=self.keys[0].dtype, device=valid.device)
        self.mask = mask.masked_fill_(~valid, float("-inf")).view(self.rows, 1, 1, -1)

    def select(self, keep: torch.Tensor) -> None:
        self.keys = [k.index_select(0, keep) for k in self.keys]
        self.values = [v.index_select(0, keep) for v in self.values]
        self.valid = self.valid.index_select(0, keep)
        self.mask = None


def _wider(t: torch.Tensor) -> torch.Tensor:
    return torch.cat([t, t.new_zeros((*t.shape[:2], CHUNK, *t.shape[3:]))], dim=2)


class RowCache:
    def __init__(self, prefixes: list[SharedPrefix], suffix_lengths: list[int], *, layers: int,
                 kv_heads: int, head_dim: int, dtype: torch.dtype, device: str | torch.device) -> None:
        self.families: list[SharedPrefix] = []
        index: dict[int, int] = {}
        for p in prefixes:
            if id(p) not in index:
                index[id(p)] = len(self.families)
                self.families.append(p)
        self.family = torch.tensor([index[id(p)] for p in prefixes], dtype=torch.long)
        self._groups = self._group()
        self.buckets: list[_Bucket] = []
        start = 0
        for size in length_buckets(suffix_lengths):
            part = suffix_lengths[start : start + size]
            self.buckets.append(_Bucket(part, layers, kv_heads, head_dim, dtype, device))
            start += size
        self._row: tuple[_Bucket, int] | None = None
        self._row_family = 0
        self.writes = 0  # layer writes so far: a forward that wrote none bypassed the cache

    @classmethod
    def for_model(cls, model: Any, prefixes: list[SharedPrefix], suffix_lengths: list[int]
                  ) -> RowCache:
        cfg = model.config
        heads = cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        return cls(prefixes, suffix_lengths, layers=cfg.num_hidden_layers,
                   kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
                   head_dim=head_dim, dtype=model.dtype, device=model.device)  # fmt: skip

    @property
    def rows(self) -> int:
        return int(self.family.shape[0])

    @property
    def prefilling(self) -> bool:
        return self._row is not None

    def prefill_row(self, row: int | None) -> None:
        """The next forward is this batch row's suffix alone (None: prefill is over)."""
        if row is None:
            self._row = None
            return
        self._row_family = int(self.family[row])
        for bucket in self.buckets:
            if row < bucket.rows:
                self._row = (bucket, row)
                return
            row -= bucket.rows
        raise IndexError("row outside the batch")

    def begin_step(self) -> None:
        """The next forward adds one token to every row: each bucket takes a slot."""
        for bucket in self.buckets:
            bucket.begin_step()

    def prefix_groups(self) -> list[tuple[SharedPrefix, torch.Tensor | None]]:
        """(prefix, the batch rows that attend it) for the next forward; None: every row."""
        if self._row is not None:
            return [(self.families[self._row_family], None)]
        return self._groups

    def store_row(self, layer: int, key: torch.Tensor, value: torch.Tensor) -> None:
        """Write one row's prefill keys/values (batch 1) into its bucket slots."""
        assert self._row is not None
        self.writes += 1
        bucket, i = self._row
        n = key.shape[2]
        bucket.keys[layer][i, :, bucket.width - n : bucket.width] = key[0]
        bucket.values[layer][i, :, bucket.width - n : bucket.width] = value[0]

    def step_parts(self, layer: int, key: torch.Tensor, value: torch.Tensor) -> Iterator[
            tuple[int, int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Write a decode step's new keys/values; yield each bucket's (first row, end row,
        keys, values, additive mask) in use."""
        self.writes += 1
        start = 0
        for bucket in self.buckets:
            end = start + bucket.rows
            if bucket.mask is None:
                raise RuntimeError("RowCache.begin_step() must precede a decode forward")
            slot = bucket.filled - 1
            bucket.keys[layer][:, :, slot : slot + 1] = key[start:end]
            bucket.values[layer][:, :, slot : slot + 1] = value[start:end]
            yield (start, end, bucket.keys[layer][:, :, : bucket.filled],
                   bucket.values[layer][:, :, : bucket.filled], bucket.mask)  # fmt: skip
            start = end

    def select(self, keep: torch.Tensor) -> None:
        """Keep only these batch rows, in order (finished rows leave and free their slots)."""
        start, kept = 0, []
        for bucket in self.buckets:
            end = start + bucket.rows
            local = keep[(keep >= start) & (keep < end)] - start
            if local.numel():
                bucket.select(local)
                kept.append(bucket)
            start = end
        self.buckets = kept
        self.family = self.family.index_select(0, keep.to(self.family.device))
        self._groups = self._group()

    def _group(self) -> list[tuple[SharedPrefix, torch.Tensor | None]]:
        present = torch.unique(self.family).tolist()
        if len(present) == 1:
            return [(self.families[present[0]], None)]
        return [(self.families[f], (self.family == f).nonzero().view(-1)) for f in present]
