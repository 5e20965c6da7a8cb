"""Grouped-query attention for models run by transformers here (the hf judge backend, the hf
responder), through transformers' public AttentionInterface.

Why: transformers' own "sdpa" copies every key/value head once per query head (`repeat_kv`)
whenever an attention mask is given, and batched `generate` always gives one (left-padded
rows). On a CPU that copy of the whole KV cache at every step cost about a
third of a judgement's time with the demo judge (3 KV heads for 9 query heads). torch's own
SDPA takes the grouped heads as they are (`enable_gqa`), with the same kernels and results.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import sdpa_mask

NAME = "sdpa_grouped"


def sdpa_grouped(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' "sdpa" contract (B, H, Q, D) in, (B, Q, H, D) out; no head copies."""
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=bool(causal and attention_mask is None and query.shape[2] > 1),
        enable_gqa=key.shape[1] != query.shape[1])  # fmt: skip
    return out.transpose(1, 2).contiguous(), None


# Registered once, when the first model load imports this module (transformers' documented way
# to add an attention function); every model of the process may then be switched to it.
AttentionInterface.register(NAME, sdpa_grouped)
AttentionMaskInterface.register(NAME, sdpa_mask)


def use_grouped_attention(model: Any) -> None:
    """Switches a loaded model to `sdpa_grouped` (sdpa's masks). A model whose attention
    caps its logits (Gemma 2's softcapping, which SDPA has no room for) keeps its own."""
    if not getattr(model.config, "attn_logit_softcapping", None):
        model.set_attn_implementation(NAME)
