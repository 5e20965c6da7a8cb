"""Attention over one shared prompt prefix held once, for the CPU decode loop.

Why: every prompt of a prefix family (hf/families.py) starts with the same instructions and rubric
(471 of the peer sample's redteam prompt tokens). A KV cache copied to every row costs memory
(it capped a CPU micro-batch at 4-8 rows) and every decode step reads each copy again; on 2
cores a step's time then grows with its rows and the run decodes in many small batches. Here the
prefix's keys and values are computed once per family and kept as one (1, kv_heads, P, dim)
block; each row's own keys and values (its suffix and answer) live in a `RowCache`
(hf/kv_cache.py). Attention is split in two (cascade attention, as FlashInfer and vLLM do on
GPUs):
- every query of every row against the prefix, as a single batch (the prefix is read once per
  layer, not once per row) with no mask: every row sees the whole prefix;
- each row's queries against its own keys, causal, with the row cache's padding mask;
and the two partial results are merged exactly by their log-sum-exp.

Both parts run torch's CPU flash-attention kernel (the one `F.scaled_dot_product_attention`
dispatches to on CPU), called through its aten op because only that returns the log-sum-exp
the merge needs; no library offers a merge of partial attentions on CPU.

The model runs with transformers' cache off (`use_cache=False`): this function stores each
layer's new keys and values in the row cache itself, so the cache grows in place (no
`torch.cat` of the whole cache per step, which cost a quarter of a 17-row step). Without the
`row_cache` keyword it is transformers' own SDPA attention, so the model behaves as before
everywhere else.
"""

from __future__ import annotations

from typing import Any

import torch

from nexagauge_local.judge.hf.kv_cache import RowCache

ATTENTION = "ngl_shared_prefix"
_FLASH = "_scaled_dot_product_flash_attention_for_cpu"


def install(model: Any) -> bool:
    """Route the model's attention through `shared_prefix_attention` (CPU only). Registering a
    named implementation is how transformers takes custom attention (AttentionInterface); the
    registration is idempotent. False when this torch, transformers or model cannot take it."""
    if str(model.device) != "cpu" or not hasattr(torch.ops.aten, _FLASH):
        return False
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

        AttentionInterface.register(ATTENTION, shared_prefix_attention)
        AttentionMaskInterface.register(ATTENTION, sdpa_mask)
        model.set_attn_implementation(ATTENTION)
    except (ImportError, AttributeError, ValueError, TypeError):
        return False
    return getattr(model.config, "_attn_implementation", None) == ATTENTION


def _flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
           scale: float | None, causal: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    out, lse = getattr(torch.ops.aten, _FLASH)(q, k, v, 0.0, causal, attn_mask=mask, scale=scale)
    return out, lse


def shared_prefix_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    row_cache: RowCache | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function contract: query (b, heads, q, d), key/value (b,
    kv_heads, q, d) of the new tokens; returns (b, q, heads, d). `attention_mask` is ignored
    when a row cache is given (its padding mask is the truth)."""
    if row_cache is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)  # fmt: skip
    b, heads, q, d = query.shape
    kvh = key.shape[1]
    g = heads // kvh
    # Query heads of one kv head are consecutive (transformers' repeat_kv), so (b, kvh, g*q, d)
    # pairs every query with its kv head; row-major over (g, q).
    grouped = query.reshape(b, kvh, g * q, d)
    oa, la = _prefix_part(grouped, row_cache, module.layer_idx, scaling)
    # Own part: the row's suffix and answer so far. One row's prefill is causal over its own
    # fresh keys (then stored); a decode step is one query per row over its length bucket's
    # padded buffer, which the row cache writes the new keys into first.
    if row_cache.prefilling:
        row_cache.store_row(module.layer_idx, key, value)
        per_group = query.reshape(b * kvh, g, q, d).transpose(0, 1)  # (g, b*kvh, q, d)
        kk = key.reshape(1, b * kvh, q, d).expand(g, -1, -1, -1)
        vv = value.reshape(1, b * kvh, q, d).expand(g, -1, -1, -1)
        ob, lb = _flash(per_group, kk, vv, None, scaling, causal=True)
        ob = ob.transpose(0, 1).reshape(b, kvh, g * q, d)
        lb = lb.transpose(0, 1).reshape(b, kvh, g * q)
    else:
        ob = torch.empty_like(grouped)
        lb = torch.empty((b, kvh, g * q), dtype=torch.float32, device=query.device)
        for start, end, own_k, own_v, mask in row_cache.step_parts(module.layer_idx, key, value):
            o, lse = _flash(grouped[start:end], own_k, own_v, mask.expand(end - start, 1, g, -1),
                            scaling)  # fmt: skip
            ob[start:end] = o
            lb[start:end] = lse
    return merge(oa, la, ob, lb, query.dtype, heads, q)


def _prefix_part(grouped: torch.Tensor, rows: RowCache, layer: int, scaling: float | None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Every row's queries against its family's prefix: per family, its rows' queries as one
    sequence of n*g*q queries per kv head (the prefix is read once, whatever n)."""
    b, kvh, gq, d = grouped.shape
    groups = rows.prefix_groups()
    oa = grouped.new_empty((b, kvh, gq, d))
    la = torch.empty((b, kvh, gq), dtype=torch.float32, device=grouped.device)
    for prefix, members in groups:
        part = grouped if members is None else grouped.index_select(0, members)
        n = part.shape[0]
        pk, pv = prefix.layers[layer]
        o, lse = _flash(part.transpose(0, 1).reshape(1, kvh, n * gq, d), pk, pv, None, scaling)
        o = o.reshape(kvh, n, gq, d).transpose(0, 1)
        lse = lse.reshape(kvh, n, gq).transpose(0, 1)
        if members is None:
            return o, lse
        oa.index_copy_(0, members, o)
        la.index_copy_(0, members, lse)
    return oa, la


def merge(oa: torch.Tensor, la: torch.Tensor, ob: torch.Tensor, lb: torch.Tensor,
          dtype: torch.dtype, heads: int, q: int) -> tuple[torch.Tensor, None]:
    """Two partial attentions over disjoint keys, each weighted by its share of the softmax
    mass; (b, kv_heads, g*q, d) parts in, transformers' (b, q, heads, d) out."""
    b, _, _, d = oa.shape
    total = torch.logaddexp(la, lb)
    out = (oa.float() * (la - total).exp().unsqueeze(-1)
           + ob.float() * (lb - total).exp().unsqueeze(-1))  # fmt: skip
    out = out.to(dtype).reshape(b, heads, q, d)
    return out.transpose(1, 2).contiguous(), None
