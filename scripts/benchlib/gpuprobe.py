"""Measure the two rates the compute floor needs: bf16 matmul FLOP/s and memory bandwidth.

Why measured and not the datasheet: an H100's 989 TFLOP/s dense bf16 is a peak no library
reaches (an H100 measured 798 on an 8192^3 product), and the floor is meant to be
what this GPU can actually do. Timed with CUDA events after warm-ups; on CPU (tests) with
perf_counter, which exercises the same arithmetic.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel


class Rates(BaseModel):
    device: str
    matmul_flops: float
    hbm_bytes_s: float
    matmul_n: int
    copy_bytes: int


def _timed(fn: Any, iters: int, device: str) -> float:
    import torch

    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1000.0
    started = time.perf_counter()
    for _ in range(iters):
        fn()
    return time.perf_counter() - started


def measure_rates(
    device: str = "cuda", n: int = 8192, copy_mib: int = 2048, iters: int = 10, warmup: int = 3
) -> Rates:
    """n x n x n bf16 matmul FLOP/s (2 n^3 per product) and copy bandwidth (bytes read +
    written per second, as GPU memory bandwidth is usually quoted)."""
    import torch

    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    c = torch.empty(n, n, dtype=torch.bfloat16, device=device)

    def matmul() -> None:
        torch.matmul(a, b, out=c)

    src = torch.empty(copy_mib * 1024 * 1024, dtype=torch.uint8, device=device)
    src.fill_(1)
    dst = torch.empty_like(src)

    def copy() -> None:
        dst.copy_(src)

    for _ in range(warmup):
        matmul()
        copy()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    mm_s = _timed(matmul, iters, device)
    cp_s = _timed(copy, iters, device)
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    return Rates(
        device=name,
        matmul_flops=2.0 * n**3 * iters / mm_s,
        hbm_bytes_s=2.0 * src.numel() * iters / cp_s,
        matmul_n=n,
        copy_bytes=src.numel(),
    )
