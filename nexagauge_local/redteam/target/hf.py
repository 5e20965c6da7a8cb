"""Free-text generation with transformers, batched, greedy: the CPU/CUDA path for `generate`.

`model.generate` is the right tool here (unlike the judge, nothing is constrained and we need no
per-token logprobs); we only add left padding, length-sorted micro-batches so little compute is
spent on padding, and exact token accounting from the returned ids.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from nexagauge_local.judge import JudgeProfile, Messages
from nexagauge_local.judge.runtime import (
    eos_token_ids,
    load_model,
    prompt_ids,
)
from nexagauge_local.redteam.target.types import Response


def micro_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar prompt length (longest first), each at most
    `batch_size` long."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class HFResponder:
    name = "hf"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        cache_dir: Path,
        device: str,
        dtype: str,
        batch_size: int | None = None,
    ) -> None:
        """`device` and `dtype` as the run decided them (redteam/target/factory.py)."""
        self.device = device
        self.gpu_count = 1 if self.device.startswith("cuda") else 0
        self.model = profile.name
        self.batch_size = batch_size or (64 if self.gpu_count else 8)
        started = time.perf_counter()
        self._model, self.tokenizer = load_model(profile, cache_dir, dtype, self.device)
        self.load_seconds = time.perf_counter() - started
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._eos = eos_token_ids(self._model, self.tokenizer)

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]:
        ids = [prompt_ids(self.tokenizer, conv) for conv in conversations]
        out: list[Response | None] = [None] * len(ids)
        for batch in micro_batches([len(x) for x in ids], self.batch_size):
            for i, resp in zip(batch, self._run([ids[i] for i in batch], max_tokens)):
                out[i] = resp
        return [r for r in out if r is not None]

    def _run(self, rows: list[list[int]], max_tokens: int) -> list[Response]:
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(r) for r in rows)
        input_ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows], device=self.device)
        mask = torch.tensor(
            [[0] * (width - len(r)) + [1] * len(r) for r in rows], device=self.device
        )
        started = time.perf_counter()
        with torch.inference_mode():
            gen = self._model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                max_new_tokens=max_tokens,
                do_sample=False,
                pad_token_id=pad,
            )
        wall = time.perf_counter() - started
        results = []
        for row, prompt in zip(gen[:, width:].tolist(), rows):
            cut = next((k for k, t in enumerate(row) if t in self._eos), None)
            tokens = row if cut is None else row[:cut]
            results.append(
                Response(
                    text=self.tokenizer.decode(tokens, skip_special_tokens=True).strip(),
                    prompt_tokens=len(prompt),
                    output_tokens=len(tokens) + (0 if cut is None else 1),
                    finished=cut is not None,
                    device_seconds=wall * max(self.gpu_count, 1) / len(rows),
                )
            )
        return results

    def close(self) -> None:
        return None
