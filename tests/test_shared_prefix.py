"""The CPU decode against family prefixes held once (hf/cascade.py, hf/kv_cache.py,
hf/batches.py, prefix.split_families): the same logits and answers as full prompts, with the
planning rules as pure functions."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from nexagauge_local.judge.hf import kv_cache as row_cache
from nexagauge_local.judge.hf.batches import last_use, shared_batches
from nexagauge_local.judge.hf.cascade import install
from nexagauge_local.judge.hf.decode import _forward_rows, _prefill_rows, compute_prefix
from nexagauge_local.judge.hf.families import split_families
from nexagauge_local.judge.hf.kv_cache import length_buckets
from tests.test_judge_hf import SCHEMAS, _requests


def _full_logits(model, seq: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=torch.tensor([seq])).logits[0, -1].float()


def test_prefix_rows_give_the_full_prompts_logits(tiny_backend, monkeypatch) -> None:
    """Two families, two length buckets, buffers that grow every other step and a row that
    leaves mid-way: every step's logits equal a plain forward over the whole sequence."""
    monkeypatch.setattr(row_cache, "CHUNK", 2)
    model = tiny_backend.model
    assert tiny_backend.shared_prefix  # CPU: the backend installed the attention
    fam_a, fam_b = [1, *range(10, 40)], [1, *range(100, 125)]
    rows = [(fam_a, [200 + i] * (2 + i)) for i in range(3)]
    rows += [(fam_b, [300 + i] * (3 + 30 * i)) for i in range(3)]
    rows.sort(key=lambda r: len(r[1]))  # the backend hands rows sorted by suffix length
    held = {id(fam_a): compute_prefix(model, fam_a), id(fam_b): compute_prefix(model, fam_b)}
    prompts = [p + s for p, s in rows]
    prefixes = [held[id(p)] for p, _ in rows]
    assert len(length_buckets([len(s) for _, s in rows])) > 1
    with torch.inference_mode():
        logits, pos, cache = _prefill_rows(model, prompts, "cpu", prefixes)
        seqs = [list(p) for p in prompts]
        for step in range(5):
            for i, seq in enumerate(seqs):
                torch.testing.assert_close(logits[i], _full_logits(model, seq), atol=1e-4, rtol=1e-4)
            nxt = logits.argmax(-1)
            for i, seq in enumerate(seqs):
                seq.append(int(nxt[i]))
            if step == 2:
                keep = torch.tensor([0, 2, 3, 5])
                cache.select(keep)
                seqs = [seqs[int(k)] for k in keep]
                nxt, pos = nxt[keep], pos[keep]
            cache.begin_step()
            logits = _forward_rows(model, nxt.view(-1, 1), pos.unsqueeze(1), cache)
            pos = pos + 1


def test_shared_path_answers_like_the_plain_path(tiny_backend, monkeypatch) -> None:
    """Same requests, prefixes held once or not: the same greedy answers, token for token,
    with schemas of different grammars and limits decoded in one batch."""
    reqs = _requests(SCHEMAS["redteam-binary"], 6) + _requests(SCHEMAS["geval-scale"], 5)
    shared = tiny_backend.generate(reqs)
    monkeypatch.setattr(tiny_backend, "shared_prefix", False)
    plain = tiny_backend.generate(reqs)
    assert [r.raw_text for r in shared] == [r.raw_text for r in plain]
    assert [r.output_tokens for r in shared] == [r.output_tokens for r in plain]
    assert all(r.error is None and r.gpu_seconds > 0 for r in shared)


def test_install_leaves_gpu_models_alone() -> None:
    assert install(SimpleNamespace(device="cuda:0")) is False


def test_length_buckets_keep_padding_bounded() -> None:
    assert length_buckets([]) == []
    assert length_buckets([5]) == [1]
    sizes = length_buckets([28, 30, 39, 83, 85, 130, 203, 280, 331, 561])
    assert sum(sizes) == 10
    start = 0
    lengths = [28, 30, 39, 83, 85, 130, 203, 280, 331, 561]
    for size in sizes:
        part = lengths[start : start + size]
        assert part[-1] <= 1.5 * part[0] + 32
        start += size


def test_shared_batches_hold_prefixes_once_within_budget() -> None:
    families = [[0, 1, 2], [3, 4], [5]]
    prefix_lengths = [40, 30, 9]
    lengths = [50, 60, 70, 35, 45, 10]
    batches = shared_batches(families, prefix_lengths, lengths, budget=150, max_batch=64)
    assert [i for b in batches for i, _ in b] == [0, 1, 2, 3, 4, 5]  # families stay in order
    for b in batches:
        held = sum(prefix_lengths[f] for f in {f for _, f in b})
        longest = max(lengths[i] - prefix_lengths[f] for i, f in b)
        assert held + len(b) * longest <= 150 or len(b) == 1
    assert any(len({f for _, f in b}) > 1 for b in batches)  # families share a batch
    assert last_use(batches)[0] == 0 and last_use(batches)[2] == len(batches) - 1
    # max_batch caps rows; a row bigger than the budget still gets a batch of its own
    assert all(len(b) <= 2 for b in shared_batches(families, prefix_lengths, lengths, 10**6, 2))
    assert shared_batches([[0]], [5], [10_000], budget=100, max_batch=8) == [[(0, 0)]]


def test_split_families_keep_a_large_family_whole() -> None:
    """A few prompts sharing less with a big family sort first; the split still gives the big
    family its own long prefix (the peer sample: 471 tokens, not 378)."""
    head, rubric = list(range(1, 41)), list(range(100, 160))
    big = [head + rubric + [500 + i, 1] for i in range(10)]
    odd = [head + [90, 91, i] for i in range(2)]
    rows = odd + big
    families = split_families(rows, family_tokens=8)
    by_size = sorted(families, key=len)
    assert sorted(by_size[-1]) == list(range(2, 12))  # the big family, whole
    assert sorted(i for f in families for i in f) == list(range(12))
    assert split_families([]) == []
    assert split_families([[1, 2, 3]]) == [[0]]
    # rows that share little are not split apart for nothing
    assert len(split_families([[1, 2, 3, i] for i in range(4)], family_tokens=64)) == 1


@pytest.mark.parametrize("n", [1, 3])
def test_prefix_attention_without_a_row_cache_is_sdpa(tiny_backend, n: int) -> None:
    """The installed attention is transformers' SDPA wherever no row cache is passed."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from nexagauge_local.judge.hf.cascade import shared_prefix_attention

    module = tiny_backend.model.model.layers[0].self_attn
    q, k, v = torch.randn(2, 4, n, 16), torch.randn(2, 2, n, 16), torch.randn(2, 2, n, 16)
    ours, _ = shared_prefix_attention(module, q, k, v, None, scaling=0.25)
    ref, _ = sdpa_attention_forward(module, q, k, v, None, scaling=0.25)
    torch.testing.assert_close(ours, ref)
