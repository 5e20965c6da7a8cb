"""How much of a node's prompt tokens a prefix cache can reuse.

The prompt layout (instructions and rubric first, the case's fields last) exists so engines
with prefix caching (vLLM's automatic prefix caching, the hf backend's shared-prefix prefill)
compute the shared part once. These pure functions measure how well that works on real prompts.
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


def common_prefix_len(rows: Sequence[Sequence[int]]) -> int:
    """Longest prefix common to every row, leaving each row at least one token of its own to
    prefill (a forward needs one new token to produce the next one's logits)."""
    if not rows:
        return 0
    shared = min(common_prefix(rows[0], r) for r in rows)
    return max(0, min(shared, min(len(r) for r in rows) - 1))


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


def prefix_families(rows: Sequence[Sequence[int]]) -> list[list[int]]:
    """Row indices in families of prompts that share a long prefix, for shared-prefix prefill.

    A node's prompts of one schema share the instructions, and each metric's rubric after them:
    a micro-batch that mixes two metrics can share only the instructions (139 tokens on the
    redteam prompts), one with a single metric shares its whole rubric too. Sorted token lists
    put every family side by side; a new family starts where taking the next prompt in would
    more than halve what the current family shares. One pass over neighbours after the sort
    (no clustering library works on token prefixes).
    """
    if not rows:
        return []
    order = sorted(range(len(rows)), key=lambda i: list(rows[i]))
    families = [[order[0]]]
    shared: int | None = None  # tokens every member of the last family shares; None: one member
    for prev, i in pairwise(order):
        lcp = common_prefix(rows[prev], rows[i])
        joined = lcp if shared is None else min(shared, lcp)
        if shared is not None and 2 * joined < shared:
            families.append([i])
            shared = None
        else:
            families[-1].append(i)
            shared = joined
    return families


def split_families(rows: Sequence[Sequence[int]], family_tokens: int = 64) -> list[list[int]]:
    """Row indices in prefix families for decoding against prefixes held once (hf/kv_cache.py),
    where families share batches and a family costs about `family_tokens` of work (one more
    prefix attention call per layer and step), not a batch of its own.

    Divisive over the sorted rows' neighbour prefixes (the trie's branch points): a run whose
    shared prefix is S splits where neighbours share only S, when the prefill tokens the
    sub-runs' longer prefixes save (less the S tokens each extra part computes again) exceed
    `family_tokens` per extra family; each accepted part is split again. `prefix_families`'
    one greedy pass lets a few rows that share less with a large family come first and cap
    its prefix (the peer sample: 378 shared instead of 471).
    """
    n = len(rows)
    if n == 0:
        return []
    order = sorted(range(n), key=lambda i: list(rows[i]))
    lcp = [common_prefix(rows[a], rows[b]) for a, b in pairwise(order)]

    def shared(lo: int, hi: int) -> int:  # rows order[lo:hi]; a lone row keeps one own token
        return len(rows[order[lo]]) - 1 if hi - lo == 1 else min(lcp[lo : hi - 1])

    families: list[list[int]] = []
    stack = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        s = shared(lo, hi)
        cuts = [k + 1 for k in range(lo, hi - 1) if lcp[k] == s] if hi - lo > 1 else []
        parts = list(pairwise([lo, *cuts, hi]))
        # Each part computes its own prefix, the S tokens included; its other rows skip the
        # tokens between S and its own prefix.
        saved = sum((b - a - 1) * (shared(a, b) - s) for a, b in parts) - (len(parts) - 1) * s
        if len(parts) > 1 and saved > family_tokens * (len(parts) - 1):
            stack.extend(reversed(parts))
        else:
            families.append([order[k] for k in range(lo, hi)])
    return families
