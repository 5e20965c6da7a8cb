"""Free-text generation with vLLM: every conversation in one `LLM.chat` call, greedy, seeded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.types import Messages
from nexagauge_local.judge.vllm_backend import import_vllm, pin_engine_devices
from nexagauge_local.judge.weights import engine_model_path
from nexagauge_local.target.types import Response


class VLLMResponder:
    name = "vllm"

    def __init__(
        self,
        profile: JudgeProfile,
        *,
        cache_dir: Path,
        dtype: str,
        device_ids: Sequence[str] = ("0",),
        seed: int = 0,
    ) -> None:
        pin_engine_devices(device_ids)
        self._vllm = import_vllm()
        self.model = profile.name
        self.gpus = len(device_ids)
        self.seed = seed
        started = time.perf_counter()
        self._llm = self._vllm.LLM(
            model=engine_model_path(profile, Path(cache_dir)),
            dtype=dtype,
            max_model_len=profile.max_model_len,
            seed=seed,
            tensor_parallel_size=self.gpus,
            enable_prefix_caching=True,
        )
        self.load_seconds = time.perf_counter() - started

    def respond(self, conversations: Sequence[Messages], max_tokens: int) -> list[Response]:
        params = self._vllm.SamplingParams(temperature=0.0, seed=self.seed, max_tokens=max_tokens)
        started = time.perf_counter()
        outputs = self._llm.chat(list(conversations), params, use_tqdm=False)
        share = (time.perf_counter() - started) * self.gpus / max(len(conversations), 1)
        return [
            Response(
                text=o.outputs[0].text.strip(),
                prompt_tokens=len(o.prompt_token_ids or []),
                output_tokens=len(o.outputs[0].token_ids),
                finished=o.outputs[0].finish_reason != "length",
                device_seconds=share,
            )
            for o in outputs
        ]

    def close(self) -> None:
        return None
