"""String caps inside vLLM: a logits processor of its V1 model runner (string_bounds = "clip").

Why: with each string's maxLength in the grammar, xgrammar compiles a counted repetition whose
masks cost 80-200 us per token (the grammar, not the GPU, then sets an 8B judge's pace); without
it nothing ends a small judge's strings. This processor keeps the bound beside the grammar, as
the hf backend does, with the same tracker (judge/string_caps.py). In a V1 step the grammar
bitmask is applied first, then logit_bias, then custom processors, then greedy argmax: a row at
its bound keeps only the closing tokens the grammar already allows, and a row where the grammar
allows none is left alone.

Loaded by module path (`LLM(logits_processors=[PROCESSOR_FQCN])`), so engine cores and
data-parallel workers in their own processes import it themselves; a request opts in through
`SamplingParams.extra_args` (vllm/cap_rows.py). The masking is one batched gather/where/scatter
over the rows at a bound, with their indices copied to the device without waiting on it: no
host synchronisation beyond what vLLM itself does to hand processors the output ids.

vLLM's V2 model runner (the GPU default from vLLM 0.32) has another processor interface and
refuses V1 classes: an engine with caps runs the V1 runner (vllm/host.py sets
VLLM_USE_V2_MODEL_RUNNER=0; vLLM 0.26 picks V1 by itself when processors are given).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.sample.logits_processor import (
    BatchUpdate,
    LogitsProcessor,
    MoveDirectionality,
)

from nexagauge_local.judge.string_caps import close_strings_, closing_tokens, token_texts
from nexagauge_local.judge.vllm.cap_rows import CapRows, caps_limits

if TYPE_CHECKING:
    from vllm.config import VllmConfig


class StringCapsProcessor(LogitsProcessor):
    """Closes a value string once it has as many characters as its field allows."""

    def __init__(self, vllm_config: VllmConfig, device: torch.device,
                 is_pin_memory: bool) -> None:
        model_config = vllm_config.model_config
        self._tokenizer = model_config.tokenizer
        self._trust_remote_code = bool(getattr(model_config, "trust_remote_code", False))
        self._device = torch.device(device)
        self._pin = is_pin_memory
        self._rows = CapRows()
        self._texts: list[str] | None = None
        self._closing: torch.Tensor | None = None

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        caps_limits(getattr(sampling_params, "extra_args", None))

    def is_argmax_invariant(self) -> bool:
        return False  # it changes which token greedy decoding picks

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if not batch_update:
            return
        added = [(a[0], caps_limits(a[1].extra_args), a[-1]) for a in batch_update.added]
        moved = [(a, b, d == MoveDirectionality.SWAP) for a, b, d in batch_update.moved]
        self._rows.update(batch_update.removed, added, moved)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not len(self._rows):
            return logits
        texts, closing = self._vocabulary(logits.shape[1])
        rows = self._rows.at_bound(texts)
        if rows:
            close_strings_(logits, self._on_device(rows), closing)
        return logits

    def _vocabulary(self, vocab: int) -> tuple[list[str], torch.Tensor]:
        """Each token's text and the closing-token mask, made when the first capped request
        arrives (an engine that never gets one never loads them)."""
        if self._texts is None or self._closing is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(
                self._tokenizer, trust_remote_code=self._trust_remote_code)
            self._texts = token_texts(tokenizer, vocab)
            self._closing = closing_tokens(self._texts).to(self._device)  # `vocab` long
        return self._texts, self._closing

    def _on_device(self, rows: list[int]) -> torch.Tensor:
        host = torch.tensor(rows, dtype=torch.long)
        if self._device.type == "cpu":
            return host
        if self._pin:
            host = host.pin_memory()
        return host.to(self._device, non_blocking=True)
