"""bf16 embeddings: only where the CPU computes bf16 natively, and close to float32."""

from __future__ import annotations

import numpy as np

from nexagauge_local.embed import Embedder, cpu_has_native_bf16, resolve_embed_dtype

ZEN4 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
OLD = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n"


def test_auto_picks_bf16_only_with_native_support_or_cuda() -> None:
    assert cpu_has_native_bf16(ZEN4) and not cpu_has_native_bf16(OLD)
    assert resolve_embed_dtype("auto", "cpu", True) == "bfloat16"
    assert resolve_embed_dtype("auto", "cpu", False) == "float32"
    assert resolve_embed_dtype("auto", "cuda", False) == "bfloat16"
    assert resolve_embed_dtype("float32", "cpu", True) == "float32"


def test_bf16_vectors_are_unit_and_within_a_few_thousandths_of_fp32() -> None:
    texts = [
        "The committee approved the annual budget after a long review.",
        "A new study measured higher water levels in the northern region.",
        "Paris is the capital of France.",
        "I can't help with that request.",
    ]
    a = Embedder(dtype="float32").encode(texts)
    b = Embedder(dtype="bfloat16").encode(texts)
    assert b.dtype == np.float32
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert float((a * b).sum(axis=1).min()) > 0.99


def test_judge_auto_dtype_follows_the_same_rule() -> None:
    """The judge's `auto` (the demo profile's): bf16 where the CPU has it natively, 2x faster
    and 0.3 GB smaller for the demo judge; float32 where bf16 would be emulated."""
    from nexagauge_local.judge.runtime import resolve_dtype

    assert resolve_dtype("auto", "cpu", native_bf16=True) == "bfloat16"
    assert resolve_dtype("auto", "cpu", native_bf16=False) == "float32"
    assert resolve_dtype("auto", "cuda:0", native_bf16=False) == "bfloat16"
    assert resolve_dtype("float32", "cpu", native_bf16=True) == "float32"
    assert resolve_dtype("auto", "cpu") == ("bfloat16" if cpu_has_native_bf16() else "float32")
