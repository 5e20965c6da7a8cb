"""How much of a node's prompt tokens a prefix cache can reuse (a benchmark measure).

The prompt layout (instructions and rubric first, the case's fields last) exists so engines
with prefix caching (vLLM's automatic prefix caching) compute the shared part once. These
pure functions measure how well that works on real prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i



@dataclass(frozen=True)
class PrefixStats:
    prompts: int
    total_tokens: int
    # Tokens at the start of EVERY prompt of the node (what a per-batch shared prefill saves).
    common_prefix_tokens: int
    # Distinct tokens a perfect prefix cache must still compute: the size of the token trie.
    unique_tokens: int

    @property
    def common_share(self) -> float:
        return self.common_prefix_tokens * self.prompts / self.total_tokens if self.total_tokens else 0.0

    @property
    def reusable_share(self) -> float:
        """Share of prompt tokens a perfect prefix cache serves from cache (1 - trie/total)."""
        return 1 - self.unique_tokens / self.total_tokens if self.total_tokens else 0.0


def prefix_stats(rows: Sequence[Sequence[int]]) -> PrefixStats:
    """Sorting makes each row's longest prefix shared with any earlier row its neighbour's, so
    the trie size is sum(len - lcp with predecessor) in one pass."""
    if not rows:
        return PrefixStats(0, 0, 0, 0)
    ordered = sorted(tuple(r) for r in rows)
    total = sum(len(r) for r in ordered)
    unique = len(ordered[0])
    for prev, cur in pairwise(ordered):
        unique += len(cur) - common_prefix(prev, cur)
    common = min(common_prefix(ordered[0], ordered[-1]), min(len(r) for r in ordered))
    return PrefixStats(len(ordered), total, common, unique)

